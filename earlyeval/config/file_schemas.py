"""The schemas of earlyeval's settings files, built from ``config.schema``'s validators: benchmark catalogs
(``earlyeval/catalogs/*.toml``, ``<workspace>/data/<bench>.toml``) and model manifests (``manifest.json``).
The adapter block and the train/evaluate settings are records (``config.monitor_config``, ``config.eval_config``).
"""

from __future__ import annotations

from earlyeval.config.schema import (
    HEX64,
    NAME,
    PLUGIN,
    PROPORTION,
    REGEX,
    TEXT,
    THRESHOLD,
    Any_,
    Bool,
    Choice,
    Date,
    Glob,
    Int,
    ListOf,
    Num,
    OneOf,
    Str,
    Table,
    Validator,
)

# ------------------------------------------------------------------ catalogs

PRICE = Table(
    {"source": NAME, "usd_per_step": Num(0.0, 1e6), "basis": Any_()},
    what="a price table {source, usd_per_step}",
)

# keys an inline or file label entry may carry besides format and path (read by the label readers)
# resolved-submissions: which submission's list
LABEL_OPTIONS: dict[str, Validator] = {
    "success_min_reward": PROPORTION,
    "reward_key": NAME,
    "trailing_commas": Bool(),
    "submission": NAME,
}
# every label format a catalog may name (their readers: ingest.labels.READERS; "inline": the run files carry
# their own outcome): checked at load, so a misspelt format is an error naming its key, not unlabelled runs
LABEL_FORMATS = (
    "inline",
    "sb-cli",
    "instance-reports",
    "harness-lists",
    "resolved-list",
    "openhands-md",
    "csv-summary",
    "resolved-submissions",
)
LABEL = Table(
    {
        "format": Choice(LABEL_FORMATS),
        "path": OneOf((Glob(), Str(pattern=r"", what="empty"))),
        **LABEL_OPTIONS,
    },
    required=("format",),
    what="a label table {format, path}",
)
LABELS = OneOf((LABEL, ListOf(LABEL)))

# run keys a format reads from its catalog entry (``RunSpec.options``): documented here, so a typo is an error
RUN_OPTIONS: dict[str, Validator] = {
    # regexes naming this agent's own public submissions (features.prior)
    "prior_match": ListOf(REGEX, unique=True),
    "success_min_reward": PROPORTION,  # graded rewards: success iff reward >= this (ingest.chat)
    "reward_key": NAME,  # ATIF: which reward of verifier/reward.json decides
    "trailing_commas": Bool(),
    "domain": TEXT,  # tau2: the domain of a result file (metadata)
    "user_model": TEXT,  # tau2: the user simulator's model (metadata)
    "options": Table(
        extra=Any_(), what="a table of format-specific options"
    ),  # a plug-in format's own keys
}
RUN_FIELDS: dict[str, Validator] = {
    "name": NAME,
    "folder": NAME,
    "agent": NAME,
    "scaffold": TEXT,
    "model": TEXT,
    "format": PLUGIN,
    "split": TEXT,
    "glob": Glob(),
    "labels": LABELS,
    "public_submissions": ListOf(NAME, unique=True),
    "small": Bool(),
    "price": PRICE,
    "date": Date(),
    **RUN_OPTIONS,
}
RUN = Table(RUN_FIELDS, required=("folder", "agent", "format"), what="a [[runs]] table")
DEFAULTS = Table(RUN_FIELDS, what="a [defaults] table")

TASKS = Table(
    {"format": NAME, "path": NAME, "split": TEXT},
    required=("format", "path"),
    what="a [[tasks]] table",
)
CATALOG = Table(
    {
        "bench": Str(
            nonempty=True,
            pattern=r"[A-Za-z0-9][A-Za-z0-9_.\-]*",
            what="a benchmark name (letters, digits, _ . -)",
        ),
        "families": ListOf(PLUGIN, nonempty=True, unique=True),
        "settings": Table(
            extra=Any_(), what="a [settings] table"
        ),  # each key: config.eval_config.EvalConfig
        "tasks": ListOf(TASKS),
        "priors": Table({"format": NAME, "path": NAME}, what="a [priors] table {format, path}"),
        "defaults": DEFAULTS,
        "runs": ListOf(
            Table(extra=Any_(), what="a [[runs]] table")
        ),  # each run: RUN, after [defaults] are merged
    },
    required=("bench",),
    what="a catalog",
)


# ------------------------------------------------------------------ model manifests (manifest.json)

# a threshold in a model dir: (0.5, 1], or above 1 for "never halt on this outcome" (model.policy.NEVER)
MODEL_THRESHOLD = OneOf((THRESHOLD, Num(1.0, 1e9, lo_open=True)))
MODEL_THRESHOLDS = Table(
    {
        "success": MODEL_THRESHOLD,
        "failure": MODEL_THRESHOLD,
        "min_halt_step": Int(1, 1_000_000),
        # what a success halt needs the run itself to have produced (features.evidence: a registered name only)
        "success_evidence": Str(
            nonempty=True, pattern=r"[A-Za-z0-9_.\-]+", what="a registered rule name"
        ),
        "task_skips": Bool(),  # may the task alone halt a run (t <= 1, or no action read): off by default
        "live_failure": MODEL_THRESHOLD,  # the failure threshold chosen for halt_on: failure (the live default)
        # what a monitor does when its config names no mode: "shadow" when the forecast halts below its target
        "default_mode": Choice(("halt", "shadow")),
    },
    required=("success", "failure"),
    what="an object {success, failure, min_halt_step, success_evidence, task_skips, live_failure}",
)
FAMILY_ENTRY = Table(
    {"name": NAME, "n_features": Int(0, 1_000_000), "arrays": Bool()},
    required=("name", "n_features"),
    what="a family entry {name, n_features, arrays}",
)
MANIFEST = Table(
    {
        "format": Choice(("earlyeval-model",)),
        "format_version": Int(),
        "families": ListOf(FAMILY_ENTRY),
        "feature_names": ListOf(Str()),
        "thresholds": MODEL_THRESHOLDS,
        "training": Table(extra=Any_(), what="an object"),
        "library_versions": Table(extra=Any_(), what="an object"),
        "files": Table(extra=HEX64, what="an object of file name -> SHA-256"),
        "content_hash": HEX64,
        "manifest_hash": HEX64,
    },
    required=(
        "format",
        "format_version",
        "files",
        "content_hash",
        "feature_names",
        "families",
        "thresholds",
        "manifest_hash",
    ),
    what="a model manifest",
)
