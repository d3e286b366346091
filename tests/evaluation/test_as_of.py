"""Time-respecting priors, warm start, and `score --as-of` / `--warm-start` against the offline evaluation."""

from __future__ import annotations

import copy
import dataclasses
import json
import re

import numpy as np
import pytest
from _monitor_helpers import make_runs, make_tasks, train_bundle

from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.config.eval_config import EvalConfig
from earlyeval.core.trajectory import Task
from earlyeval.evaluation.adapt import warm_split
from earlyeval.evaluation.warm_start import warm_policy_metrics, warm_start_block
from earlyeval.features import RunContext, build_family
from earlyeval.features.peer import PeerTable
from earlyeval.features.prior import PriorTable, default_match_patterns
from earlyeval.fitting.metrics import evaluate_policy
from earlyeval.fitting.thresholds import fit_warm_start
from earlyeval.fitting.warm import warm_start
from earlyeval.live.monitor import Monitor
from earlyeval.model.modeldir import save_model_dir
from earlyeval.workflows.export import export_runs
from earlyeval.workflows.score import read_runs, run_specs, score_runs
from earlyeval.workflows.score_options import ScoreOptions

DATED = {
    "own_early": ("2024-01-05", "20240105mytoolgpt4o"),
    "same_later": ("2024-07-01", "20240701mytoolv2gpt4o"),  # same scaffold x model, after the run
    "other_early": ("2024-02-01", "20240201othergpt4o"),
    "other_same_day": ("2024-06-10", "20240610otherclaude"),  # on the run's date: not before it
    "other_later": ("2024-09-01", "20240901strongagent"),
    "undated": ("", "somethingelse"),
    "other_early2": ("2024-03-01", "20240301thirdclaude"),
}


def dated_table() -> PriorTable:
    subs = {n: {"split": "lite", "text": txt, "date": d} for n, (d, txt) in DATED.items()}
    resolved = {
        "t1": ["own_early", "same_later", "other_early", "other_same_day", "other_later", "undated"]
    }
    return PriorTable(subs, resolved)


def ctx(as_of: str, **kw) -> RunContext:
    base = dict(
        task=Task("t1", meta={"split": "lite"}),
        scaffold="mytool",
        model="gpt-4o",
        prior_match=["mytool.*gpt4o"],
        as_of=as_of,
    )
    base.update(kw)
    return RunContext(**base)


def test_prior_never_counts_a_submission_dated_on_or_after_the_run_nor_its_own_agent():
    fam = build_family("prior", prior_table=dated_table())
    rate, n, _ = fam.start(ctx("2024-06-10"))
    # visible: other_early (solved), other_early2 (not); own_early and same_later are the same agent,
    # other_same_day is not strictly before, other_later is after, undated cannot be shown to precede
    assert n == 2 and rate == pytest.approx(0.5)
    rate, n, _ = fam.start(ctx("2024-06-11"))  # one day later other_same_day counts
    assert n == 3 and rate == pytest.approx(2 / 3)
    # no cutoff (today): every other agent's submission, undated too
    rate, n, _ = fam.start(ctx(""))
    assert n == 5 and rate == pytest.approx(4 / 5)
    rate, n, _ = fam.start(ctx("2024-01-01"))  # nothing before: unknown, not 0
    assert n == 0 and np.isnan(rate)


def test_prior_pool_brute_force_over_dates():
    table = dated_table()
    excl = table.excluded([], ["mytool.*gpt4o"])
    for day in ("2024-01-05", "2024-02-02", "2024-06-10", "2024-06-11", "2024-12-31"):
        pool = set(table.pool("lite", excl, day))
        expect = {n for n, (d, txt) in DATED.items() if d and d < day and "mytool" not in txt}
        assert pool == expect, day


def test_run_context_takes_the_run_date_and_score_can_override_it():
    t = make_runs(2, seed=0)[0]
    t.meta["date"] = "2024-06-17"
    assert RunContext.of(t, None).as_of == "2024-06-17"
    assert RunContext.of(t, None, as_of="").as_of == ""
    assert RunContext.of(t, None, as_of="2024-01-01").as_of == "2024-01-01"


def test_every_swebench_catalog_run_has_a_date():
    assert all(r.date for r in load_catalog("swebench").runs)


@pytest.mark.integration
def test_catalog_dates_and_the_issue_pool_sizes():
    """Every SWE-bench run has a date; pool sizes before each held-out agent's date (Lite, Verified) as counted
    independently in issue 14 (Moatless 0617: 13 Lite, not 14 -- factory_code_droid is dated the same day,
    not strictly before)."""
    cat = load_catalog("swebench")
    assert all(r.date for r in cat.runs)
    path = data_root() / "swebench/tasks/resolved_submissions.json"
    if not path.exists():
        pytest.skip(f"{path} not here")
    table = PriorTable.load(path)
    expect = {
        "swe-agent-0.x__gpt-4": (2, 4),
        "coder__gpt-4": (11, 9),
        "moatless-0609__gpt-4o": (12, 9),
        "moatless-0617__gpt-4o": (13, 11),
        "moatless-0623__claude-3.5-sonnet": (18, 13),
        "mini-swe-agent-1.15__gemini-3-pro": (56, 145),
        # every submission dated before: its own (2024-11-17) is not, and no other matches it
        "moatless-0.0.4__claude-3.5-sonnet-20241022": (42, 43),
        "swe-agent-1.1__gpt-5-mini": (56, 158),
    }
    for r in cat.runs:
        pats = r.options.get("prior_match") or default_match_patterns(r.scaffold, r.model)
        excl = table.excluded(r.public_submissions, pats)
        assert set(r.public_submissions) & set(table.submissions) <= excl
        for split in ("lite", "verified"):
            pool = table.pool(split, excl, r.date)
            assert all(table.submissions[n]["date"] < r.date for n in pool)
            assert not set(pool) & excl
        if r.agent in expect:
            assert (
                len(table.pool("lite", excl, r.date)),
                len(table.pool("verified", excl, r.date)),
            ) == expect[r.agent]


@pytest.mark.integration
def test_same_scaffold_and_model_exclusions_of_the_claude_moatless_and_gpt5mini_swe_agent_runs():
    """The June and November Moatless claude-3.5-sonnet runs each leave out their own submission only (the June
    one's leaderboard models tag also says 20241022, so a plain `moatless.*claude35sonnet` caught both); the
    SWE-agent 1.1 gpt-5-mini pattern catches no live-swe-agent or mini-swe-agent name."""
    cat = load_catalog("swebench")
    path = data_root() / "swebench/tasks/resolved_submissions.json"
    if not path.exists():
        pytest.skip(f"{path} not here")
    table = PriorTable.load(path)
    excl = {
        r.agent: table.excluded(r.public_submissions, r.options["prior_match"]) for r in cat.runs
    }
    assert excl["moatless-0623__claude-3.5-sonnet"] == {"20240623_moatless_claude35sonnet"}
    assert excl["moatless-0.0.4__claude-3.5-sonnet-20241022"] == {
        "20241117_moatless_claude-3.5-sonnet-20241022"
    }
    assert excl["swe-agent-1.1__gpt-5-mini"] == set()
    [pat] = cat.run("swe-agent-1.1__gpt-5-mini").options["prior_match"]
    assert re.search(pat, "20260101sweagentgpt5mini") and re.search(
        pat, "sweagent12gpt5mini20250807"
    )
    assert not re.search(pat, "20251201livesweagentgpt5mini") and not re.search(
        pat, "minisweagentv17gpt5mini"
    )


def test_peer_prior_uses_only_agents_dated_before_the_run():
    trajs = make_runs(30, seed=3, agents=("agent-a", "agent-b", "agent-c"))
    dates = {"agent-a": "2024-01-01", "agent-b": "2024-06-01", "agent-c": "2024-12-01"}
    ctxs = [RunContext.of(t, None, as_of=dates[t.agent]) for t in trajs]
    table = PeerTable.fit(trajs, ctxs)
    assert table.dates == dates
    for tid, by in table.counts.items():
        k, n, _ = table.peers(tid, "agent-c", "2024-06-01")  # agent-b is not strictly before
        exp = by.get("agent-a", [0, 0])
        assert (k, n) == (exp[0], exp[1])
        k, n, _ = table.peers(tid, "agent-c", "")
        assert n == sum(v[1] for a, v in by.items() if a != "agent-c")


# ------------------------------------------------------------------ warm start


def _runset(seed: int = 0):
    from earlyeval.fitting.metrics import RunSet

    rng = np.random.default_rng(seed)
    y = (rng.random(120) < 0.35).astype(int)
    T = rng.integers(5, 30, size=120)
    ps = [
        np.clip(0.15 + 0.6 * yy * np.linspace(0, 1, t - 1) + rng.normal(0, 0.08, t - 1), 0.01, 0.99)
        for yy, t in zip(y, T)
    ]
    return RunSet(["a"] * 120, [f"r{i}" for i in range(120)], y, T, ps, [1 - p for p in ps])


def test_warm_start_never_sees_a_label_outside_its_k_runs():
    rs = _runset()
    cfg = EvalConfig(warm_repeats=3, seed=0)
    before = warm_start_block(rs, cfg, 0.1, rule="check")
    flipped = dataclasses.replace(rs, y=rs.y.copy())
    masks = [warm_split(len(rs), 0.1, seed=r) for r in range(3)]
    outside = ~np.logical_or.reduce(masks)
    flipped.y[outside] = 1 - flipped.y[outside]
    after = warm_start_block(flipped, cfg, 0.1, rule="check")
    assert before["thresholds_per_draw"] == after["thresholds_per_draw"]
    # the fitted recalibration is that of the warm runs alone
    cal1, th1 = fit_warm_start(rs.subset(masks[0]), cfg, rule="check")
    cal2, th2 = fit_warm_start(flipped.subset(masks[0]), cfg, rule="check")
    assert (cal1.a, cal1.b, th1["success"], th1["failure"]) == (
        cal2.a,
        cal2.b,
        th2["success"],
        th2["failure"],
    )
    # positive control: flipping the warm runs' own labels does change the fit (thresholds checked from
    # the boldest pair; the refitted Platt of recalibrate=True)
    inside = dataclasses.replace(rs, y=rs.y.copy())
    inside.y[masks[0]] = 1 - inside.y[masks[0]]
    bold = (0.5, 0.5)
    _, th4 = fit_warm_start(rs.subset(masks[0]), cfg, base=bold, rule="check")
    _, th5 = fit_warm_start(inside.subset(masks[0]), cfg, base=bold, rule="check")
    assert (th4["success"], th4["failure"]) != (th5["success"], th5["failure"])
    cal6, _ = fit_warm_start(rs.subset(masks[0]), cfg, recalibrate=True)
    cal3, _ = fit_warm_start(inside.subset(masks[0]), cfg, recalibrate=True)
    assert (cal3.a, cal3.b) != (cal6.a, cal6.b)


def test_check_rule_only_makes_given_thresholds_more_cautious():
    """The checking rule (issue 14; the certifying default is tests/fitting/test_warm_certify.py): the result is
    never below the label-free thresholds on either side, stays at them when the warm runs support them, and
    rises when the warm runs contradict them."""
    rs = _runset(2)
    cfg = EvalConfig()
    for seed in range(6):
        warm = rs.subset(warm_split(len(rs), 0.2, seed=seed))
        for base in ((0.5, 0.5), (0.8, 0.9), (0.95, 0.99)):
            cal, th = fit_warm_start(warm, cfg, base=base, rule="check")
            assert (cal.a, cal.b) == (1.0, 0.0)
            assert th["success"] >= base[0] and th["failure"] >= base[1], (seed, base, th)
    # a base the warm runs support exactly is kept: the rule's own choice on them, used as the base
    warm = rs.subset(warm_split(len(rs), 0.3, seed=0))
    _, free = fit_warm_start(warm, cfg, rule="check")
    _, kept = fit_warm_start(warm, cfg, base=(free["success"], free["failure"]), rule="check")
    assert (kept["success"], kept["failure"]) == (free["success"], free["failure"])
    # the boldest base with every warm label flipped: the warm runs refuse it
    bad = dataclasses.replace(warm, y=1 - warm.y)
    _, raised = fit_warm_start(bad, cfg, base=(0.5, 0.5), rule="check")
    assert (raised["success"], raised["failure"]) != (0.5, 0.5)


def test_warm_runs_are_paid_in_full():
    rs = _runset(1)
    cfg = EvalConfig()
    warm = warm_split(len(rs), 0.2, seed=0)
    # thresholds picked on the warm runs: some savings
    cal, th = fit_warm_start(rs.subset(warm), cfg, rule="check")
    m = warm_policy_metrics(rs, warm, cal, th, cfg)
    # the same policy on the rest alone, rescaled: savings over all runs, warm runs adding steps but no savings
    from earlyeval.fitting.thresholds import recalibrated

    rest = evaluate_policy(
        recalibrated(rs.subset(~warm), cal), th["success"], th["failure"], cfg.min_halt_step
    )
    assert m["steps_saved"] == pytest.approx(
        rest["steps_saved"] * rs.T[~warm].sum() / rs.T.sum(), abs=1e-12
    )
    assert m["halted_fraction"] == pytest.approx(
        rest["halted_fraction"] * (~warm).sum() / len(rs), abs=1e-12
    )
    assert m["steps_saved"] > 0


# ------------------------------------------------------- score against offline


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    base = tmp_path_factory.mktemp("asof")
    tasks = make_tasks(12)
    bundle, _, _ = train_bundle(
        make_runs(80, seed=0),
        tasks,
        families=("behaviour", "gold", "prior"),
        thresholds={"success": 0.6, "failure": 0.68, "min_halt_step": 2},
    )
    prior = next(f for f in bundle.featurizer.families if f.name == "prior")
    # the same five submissions, dated on the first of January .. May 2024 (3 before 2024-03-15)
    prior.table = PriorTable(
        {
            n: {**s, "date": f"2024-{j + 1:02d}-01"}
            for j, (n, s) in enumerate(sorted(prior.table.submissions.items()))
        },
        prior.table.resolved_by,
    )
    model = save_model_dir(bundle, base / "model")
    runs = make_runs(40, seed=11, agents=("agent-a",))
    export_runs(runs, base / "atif", fmt="atif")
    trajs, _, _ = read_runs(run_specs(base / "atif", "atif"))
    return {
        "model": model,
        "bundle": bundle,
        "tasks": tasks,
        "runs": base / "atif",
        "base": base,
        "trajs": trajs,
    }


def _offline(bundle, trajs, tasks, as_of):
    ctxs = [RunContext.of(t, tasks.get(t.task_id), as_of=as_of) for t in trajs]
    X = bundle.featurizer.prefix_matrix(trajs, ctxs)
    ps = bundle.model.predict_success(X)
    out, k = [], 0
    for t in trajs:
        n = max(len(t.steps) - 1, 0)
        out.append(ps[k : k + n])
        k += n
    return X, out


def test_score_as_of_equals_offline_as_of(scored):
    b, trajs, tasks = scored["bundle"], scored["trajs"], scored["tasks"]
    rep = json.loads(
        score_runs(
            scored["model"],
            scored["runs"],
            ScoreOptions("atif", out=scored["base"] / "o1", as_of="2024-03-15"),
            tasks=tasks,
            progress=False,
        )["score"].read_text()
    )
    assert rep["as_of"] == "2024-03-15" and rep["policy_consistent"] is True
    X, ps = _offline(b, trajs, tasks, "2024-03-15")
    by_id = {r["run_id"]: r for r in rep["per_run"]}
    for t, p in zip(trajs, ps):
        np.testing.assert_allclose(by_id[t.run_id]["p_success"], p, atol=1e-12, rtol=0)
    # positive control: today's pool gives other prior features (so the cutoff reached the replay)
    X0, _ = _offline(b, trajs, tasks, "")
    j = b.featurizer.names.index("prior_n_submissions")
    assert set(np.unique(X[:, j])) == {3.0} and set(np.unique(X0[:, j])) == {5.0}


def test_score_warm_start_equals_offline_warm_start(scored):
    b, trajs, tasks = scored["bundle"], scored["trajs"], scored["tasks"]
    rep = json.loads(
        score_runs(
            scored["model"],
            scored["runs"],
            ScoreOptions("atif", out=scored["base"] / "o2", warm_start=8, seed=3),
            tasks=tasks,
            progress=False,
        )["score"].read_text()
    )
    warm_ids = set(rep["warm_start"]["run_ids"])
    assert len(warm_ids) == 8
    assert all(not r["halted"] for r in rep["per_run"] if r["run_id"] in warm_ids)
    # offline: the same K runs, fit_warm_start, warm runs at full cost
    from earlyeval.features.evidence import evidence_rule, prefix_gates
    from earlyeval.fitting.metrics import RunSet
    from earlyeval.live.loaded import evidence_name

    _, ps = _offline(b, trajs, tasks, "")
    rule = evidence_rule(
        evidence_name(b)
    )  # the gates offline: the model's rule on each run's steps
    rs = RunSet(
        [t.agent for t in trajs],
        [t.run_id for t in trajs],
        np.asarray([t.outcome for t in trajs]),
        np.asarray([len(t.steps) for t in trajs]),
        ps,
        [1 - p for p in ps],
        gates=[prefix_gates(rule, t.steps) for t in trajs],
    )
    warm = np.asarray([t.run_id in warm_ids for t in trajs])
    cfg = EvalConfig(min_halt_step=2)
    model_th = Monitor.load(scored["model"]).thresholds
    cal, th = fit_warm_start(rs.subset(warm), cfg, base=(model_th["success"], model_th["failure"]))
    assert th["success"] >= model_th["success"] and th["failure"] >= model_th["failure"]
    assert (
        rep["thresholds"]["success"] == th["success"]
        and rep["thresholds"]["failure"] == th["failure"]
    )
    assert rep["warm_start"]["recalibration"] == pytest.approx({"a": cal.a, "b": cal.b})
    m = warm_policy_metrics(rs, warm, cal, th, cfg)
    ((_, blk),) = rep["agents"].items()
    for k in (
        "halted_fraction",
        "halted_accuracy",
        "outcome_accuracy",
        "steps_saved",
        "steps_saved_in_run",
        "steps_saved_task_skip",
        "resolve_rate_shift_pp",
    ):
        assert blk[k] == pytest.approx(m[k], abs=1e-12) if m[k] is not None else blk[k] is None, k
    assert blk["warm_runs"] == 8


def test_monitor_warm_start_refuses_unlabelled_and_spawns_keep_it(scored):
    mon = Monitor.load(scored["model"])
    runs = copy.deepcopy(scored["trajs"][:6])
    runs[0].outcome = None
    with pytest.raises(ValueError, match="labelled"):
        mon.use_warm_start(warm_start(mon, runs))
    info = mon.use_warm_start(warm_start(mon, scored["trajs"][:10], scored["tasks"]))
    assert info["runs"] == 10
    child = mon.spawn()
    assert child.thresholds == mon.thresholds
    t = scored["trajs"][20]
    for m in (mon, child):
        m.start_context(RunContext.of(t, scored["tasks"].get(t.task_id), as_of=""), t.run_id)
    d1, d2 = mon.observe(t.steps[0]), child.observe(t.steps[0])
    assert d1.p_success == d2.p_success
    raw = Monitor.load(scored["model"])
    raw.start_context(RunContext.of(t, scored["tasks"].get(t.task_id), as_of=""), t.run_id)
    # the default warm start does not recalibrate
    assert raw.observe(t.steps[0]).p_success == d1.p_success
    assert (
        mon.thresholds["success"] >= raw.thresholds["success"]
        and mon.thresholds["failure"] >= raw.thresholds["failure"]
    )
    recal = Monitor.load(scored["model"])
    recal.use_warm_start(warm_start(recal, scored["trajs"][:10], scored["tasks"], recalibrate=True))
    recal.start_context(RunContext.of(t, scored["tasks"].get(t.task_id), as_of=""), t.run_id)
    assert recal.observe(t.steps[0]).p_success != d1.p_success  # Platt refitted on the warm runs


def test_monitor_start_as_of_dates_the_prior(scored):
    mon = Monitor.load(scored["model"])
    t = scored["trajs"][0]
    j = mon.loaded.feature_names.index("prior_n_submissions")
    for as_of, n in (("2024-03-15", 3.0), ("", 5.0), ("2024-01-01", 0.0)):
        mon.start(
            task=scored["tasks"][t.task_id], run_id=t.run_id, scaffold="x", model="y", as_of=as_of
        )
        mon.observe(t.steps[0])
        assert mon.run.last_features[j] == n, as_of
