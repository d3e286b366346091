"""`make help` names every target of the Makefile: each .PHONY target and each plain rule (not a file rule
such as ``$(STAMP)`` or ``data/$(BENCH)/ingest.done``), read from the Makefile itself."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from _paths import REPO

MAKEFILE = REPO / "Makefile"


def makefile_targets() -> tuple[set[str], set[str]]:
    """(the .PHONY targets, the plain rule targets) of the Makefile."""
    text = MAKEFILE.read_text()
    phony = {t for line in re.findall(r"^\.PHONY:(.*)$", text, re.M) for t in line.split()}
    rules = set()
    for m in re.finditer(r"^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:(?![:=])", text, re.M):
        rules.update(t for t in m.group(1).split() if not t.startswith("."))
    return phony, rules


def test_the_parser_reads_this_makefile():
    phony, rules = makefile_targets()
    assert {"help", "train", "test", "report", "score"} <= phony and {
        "help",
        "train",
        "install",
    } <= rules
    # file rules ($(STAMP), data/$(BENCH)/ingest.done) are not listed
    assert not any("$" in t or "/" in t for t in rules)
    assert phony <= rules, f"phony targets without a rule: {sorted(phony - rules)}"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_help_names_every_target():
    out = subprocess.run(
        ["make", "-s", "-C", str(REPO), "help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    listed = set(re.findall(r"^\s*make ([A-Za-z0-9_.-]+)\s", out.stdout, re.M))
    phony, rules = makefile_targets()
    assert not (phony | rules) - listed, (
        f"make help does not name: {sorted((phony | rules) - listed)}"
    )
    assert all(len(line.split(None, 2)) == 3 for line in out.stdout.splitlines()[1:]), (
        "a target without its description"
    )
