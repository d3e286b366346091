"""Tiny synthetic runs and tiny trained model directories for the Monitor / score / modeldir tests.

Runs are built with ``make_step`` (the shared taxonomy) and look like SWE-bench
agent runs: views, edits of a gold file, test runs with pytest summaries,
tracebacks, repeated commands.  Successful runs tend to edit the gold file and
end with passing tests, so a small LightGBM learns something and probabilities
spread over (0, 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from synth import gold_patch

from earlyeval.core.trajectory import Action, Task, Trajectory, make_step
from earlyeval.features import Featurizer, RunContext, build_family
from earlyeval.features.context import context_absent_counts
from earlyeval.features.evidence import (
    RULES,
    EvidenceRule,
    EvidenceState,
    evidence_rule,
    prefix_gates,
)
from earlyeval.features.prior import PriorTable
from earlyeval.fitting.estimator import OutcomeModel
from earlyeval.fitting.metrics import RunSet, apply_policy, evaluate_policy
from earlyeval.live.loaded import evidence_name
from earlyeval.model.modeldir import ModelBundle, save_model_dir
from earlyeval.model.outcome import split_proba
from earlyeval.tables.prefixes import prefix_table

TEST_PATCH = """diff --git a/tests/test_mod{i}.py b/tests/test_mod{i}.py
--- a/tests/test_mod{i}.py
+++ b/tests/test_mod{i}.py
@@ -1,3 +1,4 @@
 import pkg
+def test_compute_{i}(): assert pkg.compute_{i}(1) == 7
 x = 1
 y = 2
"""

# the metric keys of a loao.json agent block that score.json must reproduce
HEADLINE = (
    "n_runs",
    "resolve_rate",
    "auroc_success",
    "auroc_failure",
    "halted_fraction",
    "halted_accuracy",
    "outcome_accuracy",
    "success_recall",
    "failure_recall",
    "economic_consistency",
    "steps_saved",
    "input_tokens_saved",
    "output_tokens_saved",
    "resolve_rate_shift_pp",
    "halted_as_success",
    "halted_as_failure",
)

LIGHT = {
    "n_estimators": 30,
    "learning_rate": 0.1,
    "num_leaves": 7,
    "min_child_samples": 5,
    "subsample": 1.0,
    "subsample_freq": 0,
    "colsample_bytree": 1.0,
    "reg_lambda": 1.0,
}


def make_tasks(n: int, with_gold: bool = True) -> dict[str, Task]:
    return {
        f"repo__repo-{i}": Task(
            task_id=f"repo__repo-{i}",
            prompt=f"compute_{i} returns the wrong value for x in pkg/mod{i}.py",
            gold_patch=gold_patch(i, "value_{i}") if with_gold else None,
            test_patch=TEST_PATCH.format(i=i),
            fail_to_pass=[f"tests/test_mod{i}.py::test_compute_{i}"],
            meta={"split": "lite"},
        )
        for i in range(n)
    }


def make_run(i: int, agent: str, success: bool, rng: np.random.Generator) -> Trajectory:
    T = int(rng.integers(6, 26))
    steps = []
    style = "bash" if agent.endswith("a") else "str_replace_editor"
    for k in range(T):
        r = rng.random()
        if k == T - 1:
            acts = [Action("submit", "")]
            obs = "submitted"
        elif r < 0.25:
            acts = [Action("bash", f"grep -rn compute_{i} pkg/ | head")]
            obs = f"pkg/mod{i}.py:10:def compute_{i}(x):\npkg/other.py:3: import compute_{i}"
        elif r < 0.45:
            acts = [
                Action(style, f"view /testbed/pkg/mod{i}.py")
                if style != "bash"
                else Action("bash", f"cat pkg/mod{i}.py")
            ]
            obs = "\n".join(f"{n:4d}  line {n} of mod{i}" for n in range(1, 30))
        elif r < 0.65:
            target = f"pkg/mod{i}.py" if (success or rng.random() < 0.3) else f"pkg/other{k}.py"
            acts = [
                Action("bash", f"sed -i '13s/return x + a/return x + a + b + value_{i}/' {target}")
            ]
            obs = ""
        elif r < 0.85:
            acts = [Action("bash", f"python -m pytest tests/test_mod{i}.py -q")]
            good = success and k > T // 2
            obs = (
                "4 passed in 0.12s"
                if good
                else 'Traceback (most recent call last):\n  File "x.py", line 3\nAssertionError: 6 != 7\n'
                f"=== 1 failed, {int(rng.integers(0, 5))} passed in 0.3s ==="
            )
        else:
            acts = [Action("bash", "python reproduce_issue.py")]
            obs = "ValueError: bad value" if not success else "ok é"
        steps.append(
            make_step(
                k,
                acts,
                thought=f"step {k}: let me look",
                observation=obs,
                input_tokens=int(1000 + 200 * k),
                output_tokens=int(rng.integers(20, 200)),
                cost_usd=0.001 * (k + 1),
                error=("Error" in obs) or None,
            )
        )
    return Trajectory(
        run_id=f"{agent}/{i}",
        agent=agent,
        bench="synth",
        task_id=f"repo__repo-{i % 12}",
        steps=steps,
        outcome=int(success),
        meta={"scaffold": agent, "model": "m", "split": "lite"},
        prompt=f"compute_{i % 12} returns the wrong value",
    )


def make_runs(
    n: int = 80, seed: int = 0, agents: tuple[str, ...] = ("agent-a", "agent-b")
) -> list[Trajectory]:
    rng = np.random.default_rng(seed)
    return [make_run(i, agents[i % len(agents)], bool(rng.random() < 0.4), rng) for i in range(n)]


def prior_table(tasks: dict[str, Task]) -> PriorTable:
    subs = {f"sub{j}": {"split": "lite", "text": f"sub{j}"} for j in range(5)}
    resolved = {
        tid: [f"sub{j}" for j in range(k % 5)] for k, tid in enumerate(sorted(tasks)) if k % 6 != 5
    }
    return PriorTable(subs, resolved)


# the default families draw no BLAS: their features, hence the boosters, are bit-identical under every OpenBLAS
# kernel (Haswell, Zen, Sandybridge, Nehalem, Prescott measured) and numpy's baseline SIMD; the text family's
# TF-IDF + SVD goes through BLAS and moves the fitted model from kernel to kernel (tests/README.md)
BLAS_FREE = ("behaviour", "gold", "prior")


def train_bundle(
    trajs: list[Trajectory],
    tasks: dict[str, Task],
    families: tuple[str, ...] = BLAS_FREE,
    thresholds: dict[str, Any] | None = None,
    twin: str = "mirror",
    text_dims: int = 6,
    text_cache: Any = None,
) -> tuple[ModelBundle, np.ndarray, list[RunContext]]:
    """Fit a tiny featurizer + OutcomeModel on ``trajs``; returns (bundle, batch matrix of all prefixes, contexts)."""
    table = prior_table(tasks)
    fams = []
    for f in families:
        params = {
            "dims": {
                b: text_dims
                for b in ("prompt", "actions", "action_last", "observations", "observation_last")
            },
            "min_df": 1,
            "min_agents": 1,
            "cache": text_cache,
        }
        fams.append(build_family(f, prior_table=table, text_params=params))
    ctxs = [RunContext.of(t, tasks.get(t.task_id)) for t in trajs]
    fz = Featurizer(fams).fit(trajs, ctxs)
    X = fz.prefix_matrix(trajs, ctxs)
    pf = prefix_table(trajs, min_steps=2)
    model = OutcomeModel(lgbm_params=dict(LIGHT), twin=twin, n_jobs=1)
    model.fit(
        X,
        pf["y"].to_numpy(),
        sample_weight=pf["weight"].to_numpy(),
        groups=pf["task_id"].to_numpy(),
        feature_names=fz.names,
    )
    th = thresholds or {"success": 0.7, "failure": 0.75, "min_halt_step": 1}
    # as train_bench records it: which training runs lacked a family's inputs (monitor.context_state reads it)
    bundle = ModelBundle(
        fz,
        model,
        th,
        training={
            "benchmarks": ["synth"],
            "runs": len(trajs),
            "context_runs": len(trajs),
            "context_absent_runs": context_absent_counts(fz, ctxs),
        },
    )
    return bundle, X, ctxs


def save_tiny(path: Path, **kw: Any) -> tuple[Path, ModelBundle, list[Trajectory], dict[str, Task]]:
    tasks = make_tasks(12)
    trajs = make_runs(kw.pop("n", 80), kw.pop("seed", 0))
    bundle, _, _ = train_bundle(trajs, tasks, **kw)
    save_model_dir(bundle, path)
    return path, bundle, trajs, tasks


def scoring_fixture(
    n_new: int = 36, min_halt_step: int = 1, need: tuple[Any, ...] | None = None
) -> tuple[dict[str, Task], ModelBundle, list[Trajectory]]:
    """The score tests' set-up: a tiny model trained on 80 runs of two agents, and ``n_new`` runs of a new agent
    (seed 11) with thresholds derived from those runs' own probabilities (``quantile_thresholds``)."""
    tasks = make_tasks(12)
    bundle, _, _ = train_bundle(make_runs(80, seed=0), tasks)
    runs = make_runs(n_new, seed=11, agents=("agent-a",))
    kw = {} if need is None else {"need": need}
    bundle.thresholds = quantile_thresholds(bundle, runs, tasks, min_halt_step=min_halt_step, **kw)
    return tasks, bundle, runs


def offline_policy(
    bundle: ModelBundle, trajs: list[Trajectory], tasks: dict[str, Task], th: dict[str, Any]
) -> tuple[RunSet, dict[str, Any]]:
    """Batch features + predict_proba, grouped by run: the offline evaluation, built independently of score.py."""
    rule = evidence_rule(evidence_name(bundle))
    ctxs = [RunContext.of(t, tasks.get(t.task_id)) for t in trajs]
    X = bundle.featurizer.prefix_matrix(trajs, ctxs)
    ps, pf = split_proba(bundle.model.predict_proba(X))
    p_s, p_f, k = [], [], 0
    for t in trajs:
        n = max(len(t.steps) - 1, 0)
        p_s.append(ps[k : k + n])
        p_f.append(pf[k : k + n])
        k += n
    tok = lambda xs: None if any(x is None for x in xs) else np.asarray(xs, dtype=float)
    rs = RunSet(
        [t.agent for t in trajs],
        [t.run_id for t in trajs],
        np.asarray([t.outcome for t in trajs]),
        np.asarray([len(t.steps) for t in trajs]),
        p_s,
        p_f,
        [tok([s.input_tokens for s in t.steps]) for t in trajs],
        [tok([s.output_tokens for s in t.steps]) for t in trajs],
        [[s.action.strip() for s in t.steps] for t in trajs],
        # each prefix gated by the model's success evidence rule and task-skip policy, as offline
        [prefix_gates(rule, t.steps) for t in trajs],
        bool(bundle.thresholds.get("task_skips", False)),
    )
    return rs, evaluate_policy(rs, th["success"], th["failure"], th["min_halt_step"])


# the least distance between a derived threshold and any run's probability: float noise between BLAS kernels
# and library versions is ~1e-15 here (Platt's L-BFGS moves by one ulp), so a run cannot cross a cut-off by noise
MARGIN = 1e-6


def both_sides(rs: RunSet, th: dict[str, Any]) -> bool:
    """Some runs halt as successes, some as failures, and some do not halt."""
    m = evaluate_policy(rs, th["success"], th["failure"], th["min_halt_step"])
    return m["halted_as_success"] > 0 and m["halted_as_failure"] > 0 and m["halted_fraction"] < 1


def some_halt(rs: RunSet, th: dict[str, Any]) -> bool:
    """Some runs halt and some do not."""
    return (
        0
        < evaluate_policy(rs, th["success"], th["failure"], th["min_halt_step"])["halted_fraction"]
        < 1
    )


def differs_from(other: dict[str, Any]) -> Any:
    """Some run halts at another step under ``th`` than under ``other``."""

    def check(rs: RunSet, th: dict[str, Any]) -> bool:
        a, _ = apply_policy(rs, th["success"], th["failure"], th["min_halt_step"])
        b, _ = apply_policy(
            rs, other["success"], other["failure"], other.get("min_halt_step", th["min_halt_step"])
        )
        return bool((a != b).any())

    return check


def quantile_thresholds(
    bundle: ModelBundle,
    trajs: list[Trajectory],
    tasks: dict[str, Task],
    min_halt_step: int,
    q: float = 0.75,
    need: tuple[Any, ...] = (some_halt,),
) -> dict[str, Any]:
    """Thresholds derived from the fixture's own probabilities, never hand-picked, and valid by construction.

    Per run, the highest P(success) and P(failure) over the prefixes a halt may use (t >= min_halt_step); among
    the distinct maxima above 0.5 + MARGIN, each cut-off sits halfway between two neighbours at least MARGIN
    apart, near the q-quantile.  So each cut-off is in (0.5, 1], a fraction of the runs crosses it and the rest
    stays below, every run at least MARGIN/2 away.  ``need``: properties the pair must give on these runs
    (``some_halt``, ``both_sides``, ``differs_from(th)``); q is tried first, then other quantiles in a fixed
    order, and a fixture that supports none raises ValueError (the test cannot be made, it is never passed by
    luck).  What a test asserts about halting thus holds whatever the fitted numbers are on a given machine."""
    rs, _ = offline_policy(
        bundle, trajs, tasks, {"success": 2.0, "failure": 2.0, "min_halt_step": min_halt_step}
    )

    def cut(per_run: list[np.ndarray], qq: float) -> float | None:
        top = np.unique(
            [float(np.max(p[min_halt_step - 1 :])) for p in per_run if len(p) >= min_halt_step]
        )
        top = top[top > 0.5 + MARGIN]
        gaps = [i for i in range(len(top) - 1) if top[i + 1] - top[i] >= MARGIN]
        if not gaps:
            return None
        i = min(gaps, key=lambda j: (abs(j - qq * (len(top) - 1)), j))
        return float((top[i] + top[i + 1]) / 2)

    for qq in dict.fromkeys((q, 0.75, 0.6, 0.5, 0.4, 0.25, 0.9, 0.1)):
        ts, tf = cut(rs.p_s, qq), cut(rs.p_f, qq)
        if ts is None or tf is None:
            continue
        th = {"success": ts, "failure": tf, "min_halt_step": min_halt_step}
        if all(check(rs, th) for check in need):
            return th
    raise ValueError(
        "the fixture's probabilities support no threshold pair in (0.5, 1] with the properties asked for"
    )


def constant_model(
    path: Path,
    p_success: float,
    thresholds: dict[str, Any],
    families: tuple[str, ...] = ("behaviour",),
) -> Path:
    """A valid model directory whose calibrated P(success) is ``p_success`` at every step (Platt with a = 0):
    with thresholds in (0.5, 1] such a model halts at ``min_halt_step`` (or never) by construction, which is
    what the adapter tests need -- thresholds of 0.0, which once did that, are refused by the loader."""
    import math

    from earlyeval.model.outcome import Platt

    bundle, _, _ = train_bundle(
        make_runs(40, 0), make_tasks(12), families=families, thresholds=dict(thresholds)
    )
    bundle.model.platt_["success"] = Platt(0.0, math.log(1.0 / p_success - 1.0))
    save_model_dir(bundle, path)
    return path


class AnyActionEvidence(EvidenceRule):
    """A test-only success evidence rule: any action of the agent counts (the adapters' halting mechanics are
    tested on it; the shipped rules are tested in tests/features/test_evidence.py)."""

    name = "test-any-action"
    requirement = "an action of the agent (a test-only rule)"

    def holds(self, s: EvidenceState) -> bool:
        return s.acted


if AnyActionEvidence.name not in RULES.known():
    RULES.register(AnyActionEvidence.name, AnyActionEvidence)

# thresholds that, on ``constant_model(p_success=0.2)`` / ``(0.8)``, halt every run at step 2 predicting failure /
# success, and that never halt (a success halt on the test-only rule: any action of the agent is evidence)
ALWAYS_FAIL = {"success": 2.0, "failure": 0.6, "min_halt_step": 2}
ALWAYS_SUCCEED = {
    "success": 0.6,
    "failure": 2.0,
    "min_halt_step": 2,
    "success_evidence": AnyActionEvidence.name,
}
NEVER_HALT = {"success": 2.0, "failure": 2.0, "min_halt_step": 1}
