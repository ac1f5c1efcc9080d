"""spanqa benchmarks: scripts run side by side with their peers (see README in docs/performance.md)."""
