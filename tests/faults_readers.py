"""Fault cases of the step readers, by class: an answer to nothing, an unknown kind, a repeat -- in every reader
that can meet one. Shared by tests/test_faults.py and tools/fault_summary.py.

A case damages one record of a good run (a fixture, or a small run written here) and reads the run through a
public surface: ``ingest_run`` on the run's folder, and for OpenHands V1 also the live callback
(``EarlyStopCallback``) fed the same events. It ends "named" when the run is refused with a skip naming its file
and the record's field (live: the callback stops scoring, saying why), or read with a warning naming the file
and the record (``meta["reader_warnings"]``); "ok" when the reader places the record where it belongs (said in
the detail); "silent" when the run is read without a word (steps reordered, dropped or duplicated). An exception
is a crash. The undamaged run is read first and must read whole and without a word, so that a "named" is the
damage's and not the set-up's.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any, Callable

from faults import FIXTURES, Env
from faults29 import _ingest_one

OH_CONV = FIXTURES / "openhands-conversation" / "django__django-11099"
V0 = FIXTURES / "openhands-events" / "logs" / "issue_1" / "astropy__astropy-1.json"
OHC = FIXTURES / "openhands-completions" / "llm_completions" / "astropy__astropy-1"
TOOLATHLON = FIXTURES / "toolathlon" / "trajs" / "fake-model_sales-report.json"
TAU2 = FIXTURES / "tau2" / "shop_2025.json"
MINI = (
    FIXTURES / "export-atif" / "mini-swe-agent" / "trajs" / "toy__repo-1" / "toy__repo-1.traj.json"
)
ATIF = FIXTURES / "atif" / "job" / "graded__p6q7r8"
GLOBS = {
    "openhands-conversation": "**/base_state.json",
    "openhands-events": "**/*.json",
    "openhands-completions": "**/llm_completions/*/*.json*",
    "toolathlon": "**/*.json",
    "tau2": "*.json",
    "mini-swe-agent-v1": "**/*.traj.json",
    "atif": "**/*",
    "terminalbench-log": "**/sessions/agent.log",
}
Damage = Callable[[Path], None]

# ------------------------------------------------------------------ reading a run


def _read(folder: Path, fmt: str) -> tuple[list[Any], list[dict[str, str]]]:
    """(runs, skips) of the run folder ``folder`` read as ``fmt`` (``ingest_run``)."""
    return _ingest_one(folder, fmt, GLOBS[fmt], "swebench")


def _steps(trajs: list[Any]) -> list[list[str]]:
    return [[s.action for s in t.steps] for t in trajs]


def _fresh(env: Env, name: str, copy_from: Path) -> Path:
    """A fresh folder ``readers/<name>/run`` holding a copy of ``copy_from`` (a file or a folder; an OpenHands
    completions instance folder under ``llm_completions/``, where its format looks)."""
    root = env.base / "readers" / name
    if root.exists():
        shutil.rmtree(root)
    run = root / "run"
    if copy_from.is_dir():
        under = run / "llm_completions" if copy_from.parent.name == "llm_completions" else run
        shutil.copytree(copy_from, under / copy_from.name)
    else:
        run.mkdir(parents=True)
        shutil.copy(copy_from, run / copy_from.name)
    return run


def _source(env: Env, source: Path | Callable[[Env], Path]) -> Path:
    return source if isinstance(source, Path) else source(env)


def tau2_source(env: Env) -> Path:
    """The tau2 fixture's evaluated simulations only (it holds damaged ones for the ingest tests)."""
    out = env.base / "readers" / "tau2-source" / "shop.json"
    if not out.exists():
        d = json.loads(TAU2.read_text())
        d["simulations"] = d["simulations"][:2]  # the two evaluated ones
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(d))
    return out


def _verdict(
    env: Env,
    name: str,
    fmt: str,
    source: Path | Callable[[Env], Path],
    damage: Damage,
    expect: str = "refused",
) -> tuple[str, str]:
    """Read ``source`` whole, then damaged; "named" when the damaged run is skipped naming a file of the run (or,
    ``expect="warned"``, read with a warning naming one), "silent" when it is read without a word."""
    source = _source(env, source)
    good = _fresh(env, name + "-good", source)
    trajs, skipped = _read(good, fmt)
    if skipped or not trajs or any("reader_warnings" in t.meta for t in trajs):
        raise RuntimeError(f"{name}: the undamaged run does not read whole: {skipped[:1]}")
    run = _fresh(env, name, source)
    damage(run)
    got, skipped = _read(run, fmt)
    hit = [s for s in skipped if str(run) in s["file"]]
    warned = [w for t in got for w in t.meta.get("reader_warnings", []) if str(run) in w]
    if expect == "refused" and hit and len(got) == len(trajs) - 1:
        return "named", f"skip {hit[0]['field']}: {hit[0]['reason'][:100]}"
    if expect == "warned" and warned and not hit:
        return "named", f"read, with a warning: {warned[0][len(str(run)) :][:100]}"
    return (
        "silent",
        f"read {len(got)} runs as {_steps(got)[:1]!s:.100} (whole: {len(trajs)}), no word",
    )


def _json_edit(path: Path, edit: Callable[[Any], None]) -> None:
    d = json.loads(path.read_text())
    edit(d)
    path.write_text(json.dumps(d))


# ------------------------------------------------------------------ OpenHands V1 events


def _oh_events(run: Path) -> tuple[Path, list[Path]]:
    events = next(run.rglob("events"))
    return events, sorted(events.glob("event-*.json"))


def _oh_append(run: Path, *new: dict[str, Any]) -> None:
    """Append events to the conversation's log with the next indices (ids made up unless given)."""
    events, files = _oh_events(run)
    for k, ev in enumerate(new, start=len(files)):
        eid = str(ev.get("id") or f"00000000-0000-0000-0000-{k:012d}")
        (events / f"event-{k:05d}-{eid}.json").write_text(json.dumps({"id": eid, **ev}))


def _oh_event(run: Path, i: int) -> dict[str, Any]:
    return json.loads(_oh_events(run)[1][i].read_text())


def _oh_renumbered(ev: dict[str, Any], **over: Any) -> dict[str, Any]:
    out = copy.deepcopy(ev)
    out.pop("id", None)
    out.update(over)
    return out


def _oh_damages() -> dict[str, tuple[str, Damage, str]]:
    """name -> (class, damage, expected): the event logs of the issue (observation answering no action, an
    action event of an unknown kind, an action repeated after the finish) and their neighbours."""
    obs, act = 7, 6  # the observation answering the second response's action, and that action

    def orphan(run: Path) -> None:
        _oh_append(run, _oh_renumbered(_oh_event(run, obs), tool_call_id="call_nobody"))

    def reject_orphan(run: Path) -> None:
        _oh_append(
            run,
            {
                "kind": "UserRejectObservation",
                "source": "user",
                "tool_name": "terminal",
                "tool_call_id": "call_never_made",
                "rejection_reason": "no",
            },
        )

    def unanswered(run: Path) -> None:  # the second response's answer removed, the log renumbered
        events, files = _oh_events(run)
        files[obs].unlink()
        for k, f in enumerate(sorted(events.glob("event-*.json"))):
            f.rename(events / f"event-{k:05d}-{f.name.split('-', 2)[2]}")

    def unknown_with_call(run: Path) -> None:
        events, files = _oh_events(run)
        _json_edit(files[act], lambda d: d.update(kind="ActionEventV2"))

    def acp_call(run: Path) -> None:
        _oh_append(
            run,
            {
                "kind": "ACPToolCallEvent",
                "source": "agent",
                "tool_call_id": "acp-1",
                "title": "edit",
            },
        )

    def unknown_bookkeeping(run: Path) -> None:
        _oh_append(run, {"kind": "TelemetryEvent", "source": "environment", "note": "x"})

    def repeat_after_finish(
        run: Path,
    ) -> None:  # a copy of an earlier action and its answer, after the finish
        _oh_append(run, _oh_event(run, act), _oh_event(run, obs))

    def same_call_after_finish(run: Path) -> None:  # new event ids, the same tool call
        _oh_append(run, _oh_renumbered(_oh_event(run, act)), _oh_renumbered(_oh_event(run, obs)))

    def second_answer(run: Path) -> None:
        _oh_append(run, _oh_renumbered(_oh_event(run, obs)))

    return {
        "an ObservationEvent answering no action": ("an answer to nothing", orphan, "refused"),
        "a UserRejectObservation answering no action": (
            "an answer to nothing",
            reject_orphan,
            "refused",
        ),
        "a response left unanswered before the next": (
            "an answer to nothing",
            unanswered,
            "warned",
        ),
        "an action event of an unknown kind": ("an unknown kind", unknown_with_call, "refused"),
        "an ACPToolCallEvent": ("an unknown kind", acp_call, "refused"),
        "an unknown kind without a tool call": ("an unknown kind", unknown_bookkeeping, "warned"),
        "an action repeated after the finish": ("a repeat", repeat_after_finish, "refused"),
        "its tool call repeated after the finish": ("a repeat", same_call_after_finish, "refused"),
        "a second answer to a call": ("a repeat", second_answer, "refused"),
    }


def _oh_case(name: str, damage: Damage, expect: str):
    def case(env: Env) -> tuple[str, str]:
        return _verdict(
            env, "oh-" + name.replace(" ", "-"), "openhands-conversation", OH_CONV, damage, expect
        )

    return case


def _oh_live_case(name: str, damage: Damage, expect: str):
    """The live callback fed the damaged events: named when it stops scoring saying which event (refused) or
    logs the warning (warned) and scores the steps the reader gives offline; silent when it scores on."""

    def case(env: Env) -> tuple[str, str]:
        from _integration_fakes import ScriptedMonitor

        from earlyeval.integrations.openhands import EarlyStopCallback

        run = _fresh(env, "oh-live-" + name.replace(" ", "-"), OH_CONV)
        damage(run)
        mon = ScriptedMonitor()
        cb = EarlyStopCallback(mon)
        for f in _oh_events(run)[1]:
            cb(json.loads(f.read_text()))
        scored = [s.action for s in mon.steps]
        refused = getattr(cb, "refused", None)  # (an older callback has none: it scores on)
        if (
            expect == "refused"
            and refused
            and any("stopped scoring" in e for e in cb.stopper.errors)
        ):
            return "named", f"stopped after {len(scored)} steps: {refused[:100]}"
        offline, _ = _read(run, "openhands-conversation")
        if expect == "warned" and getattr(cb._folder, "warnings", None) and offline:
            same = scored == [s.action for s in offline[0].steps][: len(scored)]
            return (
                "named" if same else "silent"
            ), f"warned; {len(scored)} steps scored as offline: {same}"
        return "silent", f"scored {len(scored)} steps, no word ({cb.stopper.errors[:1]})"

    return case


def case_oh_new_action_after_finish(env: Env) -> tuple[str, str]:
    """A conversation that goes on after the finish (a user message, then a new response): the finish stays a
    step, in its place, and the new response is one after it ("ok"); dropping the finish is silent."""
    run = _fresh(env, "oh-after-finish", OH_CONV)
    act, obs = _oh_event(run, 6), _oh_event(run, 7)
    _oh_append(
        run,
        {
            "kind": "MessageEvent",
            "source": "user",
            "llm_message": {"role": "user", "content": "go on"},
        },
        _oh_renumbered(act, tool_call_id="call_9_0", llm_response_id="test-response-9"),
        _oh_renumbered(obs, tool_call_id="call_9_0"),
    )
    trajs, skipped = _read(run, "openhands-conversation")
    steps = _steps(trajs)[0] if trajs else []
    if (
        not skipped
        and len(steps) == 6
        and steps[4].startswith("finish")
        and not steps[5].startswith("finish")
    ):
        return "ok", f"read as {len(steps)} steps, the finish fifth, the new response after it"
    return "silent", f"read as {steps} ({skipped[:1]})"


# ------------------------------------------------------------------ the other readers


def _chat_edit(path_of: Callable[[Path], Path], edit: Callable[[Any], None]) -> Damage:
    return lambda run: _json_edit(path_of(run), edit)


def _file(run: Path) -> Path:
    return next(p for p in run.rglob("*") if p.is_file() and p.suffix == ".json")


def _insert(key: str, at: int, msg: dict[str, Any], sim: bool = False) -> Callable[[Any], None]:
    def edit(d: Any) -> None:
        target = d["simulations"][0] if sim else d
        target[key].insert(at, msg)

    return edit


def _ohc_file(run: Path) -> Path:
    return max(run.rglob("*.json"), key=lambda p: p.name)


def _terminalbench_run(root: Path, blocks: list[int]) -> Path:
    """A Terminal-Bench 1 trial: ``sessions/agent.log`` with one step block per number, and ``results.json``."""
    trial = root / "task-1.1-of-1"
    (trial / "sessions").mkdir(parents=True)
    log = ""
    for n in blocks:
        log += (
            f"mini-swe-agent (step {n}, ${0.01 * n:.2f}):\nTHOUGHT: look {n}\n\n```bash\nls -{n}\n```\n"
            f"User:\n<returncode>0</returncode>\n<output>a</output>\n" + "─" * 30 + "\n"
        )
    (trial / "sessions" / "agent.log").write_text(log)
    (trial / "results.json").write_text(json.dumps({"is_resolved": True, "task_id": "task-1"}))
    return trial


def case_terminalbench_repeated_block(env: Env) -> tuple[str, str]:
    """A step block of the transcript repeated (a redraw): refused naming the log, never two steps of one turn."""
    good = _terminalbench_run(env.base / "readers" / "tb-good", [1, 2, 3])
    trajs, skipped = _read(good.parent, "terminalbench-log")
    if skipped or len(trajs) != 1 or len(trajs[0].steps) != 3:
        raise RuntimeError(f"the undamaged Terminal-Bench trial does not read whole: {skipped[:1]}")
    bad = _terminalbench_run(env.base / "readers" / "tb-repeat", [1, 2, 2, 3])
    trajs, skipped = _read(bad.parent, "terminalbench-log")
    if skipped and not trajs and "agent.log" in skipped[0]["file"]:
        return "named", f"skip {skipped[0]['field']}: {skipped[0]['reason'][:100]}"
    return "silent", f"read as {_steps(trajs)} (whole: 3 steps)"


def _other_damages() -> list[tuple[str, str, str, Any, Damage, str]]:
    """(class, name, format, source, damage, expected) for the readers other than OpenHands V1."""
    tool = {"role": "tool", "tool_call_id": "t9", "content": "a result"}
    return [
        (
            "an answer to nothing",
            "V0 event: an observation caused by no action",
            "openhands-events",
            V0,
            _chat_edit(_file, lambda d: d[6].update(cause=999)),
            "refused",
        ),
        (
            "an answer to nothing",
            "OpenHands completions: a tool message answering an unmade call",
            "openhands-completions",
            OHC,
            _chat_edit(_ohc_file, lambda d: d["messages"][3].update(tool_call_id="call_9")),
            "refused",
        ),
        (
            "an answer to nothing",
            "Toolathlon: a tool result answering an unmade call",
            "toolathlon",
            TOOLATHLON,
            _chat_edit(_file, lambda d: d["messages"][2].update(tool_call_id="t9")),
            "refused",
        ),
        (
            "an answer to nothing",
            "Toolathlon: a tool result before any assistant turn",
            "toolathlon",
            TOOLATHLON,
            _chat_edit(_file, _insert("messages", 0, tool)),
            "refused",
        ),
        (
            "an answer to nothing",
            "tau2: the agent's tool result before its first turn",
            "tau2",
            tau2_source,
            _chat_edit(
                _file,
                _insert(
                    "messages",
                    0,
                    {"role": "tool", "requestor": "assistant", "id": "c9", "content": "r"},
                    sim=True,
                ),
            ),
            "refused",
        ),
        (
            "an answer to nothing",
            "mini-swe-agent: a tool message before any turn",
            "mini-swe-agent-v1",
            MINI,
            _chat_edit(_file, _insert("messages", 2, {"role": "tool", "content": "out"})),
            "refused",
        ),
        (
            "an answer to nothing",
            "ATIF: a user step's result naming a call",
            "atif",
            ATIF,
            lambda run: _json_edit(
                next(run.rglob("trajectory.json")),
                lambda d: d["steps"][0].update(
                    observation={"results": [{"source_call_id": "g9", "content": "x"}]}
                ),
            ),
            "refused",
        ),
        (
            "an unknown kind",
            "V0 event: neither an action nor an observation",
            "openhands-events",
            V0,
            _chat_edit(_file, lambda d: d.insert(7, {"id": 99, "source": "agent", "kind": "x"})),
            "refused",
        ),
        (
            "an unknown kind",
            "mini-swe-agent: a message of an unknown role",
            "mini-swe-agent-v1",
            MINI,
            _chat_edit(_file, _insert("messages", 4, {"role": "function", "content": "out"})),
            "refused",
        ),
        (
            "an unknown kind",
            "OpenHands completions: a message of an unknown role",
            "openhands-completions",
            OHC,
            _chat_edit(_ohc_file, _insert("messages", 4, {"role": "function", "content": "x"})),
            "refused",
        ),
        (
            "an unknown kind",
            "Toolathlon: a message of an unknown role",
            "toolathlon",
            TOOLATHLON,
            _chat_edit(_file, _insert("messages", 4, {"role": "function", "content": "x"})),
            "refused",
        ),
        (
            "a repeat",
            "V0 event: an event id repeated",
            "openhands-events",
            V0,
            _chat_edit(_file, lambda d: d.insert(9, {**d[8]})),
            "refused",
        ),
        (
            "a repeat",
            "V0 event: a second observation of one action",
            "openhands-events",
            V0,
            _chat_edit(_file, lambda d: d.insert(7, {**d[6], "id": 98})),
            "warned",
        ),
        (
            "a repeat",
            "OpenHands completions: a second answer to a call",
            "openhands-completions",
            OHC,
            _chat_edit(_ohc_file, lambda d: d["messages"].insert(4, dict(d["messages"][3]))),
            "refused",
        ),
        (
            "a repeat",
            "Toolathlon: a second answer to a call",
            "toolathlon",
            TOOLATHLON,
            _chat_edit(_file, lambda d: d["messages"].insert(3, dict(d["messages"][2]))),
            "refused",
        ),
        (
            "a repeat",
            "tau2: a second answer to a call",
            "tau2",
            tau2_source,
            _chat_edit(
                _file,
                lambda d: d["simulations"][0]["messages"].insert(
                    4, dict(d["simulations"][0]["messages"][3])
                ),
            ),
            "refused",
        ),
        (
            "a repeat",
            "ATIF: a tool call id repeated in a step",
            "atif",
            ATIF,
            lambda run: _json_edit(
                next(run.rglob("trajectory.json")),
                lambda d: d["steps"][1]["tool_calls"].append(dict(d["steps"][1]["tool_calls"][0])),
            ),
            "refused",
        ),
    ]


def _other_case(name: str, fmt: str, source: Any, damage: Damage, expect: str):
    def case(env: Env) -> tuple[str, str]:
        return _verdict(env, name.replace(" ", "-").replace(":", ""), fmt, source, damage, expect)

    return case


def _cases() -> list[tuple[str, str, Callable[[Env], tuple[str, str]]]]:
    out = []
    for name, (cls, damage, expect) in _oh_damages().items():
        out.append((f"readers: {cls}", f"OpenHands V1: {name}", _oh_case(name, damage, expect)))
        out.append(
            (f"readers: {cls}", f"OpenHands V1 live: {name}", _oh_live_case(name, damage, expect))
        )
    out.append(
        (
            "readers: a repeat",
            "OpenHands V1: a new action after the finish",
            case_oh_new_action_after_finish,
        )
    )
    out.append(
        (
            "readers: a repeat",
            "Terminal-Bench: a step block repeated",
            case_terminalbench_repeated_block,
        )
    )
    for cls, name, fmt, source, damage, expect in _other_damages():
        out.append((f"readers: {cls}", name, _other_case(name, fmt, source, damage, expect)))
    return out


CASES_READERS: list[tuple[str, str, Callable[[Env], tuple[str, str]]]] = _cases()
