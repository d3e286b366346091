"""Fault cases of the class "report page": reports received from someone else (``loao.json`` and its neighbours),
with markup, control and bidi characters or TeX in the strings the page shows.  Shared by tests/test_faults.py and
tools/fault_summary.py.

Each case writes a benchmark's reports into a workspace, plants one hostile string where it says, and builds the
page (``report_page.write_report``, what ``earlyeval report`` runs).  "ok": the page has no element or attribute
of the report's making, no raw control or bidi character, and no section lost that the clean page has;
"silent": any of those."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Callable

from faults import Env

SCRIPT = "<script>alert(1)</script>"
PAYLOADS = {
    "a script": SCRIPT,
    "an attribute break-out": '"><img src=x onerror=alert(2)>',
    "ANSI codes": "\x1b[2J\x1b[31mred",
    "a bidi override": "evil\u202egnp.exe",
    "TeX": "$\\frac{x}$",
    "TeX that parses": "$x^2$",
}
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
AGENTS = ["alpha__m1", "beta__m2"]


def _block(n: int, saved: float) -> dict[str, Any]:
    return {
        "n_runs": n,
        "resolve_rate": 0.4,
        "auroc_success": 0.9,
        "halted_fraction": 0.5,
        "halted_accuracy": 0.96,
        "outcome_accuracy": 0.95,
        "steps_saved": saved,
        "steps_saved_task_skip": saved / 2,
        "steps_saved_in_run": saved / 2,
        "resolve_rate_shift_pp": -0.5,
        "mean_p_success": 0.41,
        "thresholds": {"success": 0.9, "failure": 0.95},
        "dollars": {"usd_saved": 10.0, "total_usd": 100.0, "usd_saved_share": 0.1},
    }


def _reports(agents: list[str], pass_key: str = "W=8", level: str = "0.8") -> dict[str, Any]:
    """loao.json, budget.json, routing.json, latency.json and ingest.json of a small benchmark."""
    fifths = {
        "halted_accuracy": 0.97,
        "steps_saved": 0.4,
        "steps_saved_by_fifth_of_pass": [0.3] * 5,
    }
    blocks = {a: {**_block(40, 0.3), "pass": {"seeds": [0], pass_key: fifths}} for a in agents}
    loao = {
        "holdout_agents": agents,
        "small_agents": [],
        "agents": blocks,
        "pooled": _block(80, 0.3),
        "pass_pooled": {pass_key: fifths},
        "config": {"min_halt_step": 1, "families": ["behaviour"]},
        "baselines": {"prior_only": _block(80, 0.2)},
        "ablations": [{"name": "no_gold", "mean_auroc": 0.8, "pooled": _block(80, 0.2)}],
        "protocols": {"doc": {"as_of": "the headline"}, "as_of": {"agents": blocks}},
    }
    cov = {"model": {level: 0.79}, "linear": {level: 0.8}}
    budget = {
        "protocol": "as_of",
        "dimensions": {
            "steps": {
                "budget_B": 30,
                "agents": {a: {"n_runs": 40, "coverage": cov} for a in agents},
            }
        },
    }
    pair = {
        "n_tasks": 10,
        "protocol": "as_of",
        "policies": {"always_cheap": {"total_cost_usd": 5.0}},
    }
    latency = {
        "per_step": {"wall": {"n": 10, "median_us": 100.0}},
        "sample": {"runs": 2, "steps": 10, "formats": ["swe-agent-traj"]},
        "by_format": {"swe-agent-traj": {"runs": 2, "wall": {"n": 10, "median_us": 100.0}}},
    }
    return {
        "loao.json": loao,
        "budget.json": budget,
        "routing.json": {"pairs": {f"{agents[0]}->{agents[-1]}": pair}},
        "latency.json": latency,
        "ingest.json": {"data_root": "/data"},
    }


def _predictions(agents: list[str], path: Path) -> None:
    import pandas as pd

    rows = [
        (a, f"{a}-{r}", t, 6, r % 2, 0.3 + 0.1 * (r % 2), 0.3, 0.9, 0.95)
        for a in agents
        for r in range(8)
        for t in range(1, 6)
    ]
    cols = ["agent", "run_id", "t", "T", "y", "p_success", "p_failure", "tau_s", "tau_f"]
    pd.DataFrame(rows, columns=cols).to_parquet(path, index=False)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)
        self.attrs.update(k for k, _ in attrs)


def _page(env: Env, name: str, reports: dict[str, Any], agents: list[str]) -> str:
    from earlyeval.config import workspace
    from earlyeval.report.report_page import write_report

    ws = env.base / "report_page" / name
    rdir, fdir = ws / "reports" / "demo", ws / "features" / "demo"
    rdir.mkdir(parents=True, exist_ok=True)
    fdir.mkdir(parents=True, exist_ok=True)
    for f, obj in reports.items():
        (rdir / f).write_text(json.dumps(obj))
    _predictions(agents, fdir / "loao_predictions.parquet")
    workspace.set_workspace(ws)
    try:
        return write_report("demo").read_text()
    finally:
        workspace.set_workspace(None)


def _failed(page: str) -> list[str]:
    return re.findall(r'<section id="(\w+)">(?:(?!</section>).)*could not be built', page, re.S)


def _verdict(page: str, clean: str, payload: str) -> tuple[str, str]:
    seen, ref = _Tags(), _Tags()
    seen.feed(page)
    ref.feed(clean)
    extra = sorted(seen.tags - ref.tags) + sorted(a for a in seen.attrs - ref.attrs)
    raw = RAW.search(page)
    lost = sorted(set(_failed(page)) - set(_failed(clean)))
    if extra or raw or lost:
        what = f"raw character {raw.group()!r}" if raw else f"sections lost {lost}"
        return ("silent", f"{payload!r}: markup {extra}, {what}")
    return ("ok", f"escaped ({len(page)} characters), no section lost")


def _case(where: str, payload_name: str):
    """``payload`` planted in one place of the reports."""

    def case(env: Env):
        payload = PAYLOADS[payload_name]
        key = f"{where}_{payload_name}".replace(" ", "_")
        agents = list(AGENTS)
        kw: dict[str, Any] = {}
        if where == "an agent name":
            agents[0] += payload
        elif where == "a pass block's key":
            kw["pass_key"] = "W=8" + payload
        elif where == "a coverage level":
            kw["level"] = "0.8" + payload
        reps = _reports(agents, **kw)
        if where == "a protocol's note":
            reps["loao.json"]["protocols"]["doc"]["as_of"] += payload
        elif where == "an ablation's name":
            reps["loao.json"]["ablations"][0]["name"] += payload
        elif where == "a routing pair":
            reps["routing.json"]["pairs"] = {
                payload: next(iter(reps["routing.json"]["pairs"].values()))
            }
        elif where == "a latency format":
            reps["latency.json"]["by_format"] = {
                payload: reps["latency.json"]["by_format"]["swe-agent-traj"]
            }
        elif where == "the data root":
            reps["ingest.json"]["data_root"] = payload
        elif where == "a budget dimension":
            b = reps["budget.json"]["dimensions"]
            b[payload] = b.pop("steps")
        if "clean_page" not in env._cache:
            env._cache["clean_page"] = _page(env, "clean", _reports(list(AGENTS)), list(AGENTS))
        return _verdict(_page(env, key, reps, agents), env._cache["clean_page"], payload)

    return case


WHERE = (
    "an agent name",
    "a pass block's key",
    "a protocol's note",
    "an ablation's name",
    "a routing pair",
    "a latency format",
    "the data root",
    "a budget dimension",
    "a coverage level",
)
CASES_REPORT_PAGE: list[tuple[str, str, Callable[[Env], tuple[str, str]]]] = [
    *[("report page", f"{p} in {w}", _case(w, p)) for w in WHERE[:2] for p in PAYLOADS],
    *[("report page", f"a script in {w}", _case(w, "a script")) for w in WHERE[2:]],
    *[
        ("report page", f"TeX in {w}", _case(w, "TeX"))
        for w in ("a routing pair", "a budget dimension")
    ],
    ("report page", "ANSI codes in a latency format", _case("a latency format", "ANSI codes")),
    (
        "report page",
        "a bidi override in a protocol's note",
        _case("a protocol's note", "a bidi override"),
    ),
]
