"""The options of ``earlyeval score`` (``verbs.score``), named here so that the verb's signature stays a list of
what it takes."""

from __future__ import annotations

import typer

from earlyeval.app.cli_support import LABEL_FORMATS
from earlyeval.app.options import (
    check_as_of,
    check_format,
    check_halt_on_option,
    check_thresholds,
    check_warm_rule,
    check_what_if,
)

SCORE_MODEL = typer.Option(
    ..., "--model", "-m", help="A model directory written by `earlyeval train`."
)
SCORE_RUNS = typer.Option(..., "--runs", help="A folder (or file) of completed runs.")
SCORE_FORMAT = typer.Option(
    "auto",
    "--format",
    "-f",
    callback=check_format,
    help="Native format of the runs (see `earlyeval formats`); auto: read from the files "
    "(refused, naming the candidates, when none or several formats read them).",
)
SCORE_OUT = typer.Option(
    None,
    "--out",
    help="Output folder (default reports/score/<runs folder name>); "
    "one holding a scoring of other runs is refused without --force.",
)
SCORE_FORCE = typer.Option(
    False, "--force", help="Replace a score.json of other runs in the output folder."
)
SCORE_CROSS_BENCH = typer.Option(
    False,
    "--cross-bench",
    help="Score runs of another benchmark than the model's (refused otherwise: "
    "the numbers would be a transfer experiment).",
)
SCORE_LABELS = typer.Option(
    None,
    "--labels",
    help="Optional label source, FORMAT:GLOB[,KEY=VALUE...] relative to --runs, with a catalog label "
    "entry's options (e.g. sb-cli:'*.json', harness-lists:'results.json*',trailing_commas=true; formats: "
    + LABEL_FORMATS
    + ").",
)
SCORE_AGENT = typer.Option(
    None, "--agent", help="Agent name to report the runs under (default: the folder name)."
)
SCORE_AS_OF = typer.Option(
    None,
    "--as-of",
    callback=check_as_of,
    help="Task prior from public submissions dated strictly before YYYY-MM-DD "
    "('all': every submission, today's pool; default: each run's own date, "
    "its catalog's or its files', with a warning for runs that have none).",
)
SCORE_SAME_AGENT = typer.Option(
    None,
    "--same-agent",
    help="Regex naming public submissions of this same agent, left out of the prior "
    "(matched on name/display name/models lower-cased, non-alphanumerics removed).",
)
SCORE_WARM_START = typer.Option(
    0,
    "--warm-start",
    help="K labelled runs completed first; each threshold is lowered as far as they certify "
    "it (exact binomial tests, see --warm-rule) and raised only when they show it fails.",
)
SCORE_WARM_RULE = typer.Option(
    "certify",
    "--warm-rule",
    callback=check_warm_rule,
    help="certify (default: may lower or raise, with a stated guarantee) or check "
    "(issue 14's rule: may only raise).",
)
SCORE_THRESHOLDS = typer.Option(
    None,
    "--thresholds",
    callback=check_thresholds,
    help="Halt with TS,TF (P(success) >= TS or P(failure) >= TF, each in (0.5, 1]) "
    "instead of the model's own thresholds; recorded in score.json.",
)
SCORE_WHAT_IF = typer.Option(
    False,
    "--what-if",
    help="Also print (and write into score.json) the savings/accuracy frontier of these runs "
    "over a grid of thresholds (default grid: the model's own selection grid).",
)
SCORE_WHAT_IF_GRID = typer.Option(
    None,
    "--what-if-grid",
    callback=check_what_if,
    help="The --what-if grid: a comma list used for both TS and TF "
    "(10 = never halt that way); implies --what-if.",
)
SCORE_CSV = typer.Option(
    None, "--csv", help="Per-run CSV path (default per_run.csv beside score.json)."
)
SCORE_TASKS = typer.Option(
    None,
    "--tasks",
    help="The task table (a tasks.parquet of `earlyeval ingest`); default: the model's "
    "benchmark's, beside the model directory's workspace or in --workspace / "
    "$EARLYEVAL_HOME (never the current folder); none for a model that "
    "needs one is an error.",
)
SCORE_HALT_ON = typer.Option(
    "both",
    "--halt-on",
    callback=check_halt_on_option,
    help="Which predicted outcomes halt: both (a benchmark pass), failure (what a live "
    "adapter, which defaults to it, saves) or success; recorded in score.json.",
)
SCORE_SEED = typer.Option(
    0, "--seed", help="Seed of the warm-start draw, and of the --pass order and audit sample."
)
SCORE_PASS = typer.Option(
    False,
    "--pass",
    help="Replay the folder as one benchmark pass (docs/monitor.md): runs shuffled by "
    "--seed, --pass-workers simulated workers, each run's monitor from the runs "
    "finished before it started; an audit sample never halted; a 'pass' block.",
)
SCORE_AUDIT_SHARE = typer.Option(
    0.10,
    "--audit-share",
    min=0.0,
    max=1.0,
    help="With --pass: the share of runs audited (never halted; a labelled "
    "audit run certifies the thresholds as the pass goes).",
)
SCORE_PASS_WORKERS = typer.Option(
    1,
    "--pass-workers",
    min=1,
    help="With --pass: the parallel workers simulated (a run's duration is its "
    "steps, or its steps until it halts).",
)
SCORE_REQUIRE_SIGNATURE = typer.Option(
    False,
    "--require-signature",
    help="Refuse a model directory not signed with the key in $EARLYEVAL_MODEL_KEY (or the file "
    "$EARLYEVAL_MODEL_KEY_FILE): an edited, re-hashed directory is refused (docs/monitor.md).",
)
