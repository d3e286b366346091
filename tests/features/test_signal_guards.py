"""The speed-ups in features/signals.py, features/gold.py and features/text.py change no value.

Each guarded function is compared with the plain regex it guards, on crafted
texts (non-ASCII case folding included) and on random texts built from the
pieces the patterns look for.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from _bounds import assert_same_number
from _monitor_helpers import make_runs, make_tasks

from earlyeval.core.trajectory import Action, Trajectory, make_step
from earlyeval.features import Featurizer, RunContext
from earlyeval.features import gold as gold_mod
from earlyeval.features import signals as S
from earlyeval.features.gold import GoldFamily

PIECES = [
    "a",
    "b/",
    "pkg/mod.py",
    "../",
    "./",
    "/testbed/",
    "//",
    ".py",
    ".in",
    ".yml",
    "-",
    "/",
    ".",
    " ",
    "\n",
    "é",
    "İ",
    "ſ",
    "\u212a",
    "_",
    "x" * 70,
    "SyntaxError",
    "Error",
    "error",
    "Exception",
    "IndentationError:",
    "TabError",
    "ValueError: bad",
    "Traceback",
    "command not found",
    "NO SUCH FILE or directory",
    "cannot open",
    "does not exist",
    "DOES NOT EXİST",
    "doeſ not exiſt",
    "==== 3 passed, 1 failed in 0.5s ====",
    "5 passed in 1s",
    "2 errors",
    "warnings",
    "Ran 4 tests in 0.1s",
    "OK",
    "FAILED (failures=2)",
    "tests finished: 3 passed, 1 failed",
    "3 passed. 1 failed. 0 errors.",
    "0 passed. 0 failed. 2 errors.",
    "TESTS FINISHED: 2 passed",
    "teſts finiſhed: 2 passed",
    "repro",
    "REPRODUCE",
    "bug_demo",
    "test_issue",
    "issue.py",
    "reproduce_bug.py",
    "git checkout",
    "undo_edit",
    "git stash",
    "1",
    "12",
]


def _texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30))) for _ in range(n)]


def _plain_summary(text: str):
    """parse_test_summary without guards (the code before the speed-up)."""
    if not text:
        return None
    found = None
    lines = list(S._PYTEST_LINE.finditer(text))
    if lines:
        counts = dict.fromkeys(("passed", "failed", "error"), 0)
        for n, what in S._PYTEST_COUNTS.findall(lines[-1].group(0)):
            key = "error" if what.startswith("error") else what
            if key in counts:
                counts[key] += int(n)
        found = S.TestSummary(
            counts["passed"],
            counts["failed"] + counts["error"],
            counts["passed"] + counts["failed"] + counts["error"],
        )
    ran = list(S._UNITTEST_RAN.finditer(text))
    if ran:
        import re

        total = int(ran[-1].group(1))
        tail = text[ran[-1].end() :]
        m = S._UNITTEST_FAILED.search(tail)
        if m:
            bad = sum(int(x) for x in re.findall(r"(?:failures|errors)=(\d+)", m.group(1)))
            found = S.TestSummary(max(total - bad, 0), bad, total)
        elif S._UNITTEST_OK.search(tail):
            found = S.TestSummary(total, 0, total)
    m = S._SYMPY.search(text)
    if m:
        p, f, e = (int(x) if x else 0 for x in m.groups())
        found = S.TestSummary(p, f + e, p + f + e)
    ms = list(S._MOATLESS.finditer(text))
    if ms:
        p, f, e = (int(x) for x in ms[-1].groups())
        found = S.TestSummary(p, f + e, p + f + e)
    return found


def _plain_error_line(text: str) -> str:
    m = None
    for m in S._ERROR_LINE.finditer(text[-4000:]):
        pass
    return m.group(0).strip()[:200] if m else ""


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_guarded_signals_equal_plain_regexes(seed):
    texts = _texts(4000, seed) + [
        "",
        "DOES NOT EXİST",
        "doeſ not exiſt",
        "\u212aommand not found",
        "teſts finiſhed: 1 passed",
    ]
    for t in texts:
        assert S.has_syntax_error(t) == bool(t and S._SYNTAX.search(t)), t
        assert S.has_not_found(t) == bool(t and S._NOT_FOUND.search(t)), t
        assert S.is_reproduction(t) == bool(S._REPRO.search(t)), t
        assert S.is_revert(t) == bool(S._REVERT.search(t)), t
        assert S.parse_test_summary(t) == _plain_summary(t), t
        assert S.last_error_line(t) == (_plain_error_line(t) if t else ""), t
        assert [m.span() for m in S.iter_path_matches(t)] == [
            m.span() for m in S._PATH.finditer(t)
        ], t


def test_non_ascii_case_folding_still_found():
    """re.I folds 'ſ' onto 's' (and the Kelvin sign onto 'k'): the ASCII-only guard must not hide those matches."""
    assert S._NOT_FOUND.search("doeſ not exiſt") is not None
    assert S.has_not_found("doeſ not exiſt")
    assert S.parse_test_summary("teſts finiſhed: 2 passed") == S.TestSummary(2, 0, 2)


def test_path_matches_on_long_runs_and_limits():
    long = "/".join(["d"] * 200) + "/x.py " + "a.b.c.d.py-" * 50 + " y.txt"
    assert [m.span() for m in S.iter_path_matches(long)] == [
        m.span() for m in S._PATH.finditer(long)
    ]
    text = " ".join(f"pkg/m{i}.py" for i in range(100))
    assert S.paths_in(text) == [f"pkg/m{i}.py" for i in range(64)]


def test_gold_guards_change_no_feature(monkeypatch):
    """Gold features with the base-name guard equal those with the guard switched off."""
    tasks = make_tasks(12)
    trajs = make_runs(40, seed=5)
    # steps that mention gold files in odd ways: bare names, other directories, suffixes
    extra = [
        make_step(k, [Action("bash", a)], observation=o)
        for k, (a, o) in enumerate(
            [
                ("cat mod3.py", "see /testbed/pkg/mod3.py and tests/test_mod3.py"),
                (
                    "sed -i 's/a/b/' other/pkg/mod3.py",
                    "diff --git a/pkg/mod3.py b/pkg/mod3.py\n--- a/pkg/mod3.py\n+++ b/pkg/mod3.py\n@@ -13 +13 @@\n-    return x + a\n+    return x + a + b + value_3\n",
                ),
                ("python -m pytest tests/test_mod3.py::test_compute_3", "1 passed in 0.1s"),
                ("ls", "xmod3.py pkg/mod3.pyc mod3.py.bak"),
            ]
        )
    ]
    trajs.append(Trajectory("x/1", "agent-a", "synth", "repo__repo-3", extra, 1, {}, ""))
    ctxs = [RunContext.of(t, tasks.get(t.task_id)) for t in trajs]
    fast = Featurizer([GoldFamily()]).prefix_matrix(
        trajs, ctxs, max_t=[len(t.steps) for t in trajs]
    )
    monkeypatch.setattr(gold_mod, "_may_mention", lambda text, files: True)
    plain = Featurizer([GoldFamily()]).prefix_matrix(
        trajs, ctxs, max_t=[len(t.steps) for t in trajs]
    )
    assert np.array_equal(fast, plain, equal_nan=True)
    # the guarded features are exercised
    assert np.nanmax(fast[:, GoldFamily._names.index("gold_files_surfaced")]) > 0
    assert np.nanmax(fast[:, GoldFamily._names.index("gold_files_mentioned")]) > 0


def test_text_block_fast_paths_equal_the_plain_formulas():
    """Block.indices (Counter intersection) gives the plain formula's terms exactly; the term-major projection gives
    its values within _bounds.py's tolerance (two gemv calls on other layouts: another CPU's BLAS kernel may sum
    in another order)."""
    from collections import Counter

    from earlyeval.features.text import CumulativeBlockState, TextFamily, clip, tokenize

    trajs = make_runs(40, seed=8)
    fam = TextFamily(
        dims={
            b: 6 for b in ("prompt", "actions", "action_last", "observations", "observation_last")
        },
        min_df=1,
        min_agents=1,
    ).fit(trajs, [RunContext.of(t, None) for t in trajs])
    for name in ("action_last", "observation_last", "observations"):
        blk = fam.blocks[name]
        assert blk.components.shape == (6, len(blk.vocab)) and blk.rows.flags["C_CONTIGUOUS"]
        cum = CumulativeBlockState(blk.dim, len(blk.idf))
        proj = np.zeros(blk.dim)
        for t in trajs[:15]:
            for s in t.steps:
                toks = tokenize(
                    clip(s.observation or "", 1500) if name.startswith("obs") else s.action
                )
                pairs = sorted(
                    (blk.vocab[w], n) for w, n in Counter(toks).items() if w in blk.vocab
                )
                idx, cnt = blk.indices(toks)
                assert idx.tolist() == [j for j, _ in pairs] and cnt.tolist() == [
                    float(n) for _, n in pairs
                ]
                if not pairs:
                    continue
                w = cnt * blk.idf[idx]
                assert_same_number(
                    blk.project(idx, cnt), blk.components[:, idx] @ w / np.sqrt(np.dot(w, w))
                )
                cum.add(blk, idx, cnt)
                proj += blk.components[:, idx] @ w
                assert_same_number(cum.proj, proj)
