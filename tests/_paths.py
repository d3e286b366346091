"""Where the repository, the tests and the hand-written fixtures are, from any test at any depth."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
