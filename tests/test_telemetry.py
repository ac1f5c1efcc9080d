"""Haystack telemetry is off unless the user opted in, whether Haystack or spanqa is imported first."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _telemetry_after(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "HAYSTACK_TELEMETRY_ENABLED"}
    out = subprocess.run([sys.executable, "-c", code + "\nfrom haystack.telemetry import _telemetry\nprint(_telemetry.telemetry)"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def test_importing_components_first_keeps_telemetry_off():
    assert _telemetry_after("import components\nimport haystack") == "None"


def test_importing_haystack_first_then_components_switches_it_off():
    assert _telemetry_after("import haystack.telemetry\nimport components") == "None"
