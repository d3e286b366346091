"""The CLI follows click's conventions: --version, -h/--help everywhere, help on every option, usage errors
as one line with exit 2 listing the valid choices, library warnings into the log, one progress bar."""

from __future__ import annotations

import io
import json
import logging
import warnings

import pytest
import typer
from typer.testing import CliRunner

from earlyeval import __version__
from earlyeval.app.cli import app
from earlyeval.app.options import Bar
from earlyeval.config.catalog import available_benches
from earlyeval.ingest import FORMATS

COMMAND = typer.main.get_command(app)


def _commands():
    return sorted(COMMAND.commands.items())


def invoke(*args, **kw):
    return CliRunner().invoke(app, list(args), **kw)


def test_every_option_and_argument_has_help():
    missing = []
    for where, cmd in [("<root>", COMMAND), *_commands()]:
        assert (cmd.help or "").strip(), f"{where}: no help text"
        for p in cmd.params:
            if not (getattr(p, "help", None) or "").strip():
                missing.append(f"{where} {p.opts}")
    assert not missing, missing
    assert len(_commands()) >= 10  # the walk saw the verbs (ingest ... formats)


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_flags_on_every_command(flag):
    r = invoke(flag)
    assert r.exit_code == 0 and "Usage:" in r.output
    for name, _ in _commands():
        r = invoke(name, flag)
        assert r.exit_code == 0, (name, r.output)
        assert r.output.startswith("Usage:") and f" {name} " in r.output.splitlines()[0] + " ", name


def test_version():
    r = invoke("--version")
    assert r.exit_code == 0 and r.output.strip() == f"earlyeval {__version__}"


def _error_line(r) -> str:
    errs = [l for l in r.output.splitlines() if l.startswith("Error:")]
    assert len(errs) == 1, r.output
    assert "Traceback" not in r.output and "╭" not in r.output  # no traceback, no rich box
    return errs[0]


def test_bad_bench_lists_the_available_ones():
    for verb in ("ingest", "train", "evaluate", "sweep", "budget", "export"):
        r = invoke(verb, "--bench", "nosuchbench")
        assert r.exit_code == 2, (verb, r.output)
        line = _error_line(r)
        assert "'nosuchbench'" in line and all(b in line for b in available_benches()), line


def test_bad_format_lists_the_valid_ones(tmp_path):
    r = invoke("score", "-m", str(tmp_path), "--runs", str(tmp_path), "--format", "nope")
    assert r.exit_code == 2
    line = _error_line(r)
    assert all(f in line for f in FORMATS.known()), line
    r = invoke("export", "--bench", "swebench", "--format", "parquet")
    assert r.exit_code == 2 and "valid: atif" in _error_line(r)


def test_bad_paths_and_thresholds_are_one_line_errors(tmp_path):
    cases = [
        (["--runs", str(tmp_path / "nope"), "-m", str(tmp_path)], "no such file or folder"),
        (["--runs", str(tmp_path), "-m", str(tmp_path / "nomodel")], "not a model directory"),
        (["--runs", str(tmp_path), "-m", str(tmp_path), "--thresholds", "0.9,1.5"], "(0.5, 1]"),
        (["--runs", str(tmp_path), "-m", str(tmp_path), "--as-of", "yesterday"], "YYYY-MM-DD"),
    ]
    for args, text in cases:
        r = invoke("score", "-f", "atif", *args)
        assert r.exit_code == 2 and text in _error_line(r), (args, r.output)


def test_formats_have_descriptions_and_json():
    r = invoke("formats")
    assert r.exit_code == 0
    lines = r.output.strip().splitlines()
    assert [l.split()[0] for l in lines] == sorted(FORMATS.known())
    assert all(len(l.split(None, 1)) == 2 and len(l.split(None, 1)[1]) > 10 for l in lines), lines
    d = json.loads(invoke("formats", "--json").output)
    assert sorted(d) == sorted(FORMATS.known()) and all(v.strip() for v in d.values())


def test_json_flag_on_every_table_verb():
    for verb in ("ingest", "evaluate", "score", "bench", "transfer", "formats"):
        opts = [o for p in COMMAND.commands[verb].params for o in p.opts]
        assert "--json" in opts, verb


def test_library_warnings_go_to_the_log(monkeypatch, caplog):
    from earlyeval.workflows import sweep as sweep_mod

    def fake(bench, progress=None):
        warnings.warn("a noisy library warning", RuntimeWarning)
        warnings.warn("another one", UserWarning)
        return {"sweep": "x.csv"}

    monkeypatch.setattr(sweep_mod, "sweep_bench", fake)
    shown = warnings.showwarning
    with warnings.catch_warnings(), caplog.at_level(logging.DEBUG, logger="py.warnings"):
        warnings.simplefilter("always")
        r = invoke("sweep", "--bench", "swebench")
        assert r.exit_code == 0, r.output
        assert "noisy" not in r.output and "2 library warning(s) hidden" in r.stderr
        recs = [x for x in caplog.records if x.name == "py.warnings"]
        assert (
            len(recs) == 2
            and all(x.levelno == logging.DEBUG for x in recs)
            and "a noisy library warning" in recs[0].getMessage()
        )
        caplog.clear()
        r = invoke("sweep", "--bench", "swebench", "-v")
        assert r.exit_code == 0 and "hidden" not in r.stderr
        recs = [x for x in caplog.records if x.name == "py.warnings"]
        # -v: shown as warnings
        assert len(recs) == 2 and all(x.levelno == logging.WARNING for x in recs)
    assert warnings.showwarning is shown  # restored when the command ends


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_one_progress_bar_with_its_planned_total_quiet_off_a_terminal(capsys):
    from earlyeval.evaluation.fit_plan import FITS_PLANNED

    term = _Terminal()
    bar = Bar("b", "k", "evaluate", verbose=False, file=term)
    assert bar.bar.total is None  # no plan yet
    bar(f"{FITS_PLANNED}120")
    assert bar.bar.total == 120  # the plan's total: an ETA from the first fit on
    for i in range(120):
        bar(f"fit without ['agent-{i}']")
    bar("sweep warm_start_10")
    bar.close(ok=True)
    drawn = term.getvalue()
    # one bar with its total, not 120 lines
    assert "fit without" not in drawn and "120/120" in drawn
    # stderr is not a terminal here (captured): the bar keeps count but draws nothing
    quiet = Bar("b", "k", "evaluate", verbose=False)
    quiet(f"{FITS_PLANNED}3")
    quiet("fit without ['x']")
    quiet.close(ok=False)
    assert (quiet.total, quiet.n) == (3, 1) and "fit" not in capsys.readouterr().err
    loud = Bar("b", "k", "evaluate", verbose=True, file=term)
    loud("fit without ['x']")
    loud.close(ok=False)
    assert "fit without ['x']" in term.getvalue()  # the detail, at verbose level


class _Stop(Exception):
    pass


def test_evaluate_uses_the_bar(monkeypatch, tmp_path):
    from earlyeval.app.stages import evaluate as evaluate_stage
    from earlyeval.config import workspace

    monkeypatch.setattr(workspace, "features_dir", lambda bench: tmp_path / bench)

    seen = []

    def fake(bench, cfg, root, progress=None, ablations=None, backend=None):
        seen.append(progress)
        progress("fits planned: 50")
        for i in range(50):
            progress(f"fit without ['a{i}']")
        raise _Stop("the rest of evaluate is not under test")

    monkeypatch.setattr(evaluate_stage, "evaluate_bench", fake)
    r = invoke("evaluate", "--bench", "swebench", "--no-ablations")
    assert isinstance(r.exception, _Stop) and "fit without" not in r.output
    (bar,) = seen
    assert isinstance(bar, Bar) and (bar.total, bar.n) == (50, 50)
    assert "fit" not in r.stderr  # the runner's stderr is no terminal: no bar drawn


def test_user_errors_inside_a_verb_are_one_line(tmp_path):
    r = invoke("--workspace", str(tmp_path), "export", "--bench", "swebench")
    assert r.exit_code == 2 and r.stdout == ""
    assert (
        r.stderr.count("\n") == 1
        and r.stderr.startswith("error: ")
        and "earlyeval ingest --bench swebench" in r.stderr
    )
    r = invoke("--workspace", str(tmp_path), "sweep", "--bench", "swebench")
    assert (
        r.exit_code == 2
        and r.stderr.startswith("error: ")
        and "earlyeval evaluate --bench swebench" in r.stderr
    )


def test_json_output_is_the_report_alone(tmp_path, monkeypatch):
    from earlyeval.app.stages import ingest as ingest_stage

    rep = {
        "runs": [
            {
                "run": "r",
                "trajectories": 3,
                "resolved": 1,
                "unresolved": 2,
                "not_in_label_list": 0,
                "unlabelled": 0,
                "skipped": [],
            }
        ]
    }
    (tmp_path / "ingest.json").write_text(json.dumps(rep))
    monkeypatch.setattr(
        ingest_stage,
        "ingest_bench",
        lambda bench, root, backend=None: {"report": tmp_path / "ingest.json"},
    )
    r = invoke("ingest", "--bench", "swebench", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout) == rep and "Outputs:" in r.stderr
    r = invoke("ingest", "--bench", "swebench")
    assert (
        r.exit_code == 0
        and "columns: traj = " in r.stdout
        and "nolist = " in r.stdout
        and "unlab = " in r.stdout
    )
