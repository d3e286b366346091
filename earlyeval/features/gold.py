"""Reference-solution features: how far the agent has converged to the gold patch.

Only for tasks that carry a gold patch (else NaN); the patch is compared with what the agent did, never shown as
its own, and the matching is format-independent. Details: docs/architecture.md, "Feature families".
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from earlyeval.core.trajectory import Step
from earlyeval.features.base import RunContext, StatelessFamily
from earlyeval.features.signals import (
    edit_targets,
    identifiers,
    normalize_path,
    parse_test_summary,
    path_matches,
    paths_in,
)

NAN = float("nan")
_MIN_LINE = 8  # shorter lines ("return x", "}") match by accident


_SPACES = re.compile(r"\s+")


def _norm_line(s: str) -> str:
    return _SPACES.sub(" ", s.strip())


@dataclass
class GoldPatch:
    files: list[str]
    hunks: dict[str, list[tuple[int, int]]]
    added_lines: set[str]
    removed_lines: set[str]
    added_idents: set[str]
    symbols: set[str]
    test_files: list[str]
    f2p_names: set[str]
    n_hunks: int
    n_added: int
    n_removed: int

    @classmethod
    def parse(
        cls, gold: str, test_patch: str | None, fail_to_pass: list[str] | None
    ) -> "GoldPatch":
        files, hunks, added, removed, idents, symbols = [], {}, set(), set(), set(), set()
        n_h = n_a = n_r = 0
        for pf in _patchset(gold):
            path = normalize_path(pf.path)
            files.append(path)
            hunks[path] = []
            for h in pf:
                n_h += 1
                hunks[path].append((h.source_start, h.source_start + max(h.source_length, 1) - 1))
                for m in re.finditer(r"(?:def|class)\s+([A-Za-z_]\w*)", h.section_header or ""):
                    symbols.add(m.group(1))
                for line in h:
                    text = line.value.rstrip("\n")
                    if line.is_added:
                        n_a += 1
                        if len(text.strip()) >= _MIN_LINE:
                            added.add(_norm_line(text))
                        idents |= identifiers(text)
                        for m in re.finditer(r"(?:def|class)\s+([A-Za-z_]\w*)", text):
                            symbols.add(m.group(1))
                    elif line.is_removed:
                        n_r += 1
                        if len(text.strip()) >= _MIN_LINE:
                            removed.add(_norm_line(text))
        test_files = [normalize_path(pf.path) for pf in _patchset(test_patch or "")]
        f2p = set()
        for name in fail_to_pass or []:
            # "tests/x.py::TestA::test_b", "test_b (module.Class)", "test_b"
            base = re.split(r"[\s(\[]", name.split("::")[-1])[0]
            if len(base) >= 4:
                f2p.add(base)
        return cls(files, hunks, added, removed, idents, symbols, test_files, f2p, n_h, n_a, n_r)


@functools.lru_cache(maxsize=256)
def _parsed(gold: str, test_patch: str | None, fail_to_pass: tuple[str, ...] | None) -> GoldPatch:
    """A parsed patch, keyed by the texts themselves (read-only: no run state writes into it)."""
    return GoldPatch.parse(
        gold, test_patch, list(fail_to_pass) if fail_to_pass is not None else None
    )


def _patchset(text: str) -> list:
    if not text or not text.strip():
        return []
    try:
        return list(PatchSet(text))
    except (UnidiffParseError, ValueError):
        return []


class GoldState:
    __slots__ = (
        "gold",
        "t",
        "mentioned",
        "surfaced",
        "edited",
        "edited_other",
        "symbols_mentioned",
        "symbols_edited",
        "edit_idents",
        "edit_idents_all",
        "n_idents_union",
        "removed_hit",
        "added_hit",
        "first_gold_edit",
        "f2p_run",
        "test_file_seen",
        "diff_files",
        "diff_added_hit",
        "diff_seen",
        "hunk_hit",
        "last_edit",
        "last_gold_edit",
        "f2p_verdict",
        "f2p_verdict_at",
    )

    def __init__(self, gold: GoldPatch | None) -> None:
        self.gold = gold
        self.t = 0
        self.mentioned: set[str] = set()
        self.surfaced: set[str] = set()
        self.edited: set[str] = set()
        self.edited_other: set[str] = set()
        self.symbols_mentioned: set[str] = set()
        self.symbols_edited: set[str] = set()
        self.edit_idents: set[str] = set()
        self.edit_idents_all: set[str] = set()
        self.n_idents_union = (
            0  # len(gold.added_idents | edit_idents_all), kept as it grows (O(1) per step)
        )
        self.removed_hit: set[str] = set()
        self.added_hit: set[str] = set()
        self.first_gold_edit = -1
        self.f2p_run = -1
        self.test_file_seen = 0
        self.diff_files: float = NAN
        self.diff_added_hit: float = NAN
        self.diff_seen = -1
        self.hunk_hit: set[tuple[str, int]] = set()
        self.last_edit = -1  # step of the newest edit (any file)
        self.last_gold_edit = -1
        self.f2p_verdict: float = (
            NAN  # 1 passed / 0 failed: the newest parsed result of a FAIL_TO_PASS test run
        )
        self.f2p_verdict_at = -1


def _gold_files_in(paths: list[str], gold_files: list[str]) -> set[str]:
    return {g for g in gold_files for p in paths if path_matches(p, g)}


def _may_mention(text: str, files: list[str]) -> bool:
    """False when no path in ``text`` can match any of ``files``: a path that matches
    a file ends with its base name (``path_matches`` compares whole components), so
    a text that contains no base name needs no path scan.  A speed guard only."""
    return any(f.rsplit("/", 1)[-1] in text for f in files)


_LINE_EDIT = re.compile(
    r"(?:sed\s+-i[^'\"]*['\"](\d+)(?:,(\d+))?|^edit\s+(\d+):(\d+)|insert_line[\"']?\s*[:=]\s*(\d+)|view_range[^\d]*(\d+)\s*,\s*(\d+))",
    re.M,
)


def _gold_edit(s: GoldState, g: GoldPatch, text: str, t: int) -> None:
    """One edit action (of step ``t``): the gold files, identifiers, lines and hunks it touches, and the other files."""
    targets = edit_targets(text)
    hit = _gold_files_in(targets, g.files)
    s.last_edit = t
    if hit:
        s.last_gold_edit = t
    if hit and s.first_gold_edit < 0:
        s.first_gold_edit = t
    s.edited |= hit
    s.edited_other |= {p for p in targets if not any(path_matches(p, f) for f in g.files)}
    ids = identifiers(text)
    s.edit_idents |= ids & g.added_idents
    new = ids - s.edit_idents_all
    if new:
        s.n_idents_union += len(new - g.added_idents)  # |A u E| = |A| + |E \ A|, counted as E grows
        s.edit_idents_all |= new
    s.symbols_edited |= g.symbols & ids
    lines = {_norm_line(x) for x in text.splitlines() if len(x.strip()) >= _MIN_LINE}
    s.removed_hit |= lines & g.removed_lines
    s.added_hit |= lines & g.added_lines
    for m in _LINE_EDIT.finditer(text):
        nums = [int(x) for x in m.groups() if x]
        lo, hi = nums[0], nums[-1]
        for f in hit or set(g.files if len(g.files) == 1 else []):
            for i, (a0, a1) in enumerate(g.hunks.get(f, [])):
                if lo <= a1 + 3 and hi >= a0 - 3:
                    s.hunk_hit.add((f, i))


def _gold_diff(s: GoldState, g: GoldPatch, obs: str, t: int) -> None:
    """A ``git diff`` the agent printed (step ``t``): the share of gold files and gold added lines it holds."""
    patch = _patchset(obs[obs.index("diff --git") :])
    if patch:
        files = [normalize_path(pf.path) for pf in patch]
        s.diff_files = len(_gold_files_in(files, g.files)) / max(len(g.files), 1)
        added = {
            _norm_line(l.value)
            for pf in patch
            for h in pf
            for l in h
            if l.is_added and len(l.value.strip()) >= _MIN_LINE
        }
        s.diff_added_hit = len(added & g.added_lines) / len(g.added_lines) if g.added_lines else NAN
        s.diff_seen = t


class GoldFamily(StatelessFamily):
    name: ClassVar[str] = "gold"
    needs_task: ClassVar[bool] = True

    _names: ClassVar[list[str]] = [
        "gold_n_files",
        "gold_n_hunks",
        "gold_log_lines",
        "gold_files_mentioned",
        "gold_files_surfaced",
        "gold_files_edited",
        "edited_precision",
        "gold_symbols_mentioned",
        "gold_symbols_edited",
        "gold_idents_recall",
        "gold_idents_jaccard",
        "gold_removed_lines_touched",
        "gold_added_lines_written",
        "edits_in_gold_hunks",
        "since_first_gold_edit",
        "f2p_tests_run",
        "since_f2p_run",
        "test_patch_file_seen",
        "diff_gold_files",
        "diff_gold_added",
        "since_diff_seen",
        # trajectory evidence that settles an outcome without a public history (issue 14)
        "edits_off_gold_only",
        "since_last_gold_edit_rel",
        "f2p_passed_after_last_edit",
        "f2p_failed_after_last_edit",
    ]

    def check_context(self, ctx: RunContext) -> str | None:
        gp = ctx.task.gold_patch if ctx.task is not None else None
        if gp is not None and not isinstance(gp, str):
            return (
                f"the task's gold patch is {type(gp).__name__}, not text: refused, so the gold family's "
                f"{len(self.names)} features are NaN (decode it before start(), e.g. bytes.decode('utf-8'))"
            )
        if not gp:
            return f"the model uses the gold family but the task has no gold patch: its {len(self.names)} features are NaN"
        return None

    def _gold_of(self, ctx: RunContext) -> GoldPatch | None:
        """The run's own reference patch, parsed: from this run's context every time, never from an earlier
        run of the same task id (two runs of one id may have different patches).  Parsing is cached by
        content (``_parsed``), which gives the same answer for the same patch and cannot give another's."""
        task = ctx.task
        if task is None or not isinstance(task.gold_patch, str) or not task.gold_patch:
            return None
        test = task.test_patch if isinstance(task.test_patch, str) else None
        f2p = (
            tuple(x for x in task.fail_to_pass if isinstance(x, str))
            if isinstance(task.fail_to_pass, list)
            else None
        )
        return _parsed(task.gold_patch, test, f2p)

    def start(self, ctx: RunContext) -> GoldState:
        return GoldState(self._gold_of(ctx))

    def update(self, s: GoldState, step: Step) -> None:
        g = s.gold
        t = s.t
        s.t += 1
        if g is None:
            return
        act, obs = step.action or "", step.observation or ""
        # only gold files not yet found can change these sets: scan for those alone
        todo = [f for f in g.files if f not in s.mentioned]
        if todo and _may_mention(act, todo):
            s.mentioned |= _gold_files_in(paths_in(act), g.files)
        head = obs[:20000]
        todo = [f for f in g.files if f not in s.surfaced]
        if todo and _may_mention(head, todo):
            s.surfaced |= _gold_files_in(paths_in(head), g.files)
        act_ids = identifiers(act)
        s.symbols_mentioned |= g.symbols & act_ids
        for a in step.actions or []:
            if a.kind == "edit":
                _gold_edit(s, g, a.text, t)
            if a.kind == "test":
                f2p = bool(g.f2p_names) and any(n in a.text for n in g.f2p_names)
                if not f2p and _may_mention(a.text, g.test_files):
                    f2p = any(path_matches(p, tf) for p in paths_in(a.text) for tf in g.test_files)
                if f2p:
                    s.f2p_run = t
                    summ = parse_test_summary(obs)
                    if summ is not None:
                        s.f2p_verdict, s.f2p_verdict_at = float(summ.ok), t
        if (
            not s.test_file_seen
            and _may_mention(act, g.test_files)
            and any(path_matches(p, tf) for p in paths_in(act) for tf in g.test_files)
        ):
            s.test_file_seen = 1
        if "diff --git" in obs:
            _gold_diff(s, g, obs, t)

    def values(self, s: GoldState) -> np.ndarray:
        g = s.gold
        if g is None:
            return np.full(len(self._names), NAN)
        now = s.t - 1
        nf = max(len(g.files), 1)
        n_edited = len(s.edited) + len(s.edited_other)
        v = [
            float(len(g.files)),
            float(g.n_hunks),
            float(np.log1p(g.n_added + g.n_removed)),
            len(s.mentioned) / nf,
            len(s.surfaced) / nf,
            len(s.edited) / nf,
            len(s.edited) / n_edited if n_edited else NAN,
            len(s.symbols_mentioned) / len(g.symbols) if g.symbols else NAN,
            len(s.symbols_edited) / len(g.symbols) if g.symbols else NAN,
            len(s.edit_idents) / len(g.added_idents) if g.added_idents else NAN,
            len(s.edit_idents) / (len(g.added_idents) + s.n_idents_union)
            if (g.added_idents or s.edit_idents_all)
            else NAN,
            len(s.removed_hit) / len(g.removed_lines) if g.removed_lines else NAN,
            len(s.added_hit) / len(g.added_lines) if g.added_lines else NAN,
            len(s.hunk_hit) / max(g.n_hunks, 1),
            NAN if s.first_gold_edit < 0 else float(now - s.first_gold_edit),
            float(s.f2p_run >= 0),
            NAN if s.f2p_run < 0 else float(now - s.f2p_run),
            float(s.test_file_seen),
            s.diff_files,
            s.diff_added_hit,
            NAN if s.diff_seen < 0 else float(now - s.diff_seen),
            float(s.last_edit >= 0 and not s.edited),
            NAN if s.last_gold_edit < 0 else (now - s.last_gold_edit) / max(s.t, 1),
            float(s.f2p_verdict_at >= s.last_edit >= 0 and s.f2p_verdict == 1.0),
            float(s.f2p_verdict_at >= s.last_edit >= 0 and s.f2p_verdict == 0.0),
        ]
        return np.asarray(v, dtype=np.float64)
