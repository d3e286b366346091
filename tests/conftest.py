"""Shared set-up for every test, at any depth of tests/.

The helper modules (synth, _monitor_helpers, _integration_fakes, the stand-ins, faults, _paths) live in
tests/ itself; putting tests/ on sys.path here lets a test in tests/<layer>/ import them whatever the
working directory and whichever file is run alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))
