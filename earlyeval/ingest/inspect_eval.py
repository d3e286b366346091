"""inspect_ai evaluation logs (``.eval`` archives or ``.json`` logs): one run per sample and epoch.

Read with inspect's public log API; steps are built by ``inspect_steps``, which the live approver uses too,
so the Monitor sees live what this reader builds offline. Steps, usage and the label rule: docs/formats.md,
"inspect_ai logs".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import check_size
from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Step, Trajectory, call_action
from earlyeval.ingest.chat import (
    PendingTurn,
    chat_steps,
    is_number,
    join_thought,
    opt_float,
    opt_int,
    reward_outcome,
    success_min_reward,
)
from earlyeval.ingest.common import file_key, run_trajectory
from earlyeval.ingest.sniff import Heads

try:  # the optional extra; the module imports without it (``earlyeval formats`` lists it)
    from inspect_ai.log import read_eval_log, read_eval_log_sample, read_eval_log_sample_summaries
except ImportError:  # pragma: no cover - exercised where inspect_ai is absent
    read_eval_log = read_eval_log_sample = read_eval_log_sample_summaries = None

DEFAULT_GLOB = "**/*.eval"  # ``--runs log.json`` reads a JSON log (a file names its own glob)
INLINE_LABELS = True  # the samples carry their own scores
SUCCESS_VALUES = ("C",)
FAILURE_VALUES = ("I", "N", "P")

Usage = Callable[[str | None], Any]  # assistant message id -> its ModelUsage (or None)


# ------------------------------------------------------------------ steps (shared with the live approver)


def usage_by_message(events: Iterable[Any] | None) -> dict[str, Any]:
    """Each assistant message id -> the usage of the model call that produced it (``ModelEvent``s)."""
    out: dict[str, Any] = {}
    for e in events or ():
        if getattr(e, "event", None) != "model":
            continue
        output = getattr(e, "output", None)
        choices = getattr(output, "choices", None) or []
        mid = getattr(getattr(choices[0], "message", None), "id", None) if choices else None
        if mid is not None and getattr(output, "usage", None) is not None:
            out[str(mid)] = output.usage
    return out


def _usage_fields(usage: Any) -> dict[str, Any]:
    if usage is None:
        return {}
    return {
        "input_tokens": opt_int(getattr(usage, "input_tokens", None)),
        "output_tokens": opt_int(getattr(usage, "output_tokens", None)),
        "cached_tokens": opt_int(getattr(usage, "input_tokens_cache_read", None)),
        "cost_usd": opt_float(getattr(usage, "total_cost", None)),
    }


def _turn(
    usage: Mapping[str, Any], ids: list[str | None]
) -> Callable[[dict, str, str], PendingTurn]:
    def turn(m: dict, where: str, _text: str) -> PendingTurn:
        msg = m["msg"]
        ids.append(getattr(msg, "id", None))
        calls = [
            call_action(tc.function, tc.arguments) for tc in getattr(msg, "tool_calls", None) or []
        ]
        content = msg.content if isinstance(msg.content, list) else []
        reasoning = "\n".join(
            c.reasoning for c in content if getattr(c, "type", None) == "reasoning" and c.reasoning
        )
        text = msg.text or ""
        return PendingTurn(
            calls,
            thought=join_thought(reasoning, text) if calls else reasoning,
            final_answer="" if calls else text,
            **_usage_fields(usage.get(str(ids[-1]))),
        )

    return turn


def _tool_result(m: dict, pending: PendingTurn, content: Any) -> tuple[str, bool | None]:
    return content_text(content), getattr(m["msg"], "error", None) is not None


def inspect_steps(
    messages: Sequence[Any],
    usage: Mapping[str, Any] | None = None,
    where: str = "messages",
    file: str = "<live>",
) -> tuple[list[Step], str, list[str | None]]:
    """(steps, prompt, assistant message id of each step) of an inspect message history.

    ``messages``: ``inspect_ai.model.ChatMessage`` objects (a log's ``sample.messages``, or the history
    an approver gets); ``usage``: :func:`usage_by_message` of the sample's events."""
    ids: list[str | None] = []
    view = [
        {"role": getattr(m, "role", None), "content": getattr(m, "content", None), "msg": m}
        for m in messages
    ]
    steps, prompt = chat_steps(view, file, where, _turn(usage or {}, ids), _tool_result)
    return steps, prompt, ids


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


__all__ = ["DEFAULT_GLOB", "sniff", "inspect_steps", "parse", "sample_outcome", "usage_by_message"]
