"""`earlyeval report`: the page a person reads (earlyeval/report/report_page.py).

A synthetic workspace (a loao.json shaped like evaluate's, predictions whose halt steps are known by
construction, a budget.json, a routing.json) is rendered; the checks read the page's numbers back.
The headless-Chromium test renders it and checks the screenshot; it skips where /usr/bin/chromium is
absent (CI), and can keep the PNG (EARLYEVAL_REPORT_SCREENSHOT=path).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from earlyeval.app.cli import app
from earlyeval.config import workspace
from earlyeval.report.report_page import SECTIONS, Inputs, halt_steps, write_report

CHROMIUM = Path("/usr/bin/chromium")
LARGE = ["agent-alpha__model-x", "agent-beta__model-y"]
SMALL = ["tiny-agent__model-z"]


def _block(n: int, small: bool, saved: float, acc: float = 0.9) -> dict:
    return {
        "n_runs": n,
        "resolve_rate": 0.4,
        "auroc_success": 0.9,
        "halted_fraction": 0.5,
        "halted_accuracy": acc,
        "outcome_accuracy": 0.95,
        "steps_saved": saved,
        "steps_saved_task_skip": saved / 2,
        "steps_saved_in_run": saved / 2,
        "resolve_rate_shift_pp": -0.5,
        "mean_p_success": 0.41,
        "thresholds": {"success": 0.9, "failure": 0.95},
        "small_n": small,
    }


def _png(path: Path, colour: tuple[int, int, int]) -> None:
    from PIL import Image

    Image.new("RGB", (320, 120), colour).save(path)


LATENCY = {
    "predictor": "fast",
    "budget": "on",
    "n_features": 101,
    "target": {"median_us": 200, "p99_us": 1000},
    "setup": {"load_average_before": 1.5},
    "sample": {"runs": 30, "steps": 900, "formats": ["mini-swe-agent-v1", "swe-agent-traj"]},
    "per_step": {
        "wall": {"n": 900, "median_us": 180.0, "p90_us": 400.0, "p99_us": 1500.0, "max_us": 9000.0},
        "cpu": {"n": 900, "median_us": 150.0, "p90_us": 300.0, "p99_us": 800.0, "max_us": 2000.0},
        "featurize": {"n": 900, "median_us": 90.0},
        "predict": {"n": 900, "median_us": 60.0},
        "budget": {"n": 900, "median_us": 20.0},
        "other": {"n": 900, "median_us": 10.0},
    },
    "by_step_bucket": {
        "1-10": {"wall": {"n": 300, "median_us": 170.0, "p99_us": 900.0}, "synthetic_share": 0.0}
    },
    "by_format": {
        "swe-agent-traj": {"runs": 15, "wall": {"n": 450, "median_us": 190.0, "p99_us": 1100.0}}
    },
}


def _workspace(ws: Path, with_budget: bool = True, latency: bool = False) -> dict[str, list[int]]:
    """Writes the reports; returns per agent the halt step planted in each run (0 = never halted)."""
    rdir, fdir = ws / "reports" / "demo", ws / "features" / "demo"
    rdir.mkdir(parents=True)
    fdir.mkdir(parents=True)
    # alpha meets every target; beta misses halted accuracy (90 % < 95 %); the small agent misses it too
    agents = {LARGE[0]: _block(40, False, 0.3, acc=0.97), LARGE[1]: _block(40, False, 0.3)} | {
        a: _block(6, True, 0.6) for a in SMALL
    }
    prot = {
        "agents": agents,
        "pooled": _block(80, False, 0.3),
        "holdout_agents": LARGE,
        "mean_abs_resolve_rate_shift_pp": 0.5,
    }
    for b in [*agents.values(), prot["pooled"]]:  # priced run by run: each policy's own dollars
        b["dollars"] = {
            "usd_saved": 100.0 * b["steps_saved"],
            "total_usd": 100.0,
            "usd_saved_share": b["steps_saved"],
        }
        b["failure_only"] = {
            **_block(b["n_runs"], b["small_n"], 0.12),
            "dollars": {"usd_saved": 12.0, "total_usd": 100.0, "usd_saved_share": 0.12},
        }
    loao = {
        "bench": "demo",
        "threshold_selection": "inner-loao",
        "holdout_agents": LARGE,
        "small_agents": SMALL,
        "agents": agents,
        "pooled": prot["pooled"],
        # the planted halts at t = 1 are task skips: a policy that allows them (off by default)
        "config": {"min_halt_step": 1, "task_skips": True},
        "baselines": {"prior_only": _block(80, False, 0.25)},
        "warm_start_pooled": {"10%": _block(80, False, 0.28)},
        "protocols": {
            "doc": {"as_of": "prior as of each run's date"},
            "as_of": prot,
            "current_pool": prot,
            "no_prior": prot,
        },
    }
    (rdir / "loao.json").write_text(json.dumps(loao))
    rng = np.random.default_rng(0)
    rows, planted = [], {}
    for a, b in agents.items():
        planted[a] = []
        for r in range(b["n_runs"]):
            T = int(rng.integers(5, 30))
            halt = [0, 1, int(rng.integers(2, T))][r % 3]  # never / task skip / in-run
            planted[a].append(halt)
            y = r % 2
            for t in range(1, T):
                hit = halt and t >= halt
                ps = 0.97 if hit and y else 0.3
                pf = 0.99 if hit and not y else 0.3
                rows.append((a, f"{a}-{r}", t, T, y, ps, pf, 0.9, 0.95, a in SMALL, 3))
    pd.DataFrame(
        rows,
        columns=[
            "agent",
            "run_id",
            "t",
            "T",
            "y",
            "p_success",
            "p_failure",
            "tau_s",
            "tau_f",
            "small",
            "gate",  # every prefix open: an action read and the run's own evidence
        ],
    ).to_parquet(fdir / "loao_predictions.parquet", index=False)
    if with_budget:
        cov = {"model": {"0.8": 0.71, "0.9": 0.86}, "linear": {"0.8": 0.8, "0.9": 0.9}}
        dim = {
            "budget_B": 29.0,
            "agents": {
                a: {"n_runs": b["n_runs"], "coverage": cov, "small_n": b["small_n"]}
                for a, b in agents.items()
            },
            "pooled": {
                "n_runs": 80,
                "coverage": cov,
                "early_stop": {
                    "model": {
                        "n_runs": 80,
                        "saved_on_failed": 0.42,
                        "steps_saved_on_failed": 0.3,
                        "success_rate_cost_pp": 1.5,
                        "false_abort_rate": 0.02,
                    }
                },
            },
            "online": {"agents": {}, "pooled": {"coverage": {"0.8": 0.8}}},
            "runs_excluded_unknown": {},
        }
        (rdir / "budget.json").write_text(
            json.dumps({"protocol": "as_of", "dimensions": {"steps": dim}})
        )
        pricing = {a: {"source": "per-step", "total_usd": 100.0} for a in agents}
        pair = {
            "n_tasks": 40,
            "protocol": "as_of",
            "policies": {
                "always_cheap": {"total_cost_usd": 50.0, "resolve_rate": 0.3},
                "stop_on_predicted_failure": {
                    "total_cost_usd": 35.5,
                    "resolve_rate": 0.29,
                    "n_stopped": 9,
                },
            },
        }
        (rdir / "routing.json").write_text(
            json.dumps({"pricing": pricing, "pairs": {f"{LARGE[0]}->{LARGE[1]}": pair}})
        )
    (rdir / "ingest.json").write_text(json.dumps({"data_root": "/data/root/of/the/runs"}))
    if latency:
        (rdir / "latency.json").write_text(json.dumps(LATENCY))
        _png(rdir / "latency.png", (200, 30, 30))
        _png(rdir / "budget_intervals.png", (30, 200, 30))
        _png(rdir / "budget_late_recognition.png", (30, 30, 200))
    else:
        (rdir / "latency.json").write_text("{ not json")  # unreadable: a note, never a crash
    return planted


@pytest.fixture()
def ws(tmp_path):
    workspace.set_workspace(tmp_path)
    try:
        yield tmp_path
    finally:
        workspace.set_workspace(None)


def test_page_has_every_section_the_small_agents_flagged_and_plots_inline(ws):
    _workspace(ws)
    page = write_report("demo").read_text()
    for title in SECTIONS.values():
        assert f">{title}</h2>" in page
    for a in LARGE + SMALL:
        assert a in page
    # the small agent is flagged in the results rows of all three protocols
    assert (
        len(
            re.findall(
                r'<tr class="small"><td class="name">tiny-agent__model-z<span class="badge">small n=6',
                page,
            )
        )
        >= 3
    )
    assert page.count("data:image/png;base64,") >= 3  # frontier, calibration, halt histogram
    assert "http://" not in page and "https://" not in page  # self-contained: nothing fetched
    assert "latency.json: unreadable" in page
    assert "$14.50" in page  # routing: 50.00 - 35.50 saved
    # dollars: one figure per policy, the report's own (priced run by run), never an estimate from steps saved
    assert "≈" not in page and "$30.00 of $100.00 (30.0 %)" in page and "$12.00 (12.0 %)" in page
    summary = page.split('<section id="summary">')[1].split("</section>")[0]
    for row in (
        "benchmark pass (halt on both outcomes)",
        "failure-only live mode",
        "prior-only baseline",
        "warm start 10%",
    ):
        assert row in summary, row
    assert (
        "ablations: none" in summary and "Routing (routing.json)" in summary and "$14.50" in summary
    )


def test_the_summary_shows_each_ablation_as_evaluate_writes_it(ws):
    """An ablation row of loao.json (evaluation.protocols.ablation_row: mean_auroc, pooled halted accuracy and steps saved)."""
    _workspace(ws)
    path = ws / "reports" / "demo" / "loao.json"
    rep = json.loads(path.read_text())
    rep["ablations"] = [
        {
            "name": "no gold",
            "changes": {},
            "agents": {},
            "mean_abs_resolve_rate_shift_pp": 1.0,
            "pooled": {"halted_accuracy": 0.912, "steps_saved": 0.187},
            "mean_auroc": 0.8766,
        }
    ]
    path.write_text(json.dumps(rep))
    summary = (
        write_report("demo").read_text().split('<section id="summary">')[1].split("</section>")[0]
    )
    assert "<td>0.877</td><td>91.2 %</td><td>18.7 %</td>" in summary and "no gold" in summary


def test_halt_steps_are_the_planted_ones_split_at_task_skip(ws):
    planted = _workspace(ws)
    preds = Inputs("demo", ws / "reports" / "demo", ws / "features" / "demo").preds
    h = halt_steps(preds, min_t=1, task_skips=True)
    for a, steps in planted.items():
        assert h[h["agent"] == a]["t_halt"].tolist() == steps
    page = write_report("demo").read_text()
    n = len(planted[LARGE[0]])
    skip, inrun = (
        sum(1 for s in planted[LARGE[0]] if s == 1),
        sum(1 for s in planted[LARGE[0]] if s > 1),
    )
    assert (
        f"<td>{skip} ({round(100 * skip / n)} %)</td><td>{inrun} ({round(100 * inrun / n)} %)</td>"
        in page
    )


def test_missing_reports_say_which_command_writes_them(ws):
    _workspace(ws, with_budget=False)
    (ws / "reports" / "demo" / "latency.json").unlink()
    (ws / "features" / "demo" / "loao_predictions.parquet").unlink()
    page = write_report("demo").read_text()
    # issue 42: the remedy is an earlyeval verb with the workspace and the benchmark, never a make target
    assert "make " not in page
    for name, verb in (
        ("budget.json", "budget"),
        ("routing.json", "route"),
        ("sweep.csv", "sweep"),
        ("latency.json", "bench"),
        ("loao_predictions.parquet", "evaluate"),
    ):
        cmd = f"earlyeval --workspace {ws.resolve()} {verb} --bench demo"
        assert re.search(rf"not run: {re.escape(cmd)}[^<]*{re.escape(name)}", page), name
    summary = page.split('<section id="summary">')[1].split("</section>")[0]
    # the summary names the missing block's command
    assert re.search(r"not run: earlyeval [^<]* route --bench demo[^<]*routing.json", summary)
    assert "coarse: one point per agent" in page  # the fallback from loao.json's mean P(success)


def test_cli_writes_the_page_and_refuses_an_unknown_bench(ws):
    _workspace(ws)
    r = CliRunner().invoke(app, ["--workspace", str(ws), "report", "--bench", "demo"])
    assert r.exit_code == 0, r.output
    assert (ws / "reports" / "demo" / "report.html").stat().st_size > 10_000
    r = CliRunner().invoke(app, ["--workspace", str(ws), "report", "--bench", "nosuch"])
    assert r.exit_code == 2
    assert "benchmarks with reports: demo" in r.output


def chromium_screenshot(
    page: Path, png: Path, size: str = "1280,5200"
) -> subprocess.CompletedProcess:
    """Headless Chromium with the flags that work on a closed network (see the machine notes)."""
    profile = png.parent / f"chromium-profile-{os.getpid()}"
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--hide-scrollbars",
        f"--window-size={size}",
        f"--screenshot={png}",
        page.resolve().as_uri(),
    ]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="/usr/bin/chromium absent (apt-get install chromium to render the page)",
)
def test_page_renders_in_headless_chromium(ws, tmp_path):
    from PIL import Image

    _workspace(ws)
    page = write_report("demo")
    png = Path(os.environ.get("EARLYEVAL_REPORT_SCREENSHOT") or tmp_path / "report.png")
    r = chromium_screenshot(page, png)
    assert r.returncode == 0, r.stderr[-2000:]
    assert png.exists() and png.stat().st_size > 50_000, "screenshot missing or nearly empty"
    img = np.asarray(Image.open(png).convert("RGB"))
    assert img.shape[0] >= 5000 and img.shape[1] == 1280
    # the page drew something: many distinct colours (plots, badges), not a blank or error page
    assert len(np.unique(img.reshape(-1, 3)[::37], axis=0)) > 200
    # the DOM Chromium built holds every section heading and every held-out agent's name
    profile = tmp_path / "dom-profile"
    dom = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    for title in SECTIONS.values():
        assert f">{title}</h2>" in dom
    for a in LARGE + SMALL:
        assert a in dom
    assert dom.count("<img") >= 3


@pytest.mark.integration
def test_real_halt_steps_reproduce_loao_json():
    """On the real reports: the halts the page derives from the predictions are the ones evaluate counted."""
    from earlyeval.config.workspace import features_dir, reports_dir

    rdir, fdir = reports_dir("swebench", create=False), features_dir("swebench")
    if not (rdir / "loao.json").exists() or not (fdir / "loao_predictions.parquet").exists():
        pytest.skip(
            "needs reports/swebench/loao.json and features/swebench/loao_predictions.parquet (make evaluate)"
        )
    inp = Inputs("swebench", rdir, fdir)
    config = inp.loao["config"]
    h = halt_steps(
        inp.preds, int(config.get("min_halt_step", 1)), bool(config.get("task_skips", False))
    )
    for agent, b in inp.loao["agents"].items():
        g = h[h["agent"] == agent]
        assert len(g) == b["n_runs"], agent
        assert (g["t_halt"] > 0).mean() == pytest.approx(b["halted_fraction"], abs=1e-12), agent
        saved = np.where(g["t_halt"] > 0, g["T"] - g["t_halt"], 0)
        skip = (g["t_halt"] > 0) & (g["t_halt"] <= 1)
        assert saved[skip.to_numpy()].sum() / g["T"].sum() == pytest.approx(
            b["steps_saved_task_skip"], abs=1e-12
        ), agent


def test_a_bench_with_only_a_broken_loao_json_still_gets_a_page(ws):
    rdir = ws / "reports" / "demo"
    rdir.mkdir(parents=True)
    (rdir / "loao.json").write_text("[1, 2]")  # valid JSON, wrong shape
    page = write_report("demo").read_text()
    for title in SECTIONS.values():
        assert f">{title}</h2>" in page
    assert "loao.json: not a JSON object" in page
    assert re.search(r"not run: earlyeval --workspace \S+ budget --bench demo", page)
    assert re.search(r"not run: earlyeval --workspace \S+ evaluate --bench demo", page)


# ------------------------------------------------------------ issue 22: provenance, tables, targets, calibration, --out


def test_provenance_line_names_version_commit_model_data_and_protocol(ws):
    from earlyeval import __version__

    _workspace(ws)
    mdir = ws / "models" / "demo"
    mdir.mkdir(parents=True)
    (mdir / "manifest.json").write_text(json.dumps({"content_hash": "ab" * 32}))
    page = write_report("demo").read_text()
    prov = re.search(r'<p class="provenance">(.*?)</p>', page).group(1)
    assert f"<b>earlyeval</b> {__version__}" in prov and "<b>page made</b> 20" in prov
    assert re.search(r"<b>git commit</b> ([0-9a-f]{12}(\+dirty)?|not a git checkout)", prov)
    assert "<b>model content hash</b> " + "ab" * 8 in prov
    assert "<b>data root</b> /data/root/of/the/runs (as ingested)" in prov
    assert (
        "<b>protocol</b> leave-one-agent-out; headline as_of (also current_pool, no_prior)" in prov
    )
    (mdir / "manifest.json").unlink()
    assert "no model (earlyeval train --bench demo" in write_report("demo").read_text()


def test_latency_and_budget_are_tables_with_their_pngs(ws):
    _workspace(ws, latency=True)
    page = write_report("demo").read_text()
    assert "<pre>" not in page
    lat = page[page.index('<section id="latency">') :]
    assert (
        "<table>" in lat
        and "observe() wall" in lat
        and "By step (wall)" in lat
        and "By format (wall)" in lat
    )
    # p99 over 1000 µs
    assert (
        '<span class="off">1,500 µs</span>' in lat and '<span class="off">180 µs</span>' not in lat
    )
    bud = page[page.index('<section id="budget">') : page.index('<section id="latency">')]
    assert bud.count("data:image/png;base64,") == 2 and "remaining-budget intervals" in bud
    assert lat.count("data:image/png;base64,") == 1
    assert (
        "Early stop on" in bud
        and "<td>42.0 %</td><td>30.0 %</td><td>1.50 pp</td><td>2.0 %</td>" in bud
    )


def test_missing_pngs_are_named_with_their_command(ws):
    _workspace(ws)
    page = write_report("demo").read_text()
    assert re.search(
        r"budget_intervals.png: not made yet \(earlyeval --workspace \S+ budget --bench demo", page
    )


def test_target_misses_are_marked_and_summarised(ws):
    _workspace(ws)
    page = write_report("demo").read_text()
    res = page[page.index('<section id="results">') : page.index('<section id="frontier">')]
    # beta misses halted accuracy in each of the 3 protocol tables, the small agent too, and the pooled row (90 %)
    marked = re.findall(
        r'<td class="miss" title="misses the target: halted accuracy ≥ 95 % \(here 90.00 %\)">90.0 % ✗</td>',
        res,
    )
    assert len(marked) == 3 * 3
    assert '<td class="miss"' not in re.search(
        rf"<tr><td class=\"name\">{LARGE[0]}</td>.*?</tr>", res
    ).group(0)
    summary = re.search(r'<div class="targets">(.*?)</div>', res).group(1)
    assert (
        "1 of 2 agents meet all" in summary
        and f"<b>{LARGE[1]}</b>: misses halted accuracy ≥ 95 % (90.00 %)" in summary
    )
    assert LARGE[0] not in summary


def test_targets_live_in_one_place():
    from earlyeval.report import targets

    assert [t.text for t in targets.TARGETS] == [
        "AUROC ≥ 0.90",
        "halted accuracy ≥ 95 %",
        "≥ 20 % of steps saved",
        "at least half of the steps saved in-run",
        "|shift| ≤ 1 pp",
    ]
    ok = {
        "auroc_success": 0.9,
        "halted_accuracy": 0.95,
        "steps_saved": 0.2,
        "steps_saved_in_run": 0.1,
        "resolve_rate_shift_pp": -1.0,
    }
    assert targets.misses(ok) == {}
    bad = {
        "auroc_success": 0.89,
        "halted_accuracy": 0.949,
        "steps_saved": 0.3,
        "steps_saved_in_run": 0.1,
        "resolve_rate_shift_pp": 1.2,
    }
    assert set(targets.misses(bad)) == {
        "auroc_success",
        "halted_accuracy",
        "steps_saved_in_run",
        "resolve_rate_shift_pp",
    }
    assert targets.misses({"auroc_success": None}) == {}  # unknown is not a miss
    here = Path(targets.__file__).parent
    src = "".join(p.read_text() for p in [here / "report_page.py", *sorted(here.glob("page_*.py"))])
    # no second copy of a target
    assert "0.95" not in src and "0.90" not in src and "> 0.05" not in src


def test_calibration_note_per_agent_flags_large_gaps(ws):
    _workspace(ws)
    inp = Inputs("demo", ws / "reports" / "demo", ws / "features" / "demo")
    df = inp.preds
    page = write_report("demo").read_text()
    cal = page[page.index('<section id="calibration">') : page.index('<section id="halts">')]
    notes = re.search(r'<ul class="calnotes">(.*?)</ul>', cal).group(1)
    for a in LARGE + SMALL:
        g = df[df["agent"] == a]
        w = 1.0 / g.groupby("run_id")["t"].transform("size").to_numpy(float)
        mp, obs = np.average(g["p_success"], weights=w), np.average(g["y"], weights=w)
        line = re.search(rf"<li>(<span class=\"gap\">)?{re.escape(a)}.*?</li>", notes).group(0)
        assert f"mean P(success) {mp:.2f} vs {obs:.2f} observed" in line, line
        assert ('class="gap"' in line) == (abs(mp - obs) > 0.10), line


def test_out_accepts_a_directory(ws, tmp_path):
    _workspace(ws)
    for out in (str(tmp_path / "new-dir") + "/", str(tmp_path)):
        r = CliRunner().invoke(
            app, ["--workspace", str(ws), "report", "--bench", "demo", "--out", out]
        )
        assert r.exit_code == 0 and r.exception is None, r.output
        assert (Path(out) / "report.html").stat().st_size > 10_000
    r = CliRunner().invoke(
        app,
        ["--workspace", str(ws), "report", "--bench", "demo", "--out", str(tmp_path / "page.html")],
    )
    assert r.exit_code == 0 and (tmp_path / "page.html").is_file()


@pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="/usr/bin/chromium absent (apt-get install chromium to render the page)",
)
def test_nothing_is_wider_than_the_page_in_chromium(ws, tmp_path):
    """Chromium lays the page out at 1000 px: the document does not scroll sideways (wide tables scroll in their box)."""
    _workspace(ws, latency=True)
    page = write_report("demo").read_text()
    probe = (
        "<script>window.addEventListener('load',()=>{const d=document.documentElement;"
        "document.body.setAttribute('data-overflow',String(d.scrollWidth-d.clientWidth));});</script></body>"
    )
    test_page = tmp_path / "probe.html"
    test_page.write_text(page.replace("</body>", probe))
    profile = tmp_path / "dom-profile"
    dom = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--window-size=1000,2000",
            "--dump-dom",
            test_page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    m = re.search(r'data-overflow="(-?\d+)"', dom)
    assert m, dom[-500:]
    assert int(m.group(1)) <= 0
    assert '<p class="provenance">' in dom and 'class="miss"' in dom


def test_rules_and_loso_sections_show_the_reports_own_blocks(ws):
    """The rule / other rule / oracle table, failure-only against both halts with their dollars, and
    leave-one-scaffold-out come from loao.json's own blocks; an older report without them gets notes, not a crash."""
    from earlyeval.report.page_rules import section_loso, section_rules

    _workspace(ws)
    path = ws / "reports" / "demo" / "loao.json"
    rep = json.loads(path.read_text())
    a = LARGE[0]
    rep["agents"][a]["failure_only"] = {
        **_block(40, False, 0.123),
        "dollars": {"usd_saved": 7.25, "total_usd": 50.0, "usd_saved_share": 0.145},
    }
    rep["agents"][a]["dollars"] = {"usd_saved": 12.5, "total_usd": 50.0, "usd_saved_share": 0.25}
    rep["agents"][a]["other_rule"] = {
        **_block(40, False, 0.077),
        "thresholds": {"success": 0.93, "failure": 0.99},
    }
    rep["agents"][a]["oracle_frontier_steps_saved"] = 0.456
    rep["agents"][a]["threshold_selection"] = {
        "rule": "agent-quantile",
        "alpha": 0.02,
        "risk": "mass",
        "delta": 0.15,
        "violations_allowed": 0,
        "guarantee": "P(mass > 0.02) <= 1/3",
    }
    rep["config"]["threshold_rule"] = "agent-quantile"
    rep["protocols"]["no_prior"]["pooled"]["guarantee_held"] = {
        "agents": 2,
        "held": {"success": 2, "failure": 1},
        "held_both": 1,
        "promised_violation_at_most": 1 / 3,
    }
    rep["pooled"]["share_of_oracle_savings"] = 0.789
    rep["protocols"]["as_of"]["leave_one_scaffold_out"] = {
        "scaffold-s": {
            "agents": {a: _block(40, False, 0.222)},
            "pooled": _block(40, False, 0.222),
            "thresholds": {"success": 0.85, "failure": 0.94},
        }
    }
    path.write_text(json.dumps(rep))
    inp = Inputs("demo", ws / "reports" / "demo", ws / "features" / "demo")
    rules, loso = section_rules(inp), section_loso(inp)
    assert "$7.25 (14.5 %)" in rules and "$12.50 (25.0 %)" in rules and "$50.00" in rules
    assert "12.3 %" in rules and "0.93 / 0.99" in rules and "45.6 %" in rules and "78.9 %" in rules
    assert (
        "P(mass &gt; 0.02) &lt;= 1/3" in rules
        and "at most 0.02 (mass) on all but 0 of the inner agents" in rules
    )
    assert (
        "How it held (no_prior): the success side on 2 of 2 held-out agents, the failure side on 1 of 2, both on 1"
        in rules
    ) and "How it held (as_of)" not in rules  # a protocol without the tally says nothing of it
    assert "scaffold-s" in loso and "22.2 %" in loso and "0.85 / 0.94" in loso
    del rep["protocols"]["as_of"]["leave_one_scaffold_out"]
    path.write_text(json.dumps(rep))
    assert "no leave-one-scaffold-out" in section_loso(
        Inputs("demo", ws / "reports" / "demo", ws / "features" / "demo")
    )


def test_the_pass_section_shows_each_agents_passes_beside_the_static_model(ws):
    """loao.json's pass blocks (evaluation.pass_sim.pass_block / pass_pooled) become one row per agent and W, with
    the gain over the static model in points, and the savings-by-fifth plot; none is a note, not an empty table."""
    _workspace(ws)
    path = ws / "reports" / "demo" / "loao.json"
    rep = json.loads(path.read_text())
    page = write_report("demo").read_text()
    assert "no benchmark-pass simulation in this loao.json" in page.split('<section id="pass">')[1]
    blk = {
        "halted_accuracy": 0.975,
        "steps_saved": 0.42,
        "steps_saved_task_skip": 0.30,
        "steps_saved_in_run": 0.12,
        "audited_share": 0.1,
        "threshold_moves": [1, 0, 2],
        "steps_saved_by_fifth_of_pass": [0.3, 0.4, 0.45, 0.5, 0.45],
    }
    for a in LARGE:
        rep["agents"][a]["pass"] = {
            "seeds": [0, 1, 2],
            "audit_share": 0.1,
            "pass_features": True,
            "W=1": blk,
            "W=8": blk,
        }
    rep["pass_pooled"] = {"W=1": blk, "W=8": blk}
    path.write_text(json.dumps(rep))
    section = (
        write_report("demo").read_text().split('<section id="pass">')[1].split("</section>")[0]
    )
    static = rep["agents"][LARGE[0]]["steps_saved"]
    gain = f"{100 * (0.42 - static):+.1f} pp"
    assert section.count(
        "<td>97.5 %</td><td>42.0 %</td><td>30.0 %</td><td>12.0 %</td><td>10.0 %</td><td>3</td>"
        f"<td>{gain}</td>"
    ) == 2 * (len(LARGE) + 1)  # each agent and the pooled row, per W
    assert "pooled (large held-out agents)" in section and "data:image/png;base64," in section
    # the pooled prior-only baseline beside it
    assert "pass features on" in section and "25.0 %" in section
