"""What a run or a task must be for the store to hold it, checked at the file boundary (ingest, score and
``earlyeval.read_run`` alike) without pyarrow, so that reading a run file needs no parquet stack."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

from earlyeval.config.schema import Invalid, parse_date
from earlyeval.core.errors import IngestError
from earlyeval.core.tasks_jsonl import text_ok
from earlyeval.core.trajectory import MAX_TOKENS_PER_STEP, Trajectory, cost_value, token_count

_INT32 = (-(2**31), 2**31 - 1)
_INT8 = (-128, 127)


# the days a run file dates itself by (the as-of prior reads them)
RUN_DATE_KEYS = (
    "date",
    "run_date",
)
FIRST_RUN_YEAR = 2000


def check_run_date(value: Any, file: str, field: str) -> str:
    """A day a run file names: a real YYYY-MM-DD date (``config.schema.parse_date``) from 2000 up to tomorrow
    (UTC; a run cannot have happened later), else an IngestError naming the file and field.  Why: a
    ``9999-99-99`` or a far-future year would put the run after every submission of the task prior."""
    try:
        day = parse_date(value, field)
    except Invalid as e:
        raise IngestError(file, field, e.reason) from None
    latest = _dt.datetime.now(_dt.timezone.utc).date() + _dt.timedelta(days=1)
    if not FIRST_RUN_YEAR <= int(day[:4]) or _dt.date.fromisoformat(day) > latest:
        raise IngestError(
            file,
            field,
            f"{day!r} is not a possible run date (from {FIRST_RUN_YEAR} up to {latest})",
        )
    return day


def validate_trajectory(t: Trajectory) -> None:
    """Raise an IngestError naming the source file and field for any value the store cannot hold, or
    that is impossible: text that is not UTF-8 encodable, integers outside their column, token counts
    that are not 0..1e9 integers (``trajectory.token_count``), costs that are not finite and >= 0.
    Called per trajectory at the file boundary (``ingest.ingest_run``: ingest and score alike), so one
    bad value is that file's error and the rest of the batch goes on."""
    f = str(t.meta.get("source_file", t.run_id))
    for name in ("run_id", "agent", "bench", "task_id", "prompt"):
        v = getattr(t, name)
        if not isinstance(v, str) or not text_ok(v):
            raise IngestError(f, name, "not UTF-8 text (a lone surrogate escape such as \\udc80?)")
    if t.outcome is not None and not (
        isinstance(t.outcome, int) and _INT8[0] <= t.outcome <= _INT8[1]
    ):
        raise IngestError(f, "outcome", f"{t.outcome!r} is not a label")
    try:
        meta = json.dumps(t.meta, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError) as e:
        raise IngestError(f, "meta", f"cannot be stored ({type(e).__name__}: {e})") from e
    if not text_ok(meta):
        raise IngestError(f, "meta", "not UTF-8 text")
    for key in RUN_DATE_KEYS:
        if t.meta.get(key) is not None:
            check_run_date(t.meta[key], f, f"meta.{key}")
    for i, st in enumerate(t.steps):
        w = f"steps[{i}]"
        if not (isinstance(st.index, int) and _INT32[0] <= st.index <= _INT32[1]):
            raise IngestError(f, f"{w}.index", f"{st.index!r} is not a 32-bit step index")
        for name in ("action", "kind", "thought", "observation"):
            v = getattr(st, name)
            if not isinstance(v, str) or not text_ok(v):
                raise IngestError(
                    f, f"{w}.{name}", "not UTF-8 text (a lone surrogate escape such as \\udc80?)"
                )
        for name in ("input_tokens", "output_tokens", "cached_tokens"):
            v = getattr(st, name)
            if v is not None and (type(v) is not int or token_count(v) is None):
                raise IngestError(
                    f,
                    f"{w}.{name}",
                    f"{v!r} is not a possible token count (an integer 0..{MAX_TOKENS_PER_STEP:.0e})",
                )
        if st.cost_usd is not None and cost_value(st.cost_usd) is None:
            raise IngestError(
                f, f"{w}.cost_usd", f"{st.cost_usd!r} is not a possible cost (finite, >= 0)"
            )
        if st.error is not None and not isinstance(st.error, bool):
            raise IngestError(f, f"{w}.error", f"{st.error!r} is not a bool")
        for k, a in enumerate(st.actions):
            for name in ("tool", "text", "kind"):
                v = getattr(a, name)
                if not isinstance(v, str) or not text_ok(v):
                    raise IngestError(f, f"{w}.actions[{k}].{name}", "not UTF-8 text")
