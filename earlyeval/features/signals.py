"""Parsers for what observations and actions say, shared by the feature families.

Pure functions of one step's text; each search is guarded by literals so that the live Monitor skips the ones
that cannot match (values unchanged). Details: docs/architecture.md, "Feature families".
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Iterator

from earlyeval.core.trajectory import KINDS, Step

# ---------------------------------------------------------------- test runs


@dataclass(frozen=True)
class TestSummary:
    passed: int
    failed: int  # failures + errors
    total: int

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.total > 0


_PYTEST_COUNTS = re.compile(r"(\d+)\s+(passed|failed|errors?|skipped|xfailed|xpassed|deselected)\b")
_PYTEST_LINE = re.compile(
    r"^[=\s]*(?:\d+\s+(?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?),?\s*)+(?:in\s+[\d.]+\s*s)",
    re.M,
)
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s", re.M)
_UNITTEST_FAILED = re.compile(r"^FAILED \(([^)]*)\)", re.M)
_UNITTEST_OK = re.compile(r"^OK\b", re.M)
_SYMPY = re.compile(
    r"tests finished:\s*(\d+)\s+passed(?:,\s*(\d+)\s+failed)?(?:,\s*(\d+)\s+(?:exceptions?|errors?))?",
    re.I,
)
# Moatless Tools 0.0.4 runs the related tests after each edit and ends the observation with this line
_MOATLESS = re.compile(r"^(\d+) passed\. (\d+) failed\. (\d+) errors\.[ \t]*$", re.M)


def _isearch(rx: re.Pattern, text: str, needles: tuple[str, ...]) -> re.Match | None:
    """``rx.search(text)`` for a case-insensitive ``rx``, skipped when an ASCII text
    contains none of the lower-case literals that every match of ``rx`` contains."""
    if text.isascii():
        low = text.lower()
        if not any(n in low for n in needles):
            return None
    return rx.search(text)


# every pytest summary line holds one of these words (xfailed/xpassed/errors/warnings included)
_PYTEST_WORDS = ("passed", "failed", "error", "skipped", "deselected", "warning")


def parse_test_summary(text: str) -> TestSummary | None:
    """The last pytest / unittest / Django / sympy / Moatless test summary in an observation."""
    if not text:
        return None
    found: TestSummary | None = None
    lines = list(_PYTEST_LINE.finditer(text)) if any(w in text for w in _PYTEST_WORDS) else []
    if lines:
        counts = dict.fromkeys(("passed", "failed", "error"), 0)
        for n, what in _PYTEST_COUNTS.findall(lines[-1].group(0)):
            key = "error" if what.startswith("error") else what
            if key in counts:
                counts[key] += int(n)
        found = TestSummary(
            counts["passed"],
            counts["failed"] + counts["error"],
            counts["passed"] + counts["failed"] + counts["error"],
        )
    ran = list(_UNITTEST_RAN.finditer(text)) if "Ran " in text else []
    if ran:
        total = int(ran[-1].group(1))
        tail = text[ran[-1].end() :]
        m = _UNITTEST_FAILED.search(tail)
        if m:
            bad = sum(int(x) for x in re.findall(r"(?:failures|errors)=(\d+)", m.group(1)))
            found = TestSummary(max(total - bad, 0), bad, total)
        elif _UNITTEST_OK.search(tail):
            found = TestSummary(total, 0, total)
    m = _isearch(_SYMPY, text, ("tests finished:",))
    if m:
        p, f, e = (int(x) if x else 0 for x in m.groups())
        found = TestSummary(p, f + e, p + f + e)
    ms = list(_MOATLESS.finditer(text)) if "passed. " in text else []
    if ms:  # the scaffold's own count over every test it ran: it wins over the runner output quoted above it
        p, f, e = (int(x) for x in ms[-1].groups())
        found = TestSummary(p, f + e, p + f + e)
    return found


_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
_SYNTAX = re.compile(r"\b(SyntaxError|IndentationError|TabError)\b")
_SYNTAX_WORDS = ("SyntaxError", "IndentationError", "TabError")
_ERROR_LINE = re.compile(r"^\s*\w*(Error|Exception)\b.*$", re.M)
_NOT_FOUND = re.compile(
    r"command not found|No such file or directory|cannot open|does not exist", re.I
)
_NOT_FOUND_NEEDLES = (
    "command not found",
    "no such file or directory",
    "cannot open",
    "does not exist",
)


def has_traceback(text: str) -> bool:
    return bool(text) and _TRACEBACK.search(text) is not None


def has_syntax_error(text: str) -> bool:
    return bool(text) and any(w in text for w in _SYNTAX_WORDS) and _SYNTAX.search(text) is not None


def last_error_line(text: str) -> str:
    """The last ``XxxError: ...`` line: two steps with the same one repeat the same error."""
    if not text:
        return ""
    tail = text[-4000:]
    if "Error" not in tail and "Exception" not in tail:
        return ""
    m = None
    for m in _ERROR_LINE.finditer(tail):
        pass
    return m.group(0).strip()[:200] if m else ""


def has_not_found(text: str) -> bool:
    return bool(text) and _isearch(_NOT_FOUND, text, _NOT_FOUND_NEEDLES) is not None


# ------------------------------------------------------------- file paths

_EXT = r"\.(?:py|pyi|pyx|pxd|c|cc|cpp|h|hpp|cfg|ini|toml|txt|rst|md|js|ts|json|ya?ml|html|css|sh|in)(?![\w/])"
# a path may be absolute or start with ./ or ../ (the match starts at the run start)
_PATH = re.compile(r"(?<![\w/.-])(/?(?:\.{1,2}/)*(?:[\w.-]+/)*[\w-][\w.-]*" + _EXT + ")")
# _PATH.finditer, fast: a match starts where a run of [\w/.-] characters starts (the
# look-behind) and ends with an extension; so only the runs holding an extension
# (found by the cheap, literal-led _PATH_END) are tried, each once, from its start.
_PATH_END = re.compile(_EXT)
_PATH_RUN = re.compile(r"[\w/.-]*")
_PREFIXES = re.compile(r"^(?:\.\.?/|/?testbed/|/?workspace/[^/]+/|/?repo/|/?app/|a/|b/)+")
_LEAD_SLASH = re.compile(r"^/+")
_WORKSPACE_DIR = re.compile(r"^(?:[\w.-]+__[\w.-]+__[\d.]+/)")


def normalize_path(p: str) -> str:
    p = p.strip().strip("'\"`")
    p = _LEAD_SLASH.sub("", p)
    # /workspace/django__django__3.0/django/x.py -> django/x.py ; /testbed/x.py -> x.py
    p = _PREFIXES.sub("", p)
    p = _WORKSPACE_DIR.sub("", p)
    return p


def _run_start(text: str, end: int, lo: int) -> int:
    """Start (not before ``lo``) of the run of path characters that ends at ``end``."""
    w = 64
    while True:
        a = max(lo, end - w)
        seg = text[a:end][::-1]
        k = _PATH_RUN.match(seg).end()
        if k < len(seg) or a == lo:
            return end - k
        w *= 4


def iter_path_matches(text: str) -> Iterator[re.Match]:
    """The matches of ``_PATH.finditer(text)``, in order, about 5x faster on long texts."""
    pos = 0  # no match can start before pos (finditer's matches do not overlap)
    for c in _PATH_END.finditer(text):
        d = c.start()
        if d < pos:
            continue
        m = _PATH.match(text, _run_start(text, d, pos))
        if m:
            yield m
            pos = m.end()
        else:  # no other position of this run can start a match (the look-behind)
            pos = _PATH_RUN.match(text, d).end()


def paths_in(text: str, limit: int = 64) -> list[str]:
    """File paths mentioned in a text, normalized, in order, without repeats."""
    if not text:
        return []
    out: list[str] = []
    seen: set[str] = set()
    for m in iter_path_matches(text):
        p = normalize_path(m.group(1))
        if p and p not in seen:
            seen.add(p)
            out.append(p)
            if len(out) >= limit:
                break
    return out


def path_matches(agent_path: str, gold_path: str) -> bool:
    """Same file: equal, or one is a path-component suffix of the other."""
    if agent_path == gold_path:
        return True
    if "/" not in agent_path:
        return False  # a bare file name is too ambiguous to count
    return gold_path.endswith("/" + agent_path) or agent_path.endswith("/" + gold_path)


_EDIT_TARGET = re.compile(
    r"(?:sed\s+-i[^\n]*?\s|>\s*|>>\s*|tee\s+(?:-a\s+)?|(?:str_replace|create|insert|write|undo_edit)\s+|"
    r"(?:file_path|path)[\"']?\s*[:=]\s*[\"']?|^edit\s+\S+\s+|patch\s+)([\w./-]+\.\w+)",
    re.M,
)


def written_files(action_text: str) -> list[str]:
    """Files an action explicitly writes (a redirect, ``tee``, ``sed -i``, an editor's create/str_replace...): unlike
    ``edit_targets``, no fallback to every path the text names."""
    return [normalize_path(m.group(1)) for m in _EDIT_TARGET.finditer(action_text or "")]


_EXIT_CODE = re.compile(
    r"(?:<returncode>\s*|exit[ _]?code[:=]?\s*|exited with code\s+|exit status\s+)(-?\d+)", re.I
)


def nonzero_exit(text: str) -> bool:
    """The observation reports a command's non-zero exit code (mini-swe-agent's ``<returncode>``, OpenHands'
    "exit code", a script's own ``exit_code:``): the last one reported decides."""
    if not text:
        return False
    low = text[-4000:].lower()
    if "code" not in low and "exit" not in low:
        return False
    codes = _EXIT_CODE.findall(text[-4000:])
    return bool(codes) and codes[-1] not in ("0", "-0")


def edit_targets(action_text: str) -> list[str]:
    """Files an edit action writes to (best effort across formats)."""
    return list(_edit_targets(action_text or ""))


@functools.lru_cache(maxsize=64)
def _edit_targets(action_text: str) -> tuple[str, ...]:
    # memoized: the behaviour and gold families both ask about the same edit action, and the
    # regex scan of a long one (a file written with a heredoc) is the slowest part of a step
    found = [normalize_path(m.group(1)) for m in _EDIT_TARGET.finditer(action_text)]
    if not found:
        found = paths_in(action_text, limit=4)
    out: list[str] = []
    for p in found:
        if p not in out and not p.startswith("dev/null"):
            out.append(p)
    return tuple(out)


_REPRO = re.compile(r"reproduc|repro[_.\s]|\brepro\b|bug_demo|test_issue|issue\.py", re.I)


def is_reproduction(text: str) -> bool:
    return (
        bool(text)
        and _isearch(_REPRO, text, ("repro", "bug_demo", "test_issue", "issue.py")) is not None
    )


_REVERT = re.compile(r"\bgit\s+(checkout|restore|stash)\b|\bundo_edit\b")


def is_revert(text: str) -> bool:
    return bool(text) and _REVERT.search(text) is not None


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_COMMON = frozenset(
    "self cls def return None True False import from class pass else elif while for with not and the this that is in if to of a an or as "
    "print raise try except finally lambda yield assert del global nonlocal int str list dict set tuple len range".split()
)


def identifiers(text: str) -> set[str]:
    """Code identifiers in a text, minus keywords and very common words."""
    return {w for w in _IDENT.findall(text or "") if w not in _COMMON}


def step_kinds(step: Step) -> tuple[str, set[str]]:
    """The step's kind (unknown ones read as "other") and every kind it did, its actions' included: how the
    behaviour, pass and phase families count edits and tests, so they cannot count them differently."""
    kind = step.kind if step.kind in KINDS else "other"
    return kind, {a.kind for a in step.actions} | {kind}
