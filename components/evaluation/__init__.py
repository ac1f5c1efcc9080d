"""Evaluation (never imported on the query path): metrics, failure taxonomy, threshold calibration, risk-coverage, reports, and the --eval / --calibrate runners."""
