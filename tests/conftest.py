"""Test setup: offline, no telemetry, the repository root importable."""

import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "false"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

# markers by where a test lives (registered in pyproject.toml, --strict-markers): `make check` leaves these out
_MARKERS = {
    "tests/serving/": "slow",       # a real server process per session
    "tests/stores/": "postgres",    # a real PostgreSQL (pgserver)
    "tests/training/": "training",  # the training recipe on a tiny slice
}
_BROWSER = ("test_page_browser.py", "test_a_page_on_another_loopback_origin_cannot_drive_the_server",
            "test_the_page_asks_for_the_key_and_keeps_it_for_the_tab")


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath)).resolve().relative_to(ROOT).as_posix()
        for prefix, marker in _MARKERS.items():
            if path.startswith(prefix):
                item.add_marker(getattr(pytest.mark, marker))
        if any(b in item.nodeid for b in _BROWSER):
            item.add_marker(pytest.mark.browser)
