"""The cost sections of the report page: dollars saved, budget coverage and early stop, Monitor latency.

Each is a table (nothing preformatted wider than the page) with the stage's own PNG embedded from the
reports folder (``Inputs.png``); a report not yet made is named with the command that writes it.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from earlyeval.report.html import (
    agent_cell,
    fnum,
    join,
    legend,
    note,
    num,
    off,
    pct,
    table,
    tag,
    usd,
)
from earlyeval.report.page_inputs import Inputs, small_agents
from earlyeval.report.targets import COVERAGE_TOLERANCE, off_nominal

BUDGET_PNGS = (
    ("budget_intervals.png", "remaining-budget intervals (budget.json)"),
    (
        "budget_late_recognition.png",
        "early stop: how late a failed run is recognised (budget.json)",
    ),
)


def _saved_usd(d: dict[str, Any]) -> str:
    return (
        "unknown"
        if num(d.get("usd_saved")) is None
        else f"{usd(d.get('usd_saved'))} ({pct(d.get('usd_saved_share'))})"
    )


def section_dollars(inp: Inputs) -> Markup:
    out = []
    agents = (inp.loao or {}).get("agents") or {}
    small = small_agents(inp)
    if agents:
        rows = []
        for a, b in agents.items():
            d, fo = b.get("dollars") or {}, ((b.get("failure_only") or {}).get("dollars") or {})
            rows.append(
                (
                    "small" if a in small else "",
                    [
                        agent_cell(a, a in small, b.get("n_runs")),
                        usd(d.get("total_usd")),
                        _saved_usd(d),
                        _saved_usd(fo),
                    ],
                )
            )
        pooled = (inp.loao or {}).get("pooled") or {}
        rows.append(
            (
                "pooled",
                [
                    "large agents",
                    usd((pooled.get("dollars") or {}).get("total_usd")),
                    _saved_usd(pooled.get("dollars") or {}),
                    _saved_usd((pooled.get("failure_only") or {}).get("dollars") or {}),
                ],
            )
        )
        out.append(tag("h3", "Halting policy (as_of, honest thresholds), priced run by run"))
        out.append(
            table(
                [
                    "agent",
                    "spend of all runs",
                    "benchmark pass: dollars saved",
                    "failure-only: dollars saved",
                ],
                rows,
            )
        )
        out.append(
            legend(
                {
                    "dollars saved": "each run priced by its own catalog source (per-step costs, an instance total "
                    "charged t/T, or a catalog price per step), summed over the steps a halt did not "
                    "run (loao.json `dollars`; the summary's figures)"
                }
            )
        )
    else:
        out.append(note("dollars of the halting policy: unknown (needs loao.json)", missing=True))
    pairs = (inp.routing or {}).get("pairs") or {}
    if pairs:
        rows = []
        for name, p in pairs.items():
            pol = p.get("policies") or {}
            base, stop = pol.get("always_cheap") or {}, pol.get("stop_on_predicted_failure") or {}
            bc, sc = num(base.get("total_cost_usd")), num(stop.get("total_cost_usd"))
            rows.append(
                (
                    "",
                    [
                        name,
                        str(p.get("n_tasks", "–")),
                        usd(bc),
                        usd(sc),
                        usd(None if bc is None or sc is None else bc - sc),
                        pct(base.get("resolve_rate")),
                        pct(stop.get("resolve_rate")),
                        str(stop.get("n_stopped", "–")),
                    ],
                )
            )
        protocol = next(iter(pairs.values())).get("protocol", "?")
        out.append(
            tag("h3", f"Routing simulation ({protocol}): stop the cheap agent on predicted failure")
        )
        out.append(
            table(
                [
                    "cheap->strong pair",
                    "tasks",
                    "always cheap",
                    "stop on predicted failure",
                    "saved",
                    "resolve (always cheap)",
                    "resolve (stop)",
                    "runs stopped",
                ],
                rows,
            )
        )
        out.append(
            legend(
                {
                    "always cheap / stop": "total dollars of one pass over the shared tasks, real per-run prices (routing.json)",
                    "saved": "always cheap minus stop-on-predicted-failure",
                }
            )
        )
    bud = ((inp.budget or {}).get("dimensions") or {}).get("cost_usd")
    if isinstance(bud, dict):
        es = ((bud.get("pooled") or {}).get("early_stop") or {}).get("model") or {}
        out.append(
            tag(
                "p",
                f'Budget early stop on "impossible" (cost_usd, B = {usd(bud.get("budget_B"))} per run, '
                f"pooled): {pct(es.get('saved_on_failed'))} of the dollars of failed runs saved, at "
                f"{fnum(es.get('success_rate_cost_pp'), 2)} pp of success rate "
                f"({es.get('n_runs', '?')} runs whose cost is known).",
            )
        )
    elif inp.budget is None:
        out.append(inp.missing("budget.json"))
    return join(out)


def section_budget(inp: Inputs) -> Markup:
    if inp.budget is None:
        return inp.missing("budget.json")
    dims = inp.budget.get("dimensions") or {}
    small = small_agents(inp)
    out = [
        note(
            f"protocol: {inp.budget.get('protocol', '?')}. "
            + str((inp.budget.get("method") or {}).get("metrics", ""))
        )
    ]
    stops: list[tuple[str, list[str]]] = []
    for d, blk in dims.items():
        if not isinstance(blk, dict):
            continue
        agents = blk.get("agents") or {}
        online = (blk.get("online") or {}).get("agents") or {}
        given = {
            lv
            for b in agents.values()
            if isinstance(b, dict)
            for lv in ((b.get("coverage") or {}).get("model") or {})
        }
        levels = sorted(lv for lv in given if 0.0 < (num(lv) or 0.0) < 1.0)
        if given - set(levels):
            out.append(
                note(
                    f"{d}: coverage levels that are not a share, left out: {sorted(given - set(levels))}"
                )
            )
        rows = []

        def row(
            name: str, b: dict[str, Any], on: dict[str, Any], cls: str, sm: bool
        ) -> tuple[str, list[str]]:
            cov = b.get("coverage") or {}
            cells = [
                agent_cell(name, sm, b.get("n_runs")) if cls != "pooled" else name,
                str(b.get("n_runs", "–")),
            ]
            for lv in levels:
                for v in (
                    (cov.get("model") or {}).get(lv),
                    (cov.get("linear") or {}).get(lv),
                    (on.get("coverage") or {}).get(lv),
                ):
                    cells.append(off(pct(v)) if off_nominal(v, lv) else pct(v))
            return cls, cells

        for a in sorted(agents, key=lambda a: (a in small, a)):
            b = agents[a]
            if isinstance(b, dict):
                sm = a in small or bool(b.get("small_n"))
                rows.append(row(a, b, online.get(a) or {}, "small" if sm else "", sm))
        if isinstance(blk.get("pooled"), dict):
            rows.append(
                row(
                    "pooled (large agents)",
                    blk["pooled"],
                    (blk.get("online") or {}).get("pooled") or {},
                    "pooled",
                    False,
                )
            )
        header = ["agent", "runs"] + [
            f"{h} {float(lv):.0%}" for lv in levels for h in ("model", "linear", "online")
        ]
        excl = blk.get("runs_excluded_unknown") or {}
        out.append(tag("h3", f"{d} (B = {fnum(blk.get('budget_B'), 2 if d == 'cost_usd' else 0)})"))
        out.append(table(header, rows))
        if excl:
            out.append(
                note(
                    "not in this dimension (usage unknown, never counted as 0): "
                    + ", ".join(f"{a} ({n} runs)" for a, n in excl.items())
                )
            )
        if _early_stop(blk):
            stops.append(("", [d] + _early_stop_cells(blk)))
    if stops:
        out.append(tag("h3", 'Early stop on "impossible" (pooled large agents)'))
        out.append(
            table(
                [
                    "dimension",
                    "runs",
                    "budget saved on failed runs",
                    "steps saved on failed runs",
                    "success rate cost",
                    "false aborts",
                ],
                stops,
            )
        )
    for name, title in BUDGET_PNGS:
        out.append(inp.png(name, title))
    out.append(
        legend(
            {
                "model p%": "share of prefixes (each run weighted 1/(T-1)) whose remaining usage lies in the model's "
                "conformalized p% interval; nominal = p%",
                "linear p%": "the same for the linear baseline (spend per step so far × median remaining length)",
                "online p%": "intervals re-conformalized on the new agent's own finished runs (no outcome labels); "
                "uses the new agent's data, so not the label-free headline",
                "red": f"more than {COVERAGE_TOLERANCE:.0%} (absolute) from nominal (report.targets)",
                "early stop": "halt at the first t with P(feasible) < tau (tau chosen without the held-out agent): "
                "the share of failed runs' budget not spent, and the success rate given up (pp)",
                "B": "the budget: 75 % quantile of run totals of every labelled run whose usage is known",
            }
        )
    )
    return join(out)


def _early_stop(blk: dict[str, Any]) -> dict[str, Any]:
    return ((blk.get("pooled") or {}).get("early_stop") or {}).get("model") or {}


def _early_stop_cells(blk: dict[str, Any]) -> list[str]:
    es = _early_stop(blk)
    cost = num(es.get("success_rate_cost_pp"))
    return [
        str(es.get("n_runs", "–")),
        pct(es.get("saved_on_failed")),
        pct(es.get("steps_saved_on_failed")),
        "–" if cost is None else f"{cost:.2f} pp",
        pct(es.get("false_abort_rate")),
    ]


def _us(x: Any) -> str:
    v = num(x)
    return "–" if v is None else f"{v:,.0f} µs"


def _stat_cells(st: dict[str, Any] | None, target: dict[str, Any] | None = None) -> list[Any]:
    """median, p90, p99, max of one ``_stats`` block; a median or p99 above its target marked."""
    st = st or {}
    target = target or {}
    cells = []
    for k in ("median_us", "p90_us", "p99_us", "max_us"):
        v, lim = num(st.get(k)), num(target.get(k))
        cells.append(off(_us(v)) if v is not None and lim is not None and v > lim else _us(v))
    return [str(st.get("n", "–"))] + cells


def section_latency(inp: Inputs) -> Markup:
    if inp.latency is None:
        return inp.missing("latency.json")
    try:
        return _latency(inp, inp.latency)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        return note(f"latency.json: unexpected content ({type(e).__name__}: {e})", missing=True)


def _latency(inp: Inputs, rep: dict[str, Any]) -> Markup:
    tgt = rep.get("target") or {}
    ps = rep["per_step"]
    sample = rep.get("sample") or {}
    syn = rep.get("synthetic")
    load = (rep.get("setup") or {}).get("load_average_before")
    out = [
        tag(
            "p",
            f"{sample.get('steps', '?')} steps of {sample.get('runs', '?')} real runs "
            f"({', '.join(map(str, sample.get('formats') or []))})"
            + (f" + a synthetic {syn['steps']}-step run" if syn else "")
            + f"; predictor {rep.get('predictor', '?')}; {rep.get('n_features', '?')} features; "
            f"budget {rep.get('budget')}; load average before the run {load}.",
        )
    ]
    rows = [
        ("", ["observe() wall"] + _stat_cells(ps.get("wall"), tgt)),
        ("", ["observe() cpu"] + _stat_cells(ps.get("cpu"), tgt)),
    ]
    rows += [
        ("", [name] + _stat_cells(ps.get(k)))
        for k, name in (
            ("featurize", "featurize"),
            ("predict", "predict"),
            ("budget", "budget"),
            ("other", "other"),
        )
    ]
    out.append(table(["per step", "steps", "median", "p90", "p99", "max"], rows))
    buckets = rep.get("by_step_bucket") or {}
    if buckets:
        brows = [
            (
                "",
                [b] + _stat_cells(v.get("wall"), tgt)[1:] + [pct(v.get("synthetic_share"), 0)],
            )
            for b, v in buckets.items()
        ]
        out.append(tag("h3", "By step (wall)"))
        out.append(table(["steps", "median", "p90", "p99", "max", "synthetic share"], brows))
    fmts = rep.get("by_format") or {}
    if fmts:
        frows = [
            ("", [f, str(v.get("runs", "–"))] + _stat_cells(v.get("wall"), tgt)[1:])
            for f, v in fmts.items()
        ]
        out.append(tag("h3", "By format (wall)"))
        out.append(table(["format", "runs", "median", "p90", "p99", "max"], frows))
    out.append(inp.png("latency.png", "observe() per step (latency.json)"))
    out.append(
        legend(
            {
                "wall / cpu": "perf_counter around Monitor.observe() / the thread's CPU time of the same call "
                "(insensitive to other processes on the machine)",
                "red": f"above the target: median {_us(tgt.get('median_us'))}, p99 {_us(tgt.get('p99_us'))} (latency.json)",
                "featurize / predict / budget": "the monitor's own stage timers; other = the rest of observe()",
            }
        )
    )
    return join(out)
