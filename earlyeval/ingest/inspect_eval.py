"""inspect_ai evaluation logs (``.eval`` archives or ``.json`` logs): one run per sample and epoch.

Read with inspect's public log API; steps are built by ``earlyeval.steps.inspect_eval.inspect_steps``, which the
live approver uses too, so the Monitor sees live what this reader builds offline. Steps, usage and the label rule:
docs/formats.md, "inspect_ai logs".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Mapping

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import check_size
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest.chat import reward_outcome, success_min_reward
from earlyeval.ingest.common import file_key, run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.steps.inspect_eval import inspect_steps, usage_by_message
from earlyeval.steps.values import is_number

try:  # the optional extra; the module imports without it (``earlyeval formats`` lists it)
    from inspect_ai.log import read_eval_log, read_eval_log_sample, read_eval_log_sample_summaries
except ImportError:  # pragma: no cover - exercised where inspect_ai is absent
    read_eval_log = read_eval_log_sample = read_eval_log_sample_summaries = None

DEFAULT_GLOB = "**/*.eval"  # ``--runs log.json`` reads a JSON log (a file names its own glob)
INLINE_LABELS = True  # the samples carry their own scores
SUCCESS_VALUES = ("C",)
FAILURE_VALUES = ("I", "N", "P")


# ------------------------------------------------------------------ labels


def _option(spec: RunSpec, key: str, default: Any) -> Any:
    for ls in spec.labels:
        if ls.format == "inline" and key in ls.options:
            return ls.options[key]
    return spec.options.get(key, default)


def sample_outcome(
    scores: Mapping[str, Any] | None, spec: RunSpec, file: str, where: str
) -> int | None:
    """1 / 0 from the sample's score (rules in the module doc); None when the sample has no score."""
    if not scores:
        return None
    name = _option(spec, "inspect_scorer", None) or next(iter(scores))
    if name not in scores:
        raise IngestError(
            file, f"{where}.scores", f"no score from scorer {name!r} (scores: {sorted(scores)})"
        )
    value = getattr(scores[name], "value", None)
    field = f"{where}.scores.{name}.value"
    if isinstance(value, bool):
        return int(value)
    if is_number(value):
        return reward_outcome(value, success_min_reward(spec), file, field)
    if isinstance(value, str):
        if value in _option(spec, "success_values", SUCCESS_VALUES):
            return 1
        if value in _option(spec, "failure_values", FAILURE_VALUES):
            return 0
        raise IngestError(
            file,
            field,
            f"score {value!r} is neither a success value {list(_option(spec, 'success_values', SUCCESS_VALUES))} "
            f"nor a failure value {list(_option(spec, 'failure_values', FAILURE_VALUES))}",
        )
    raise IngestError(
        file, field, f"expected a str, bool or number score, got {type(value).__name__}"
    )


# ------------------------------------------------------------------ reader


def _date(sample: Any, header: Any) -> str | None:
    for v in (
        getattr(sample, "started_at", None),
        getattr(getattr(header, "eval", None), "created", None),
    ):
        if v:
            s = v.isoformat() if hasattr(v, "isoformat") else str(v)
            if len(s) >= 10 and s[4] == "-" and s[7] == "-":
                return s[:10]
    return None


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory | IngestError]:
    f = str(path)
    if read_eval_log is None:
        raise IngestError(
            f,
            "<file>",
            'reading inspect logs needs inspect_ai (the extra: pip install -e ".[inspect]" in an earlyeval checkout)',
        )
    # inspect reads the archive itself: the members are bounded here, as every reader's input
    check_size(path)
    try:
        header = read_eval_log(f, header_only=True)
    except Exception as e:
        raise IngestError(
            f, "header", f"not a readable inspect log ({type(e).__name__}: {e})"
        ) from e
    try:
        summaries = read_eval_log_sample_summaries(f)
    except Exception as e:
        raise IngestError(
            f, "summaries", f"cannot list the samples ({type(e).__name__}: {e})"
        ) from e
    if not summaries:
        raise IngestError(
            f, "samples", f"the log has no samples (status {getattr(header, 'status', '?')!r})"
        )
    key = file_key(spec, path)
    for s in summaries:
        where = f"samples/{s.id}_epoch_{s.epoch}"
        try:
            sample = read_eval_log_sample(f, id=s.id, epoch=s.epoch)
        except Exception as e:
            yield IngestError(f, where, f"cannot read the sample ({type(e).__name__}: {e})")
            continue
        try:
            yield _trajectory(sample, header, spec, bench, f, key, where)
        except IngestError as e:
            yield e


def _trajectory(
    sample: Any, header: Any, spec: RunSpec, bench: str, f: str, key: str, where: str
) -> Trajectory:
    steps, prompt, _ = inspect_steps(
        sample.messages or [], usage_by_message(sample.events), f"{where}.messages", f
    )
    if not steps:
        raise IngestError(f, f"{where}.messages", "no assistant message: no agent steps")
    ev = header.eval
    error = getattr(sample, "error", None)
    limit = getattr(sample, "limit", None)
    t = run_trajectory(
        spec,
        bench,
        f,
        str(sample.id),
        steps,
        prompt=prompt,
        outcome=sample_outcome(sample.scores, spec, f, where),
        run_id=f"{key}/{sample.id}/epoch-{sample.epoch}",
        epoch=sample.epoch,
        inspect_task=ev.task,
        inspect_model=ev.model,
        inspect_solver=ev.solver,
        error=getattr(error, "message", None) if error is not None else None,
        limit=getattr(limit, "type", None) if limit is not None else None,
    )
    date = _date(sample, header)
    if date:
        t.meta["date"] = date
    if not spec.model:
        t.meta["model"] = ev.model
    return t


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): an ``.eval`` archive (a zip), or a JSON log (``version``, ``eval``)."""
    h = heads.of(path)
    return (
        h.raw.startswith(b"PK\x03\x04")
        if path.suffix == ".eval"
        else (h.root == "{" and h.has("version", "eval"))
    )


__all__ = ["DEFAULT_GLOB", "sniff", "parse", "sample_outcome"]
