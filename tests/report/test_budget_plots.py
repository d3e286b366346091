"""The budget figures are readable: a grid of panels, every panel drawn, full titles, one legend per figure,
ticks of at least 10 pt (synthetic runs; one agent has no token counts, so a run of it would leave a cell empty)."""

from __future__ import annotations

import pytest
from _budget_data import budget_cfgs, budget_runs

from earlyeval.evaluation.budget_loao import run_budget
from earlyeval.evaluation.dataset import load_dataset
from earlyeval.report.budget import budget_report
from earlyeval.report.budget_plots import (
    _example_runs,
    intervals_figure,
    late_recognition_figure,
    plot_intervals,
    plot_late_recognition,
)


@pytest.fixture(scope="module")
def run():
    cfg, bcfg = budget_cfgs()
    bcfg = bcfg.replace(n_example_runs=8)  # more than the runs that have every dimension
    ds = load_dataset("tau2", ["behaviour"], trajs=budget_runs(), tasks={}, progress=False)
    return run_budget(ds, cfg, bcfg)


def _tick_sizes(ax) -> list[float]:
    return [t.get_fontsize() for t in ax.get_xticklabels() + ax.get_yticklabels()]


def test_intervals_every_cell_drawn_full_titles_one_legend(run):
    dims = ["steps", "output_tokens"]
    picks = _example_runs(run, dims, 8)
    prow = run.ds.prefixes["run"].to_numpy()
    # a resolved and a failed run of alpha, beta, gamma; delta has no token counts, so none of its runs
    assert len(picks) == 6 and {run.ds.trajs[r].agent for r in picks} == {"alpha", "beta", "gamma"}
    for d in dims:
        predicted = set(prow[run.dims[d].outer >= 0].tolist())
        assert all(r in predicted and run.targets[d].run_known[r] for r in picks)
    fig = intervals_figure(run, dims)
    axes = fig.get_axes()
    assert len(axes) == 12 and all(ax.axison and ax.has_data() for ax in axes)
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in axes)
    for ax, r in zip(axes[:6], picks):
        # the full name, never cut
        assert run.ds.trajs[r].agent in ax.get_title().replace("\n", "__")
    assert min(s for ax in axes for s in _tick_sizes(ax)) >= 10


def test_late_recognition_is_a_grid_with_readable_ticks(run, tmp_path):
    rep = budget_report(run)
    dims = [d for d in rep["dimensions"] if rep["dimensions"][d]["pooled"].get("n_runs")]
    fig = late_recognition_figure(rep)
    drawn = [ax for ax in fig.get_axes() if ax.axison]
    assert len(drawn) == len(dims) >= 2 and all(ax.has_data() for ax in drawn)
    # two columns, not a strip
    assert {ax.get_subplotspec().colspan.start for ax in drawn} == {
        0,
        1,
    }
    w, h = fig.get_size_inches()
    assert w / h < 2.5
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in drawn)
    assert min(s for ax in drawn for s in _tick_sizes(ax)) >= 10
    assert [t.get_text() for t in drawn[0].get_xticklabels()][:2] == ["0–10", "10–20"]
    # the files are written
    for p in (
        plot_late_recognition(rep, tmp_path / "late.png"),
        plot_intervals(run, tmp_path / "iv.png"),
    ):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
