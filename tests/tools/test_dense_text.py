"""tools/dense_text.py, the measured dense text family (issue 28 item 6): its streaming values are a batch
recomputation of each block's mean token vector, and its state round-trips.  Needs wordllama, which is not in
requirements.lock (a venv of its own: docs/architecture.md, "Feature families"): skipped without it."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from _bounds import assert_same_number
from _paths import REPO

pytest.importorskip("wordllama")

from earlyeval.core.trajectory import Action, Trajectory, make_step  # noqa: E402
from earlyeval.features import (  # noqa: E402
    FAMILIES,
    FOLD_FREE,
    Featurizer,
    RunContext,
    family_class,
    register_family,
)
from earlyeval.features.text import BLOCKS, clip  # noqa: E402


def _load_tool():
    if "dense_text" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "dense_text", REPO / "tools" / "dense_text.py"
        )
        mod = importlib.util.module_from_spec(spec)
        sys.modules["dense_text"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["dense_text"]


dense_text = _load_tool()
PROMPT = "TypeError in DataFrame.merge when the key column is categorical: fix pandas/core/reshape/merge.py"
STEPS = [  # (action, observation): one with no observation, one with no action, one observation past 2 * obs_chars
    (
        "grep -rn 'def merge' pandas/core/reshape/merge.py",
        "pandas/core/reshape/merge.py:97:def merge(left, right,",
    ),
    (
        "python -m pytest pandas/tests/reshape/merge -x -q",
        "E   TypeError: Categorical is not ordered\n" * 200,
    ),
    ("str_replace merge.py 'lk = left_keys' 'lk = ensure_object(left_keys)'", ""),
    ("", "The file pandas/core/reshape/merge.py has been edited."),
    ("python -m pytest pandas/tests/reshape/merge -x -q", "1 passed in 0.42s"),
]


@pytest.fixture(scope="module")
def fam():
    return dense_text.DenseTextFamily()


@pytest.fixture(scope="module")
def run():
    steps = [
        make_step(i, [Action(tool="bash", text=a)] if a else [], observation=o)
        for i, (a, o) in enumerate(STEPS)
    ]
    traj = Trajectory(
        run_id="r0",
        agent="a",
        bench="swebench",
        task_id="t0",
        steps=steps,
        outcome=1,
        prompt=PROMPT,
    )
    return traj, RunContext.of(traj, None)


def _stream(fam, traj, ctx) -> list[np.ndarray]:
    s = fam.start(ctx)
    out = []
    for step in traj.steps:
        fam.update(s, step)
        out.append(np.array(fam.values(s)))
    return out


def _mean(enc, texts: list[str]) -> np.ndarray:
    """The batch definition: the mean token vector over every token of ``texts``, each tokenized on its own."""
    ids = np.concatenate([enc.ids(t) for t in texts])
    return enc.vectors[ids].mean(axis=0) if len(ids) else np.zeros(enc.dim)


def test_streaming_equals_a_batch_recomputation(fam, run):
    traj, ctx = run
    enc = fam.encoder
    acts = [st.action or "" for st in traj.steps]
    obss = [clip(st.observation or "", fam.obs_chars) for st in traj.steps]
    # the long observation is cut, as the text family cuts it
    assert len(obss[1]) < len(traj.steps[1].observation)
    for t, got in enumerate(_stream(fam, traj, ctx), start=1):
        want = np.concatenate(
            [
                _mean(enc, [PROMPT]),
                _mean(enc, acts[:t]),
                _mean(enc, [acts[t - 1]]),
                _mean(enc, obss[:t]),
                _mean(enc, [obss[t - 1]]),
            ]
        )
        assert_same_number(got, want)
    # no action: the latest-action block is 0
    assert not np.any(_stream(fam, traj, ctx)[3][2 * fam.dim : 3 * fam.dim])


def test_a_block_is_what_wordllama_embeds(fam):
    """The pooling is wordllama's own (``embed``, norm off), on the same truncated vectors (float32 there)."""
    wordllama = dense_text._import_wordllama()
    wl = wordllama.WordLlama.load(
        "l2_supercat",
        cache_dir=Path(wordllama.__file__).parent,
        dim=256,
        trunc_dim=fam.dim,
        disable_download=True,
    )
    np.testing.assert_allclose(fam.encoder.mean(PROMPT), wl.embed(PROMPT)[0], rtol=1e-5, atol=1e-6)


def test_the_batch_featurizer_is_the_streaming_loop(fam, run):
    traj, ctx = run
    X = Featurizer([fam]).prefix_matrix([traj], [ctx], max_t=[len(traj.steps)])
    assert np.array_equal(X, np.vstack(_stream(fam, traj, ctx)).astype(np.float32))


def test_state_round_trips_through_json(fam, run):
    traj, ctx = run
    meta, arrays = fam.get_state()
    back = dense_text.DenseTextFamily.from_state(json.loads(json.dumps(meta)), arrays)
    assert back.names == fam.names and back.get_state()[0] == meta
    for a, b in zip(_stream(fam, traj, ctx), _stream(back, traj, ctx)):
        assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="other l2_supercat weights"):
        dense_text.DenseTextFamily.from_state({**meta, "sha256": "0" * 64}, arrays)


def test_it_registers_as_a_fold_free_family_of_the_text_width(fam):
    cls = dense_text.DenseTextFamily
    try:
        assert register_family(cls) is cls and family_class("dense_text") is cls
    finally:
        FAMILIES.unregister("dense_text")
    assert cls.fit_scope == FOLD_FREE and cls.needs_task
    assert len(fam.names) == len(set(fam.names)) == len(BLOCKS) * 64 == 320
    assert fam.check_context(RunContext()) and fam.check_context(RunContext(prompt="x")) is None
