"""``StepFolder``, the OpenHands SDK (V1) step reader the live callback and the ``openhands-conversation`` reader
share: what it cannot place is refused naming the event, what it reads but not as written is said, and a
conversation that goes on after the agent's turn ended keeps that turn as a step, in its place."""

from __future__ import annotations

import pytest
from _integration_fakes import ScriptedMonitor

from earlyeval.core.errors import IngestError
from earlyeval.integrations.openhands import EarlyStopCallback
from earlyeval.steps.openhands_conversation import StepFolder


def act(rid: str, call: str, cmd: str, eid: str | None = None, tool: str = "terminal") -> dict:
    ev = {
        "kind": "ActionEvent",
        "source": "agent",
        "tool_name": tool,
        "tool_call_id": call,
        "llm_response_id": rid,
        "tool_call": {"name": tool, "arguments": {"command": cmd} if tool == "terminal" else {}},
    }
    return {**ev, "id": eid} if eid else ev


def obs(call: str, text: str, eid: str | None = None, tool: str = "terminal") -> dict:
    ev = {
        "kind": "ObservationEvent",
        "source": "environment",
        "tool_name": tool,
        "tool_call_id": call,
        "observation": {"content": [{"type": "text", "text": text}], "exit_code": 0},
    }
    return {**ev, "id": eid} if eid else ev


def user(text: str) -> dict:
    return {"kind": "MessageEvent", "source": "user", "llm_message": {"content": text}}


def fold(events: list[dict]) -> tuple[list, StepFolder]:
    f = StepFolder(source="conv/events")
    steps = []
    for k, ev in enumerate(events):
        steps += f.feed(ev, f"conv/events/event-{k:05d}.json")
    return steps + f.final(), f


RUN = [
    user("fix it"),
    act("r1", "c1", "ls"),
    obs("c1", "a.py"),
    act("r2", "c2", "pytest"),
    obs("c2", "ok"),
]


def test_a_well_formed_conversation_reads_without_a_word():
    steps, f = fold(RUN)
    assert (
        [s.action for s in steps] == ["terminal ls", "terminal pytest"]
        and f.prompt == "fix it"
        and f.warnings == []
    )


@pytest.mark.parametrize(
    "extra, field, words",
    [
        (obs("c9", "stray"), "tool_call_id", "answers no action"),
        (obs("c1", "again"), "tool_call_id", "second answer"),
        (act("r3", "c1", "ls"), "tool_call_id", "repeats tool call 'c1'"),
        (
            {"kind": "ACPToolCallEvent", "tool_call_id": "x", "title": "t"},
            "kind",
            "ACPToolCallEvent",
        ),
        (
            {**act("r3", "c3", "ls"), "kind": "ActionEventV2"},
            "kind",
            "does not know (ActionEventV2)",
        ),
    ],
)
def test_what_cannot_be_placed_is_refused_naming_the_event(extra, field, words):
    with pytest.raises(IngestError) as e:
        fold(RUN + [extra])
    assert e.value.file == f"conv/events/event-{len(RUN):05d}.json" and e.value.field == field
    assert words in e.value.reason


def test_a_repeated_event_id_is_refused():
    with pytest.raises(IngestError) as e:
        fold([act("r1", "c1", "ls", eid="e1"), obs("c1", "a", eid="e2"), obs("c1", "a", eid="e2")])
    assert e.value.field == "id" and "repeats event e2" in e.value.reason


def test_an_agent_error_for_a_call_never_made_is_a_rejected_step():
    err = {"kind": "AgentErrorEvent", "tool_name": "x", "tool_call_id": "c7", "error": "bad args"}
    steps, f = fold(RUN + [err])
    assert (
        steps[-1].actions == [] and steps[-1].error is True and steps[-1].observation == "bad args"
    )


def test_an_unknown_kind_without_a_tool_call_is_bookkeeping_said_in_a_warning():
    steps, f = fold(RUN[:3] + [{"kind": "TelemetryEvent", "note": "x"}] + RUN[3:])
    assert [s.action for s in steps] == ["terminal ls", "terminal pytest"]
    assert (
        len(f.warnings) == 1
        and "event-00003.json" in f.warnings[0]
        and "TelemetryEvent" in f.warnings[0]
    )


def test_a_response_left_unanswered_is_a_step_in_its_place_said_in_a_warning():
    steps, f = fold([user("go"), act("r1", "c1", "ls"), act("r2", "c2", "pytest"), obs("c2", "ok")])
    assert [s.action for s in steps] == ["terminal ls", "terminal pytest"] and steps[
        0
    ].observation == ""
    assert len(f.warnings) == 1 and "r1 left call(s) ['c1'] unanswered" in f.warnings[0]


def test_the_finish_stays_a_step_when_the_conversation_goes_on():
    finish = [act("r3", "c3", "", tool="finish"), obs("c3", "done", tool="finish")]
    steps, _ = fold(RUN + finish)
    assert [s.action for s in steps][-1] == "finish"  # the run's last step
    steps, f = fold(RUN + finish + [user("and the docs"), act("r4", "c4", "vi"), obs("c4", "")])
    assert [s.action for s in steps] == ["terminal ls", "terminal pytest", "finish", "terminal vi"]
    assert f.warnings == []


def test_the_live_callback_stops_scoring_at_what_it_cannot_place_and_says_so():
    mon = ScriptedMonitor()
    cb = EarlyStopCallback(mon)
    for ev in RUN[:3] + [obs("c9", "stray")] + RUN[3:]:
        cb(ev)
    assert [s.action for s in mon.steps] == ["terminal ls"]  # nothing after the refused event
    assert cb.refused and "answers no action" in cb.refused
    assert any("stopped scoring this conversation" in e for e in cb.stopper.errors)
