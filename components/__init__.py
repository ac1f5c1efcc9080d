"""spanqa: span-faithful retrieve-and-read components for Haystack 3 pipelines written in YAML.

Haystack sends telemetry unless HAYSTACK_TELEMETRY_ENABLED says otherwise. spanqa turns it off unless
the user opted in by setting that variable themselves: before Haystack is imported we set the default,
and if Haystack was imported first (a user's own app) we switch its already-created client off.
"""

import os
import sys

if "HAYSTACK_TELEMETRY_ENABLED" not in os.environ:
    os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "false"
    _telemetry = sys.modules.get("haystack.telemetry._telemetry")
    if _telemetry is not None:
        _telemetry.telemetry = None
