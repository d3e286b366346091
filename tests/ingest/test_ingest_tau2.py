"""tau2-bench ingestor on hand-written fixtures (tests/fixtures/tau2)."""

from __future__ import annotations

import gzip
import shutil
from dataclasses import replace
from pathlib import Path

import _paths
import pytest

from earlyeval.config.catalog import LabelSpec, RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.trajectory import Trajectory, classify_action
from earlyeval.ingest import tau2

FIXTURES = _paths.FIXTURES / "tau2"
SPEC = RunSpec(
    name="fx-tau2",
    folder="tau2",
    agent="tau2-llm-agent__fake-agent-llm",
    scaffold="tau2-llm-agent",
    model="fake-agent-llm",
    format="tau2",
    glob="**/*.json*",
    labels=[LabelSpec(format="inline", path="")],
)


def parse_all(name: str, spec: RunSpec = SPEC) -> tuple[list[Trajectory], list[IngestError]]:
    trajs, errs = [], []
    for item in tau2.parse(FIXTURES / name, spec, "tau2"):
        (errs if isinstance(item, IngestError) else trajs).append(item)
    return trajs, errs


def test_normal_dialogue_steps_tokens_and_label():
    trajs, _ = parse_all("shop_2025.json")
    t = trajs[0]
    # tau2 numbers tasks per domain: the id is qualified by the domain, the native one is kept in meta
    assert (
        t.task_id == "bookshop/7"
        and t.meta["native_task_id"] == "7"
        and t.outcome == 1
        and t.bench == "tau2"
    )
    # run + file + record: unique by construction
    assert t.run_id == "fx-tau2/shop_2025.json/7/trial0/sim0"
    assert t.prompt.startswith("My copy of 'The Lighthouse Keeper'")
    assert [s.index for s in t.steps] == [0, 1, 2, 3]
    greet, lookup, refund, reply = t.steps
    # the greeting is an agent turn answered by the user's first message
    assert greet.action.startswith("Hello, bookshop support") and greet.actions == []
    assert greet.observation == t.prompt
    assert lookup.actions[0].tool == "get_order_details"
    assert lookup.action == 'get_order_details {"order_id": "B-17"}'
    assert lookup.thought == "Let me look up that order."
    assert lookup.kind == "view" and lookup.error is False
    assert '"status": "delivered"' in lookup.observation
    assert (lookup.input_tokens, lookup.output_tokens, lookup.cached_tokens, lookup.cost_usd) == (
        1200,
        30,
        1024,
        0.0012,
    )
    assert refund.thought == "Delivered and damaged: a refund is allowed."
    assert refund.kind == "edit"
    assert reply.actions == [] and reply.action.startswith("Done: 12.50 USD")
    assert reply.observation == "Great, thanks! ###STOP###"
    assert t.meta["reward"] == 1.0 and t.meta["trial"] == 0 and t.meta["simulation_index"] == 0
    assert t.meta["layout"] == "2025-single-file" and t.meta["cost_source"] == "per-message-cost"


def test_greeting_has_unknown_usage_not_zero():
    t = parse_all("shop_2025.json")[0][0]
    g = t.steps[0]
    assert (g.input_tokens, g.output_tokens, g.cached_tokens, g.cost_usd) == (
        None,
        None,
        None,
        None,
    )


def test_user_side_tool_calls_are_not_observed_and_errors_are_flagged():
    t = parse_all("shop_2025.json")[0][1]
    assert t.outcome == 0  # reward 0.5 < 1 - 1e-6
    upd = t.steps[1]
    assert upd.error is True and "already shipped" in upd.observation
    answer = t.steps[2]
    assert "parcel app: in transit" not in answer.observation  # the user's own device tool
    assert answer.observation == "The app says it is in transit. Fine, I will wait. ###STOP###"


@pytest.mark.parametrize("where", ["label", "run"])
def test_reward_mapping_rule_is_configurable(where):
    if where == "label":
        spec = replace(
            SPEC, labels=[LabelSpec(format="inline", path="", options={"success_min_reward": 0.5})]
        )
    else:
        spec = replace(SPEC, options={"success_min_reward": 0.5})
    trajs, _ = parse_all("shop_2025.json", spec)
    assert [t.outcome for t in trajs] == [1, 1]
    assert trajs[1].meta["reward"] == 0.5 and trajs[1].meta["success_min_reward"] == 0.5


def test_bad_simulations_are_reported_and_the_rest_ingests():
    trajs, errs = parse_all("shop_2025.json")
    assert len(trajs) == 2
    fields = {e.field: e.reason for e in errs}
    assert set(fields) == {
        "simulations[2].messages",
        "simulations[3].reward_info",
        "simulations[4].messages",
        "simulations[5].messages[2].tool_calls[0].name",
        "simulations[6].reward_info.reward",
    }
    assert "expected a list" in fields["simulations[2].messages"]
    assert "no label" in fields["simulations[3].reward_info"]
    assert fields["simulations[4].messages"] == "empty dialogue"
    assert "expected a number" in fields["simulations[6].reward_info.reward"]
    assert all(e.file.endswith("shop_2025.json") for e in errs)


def test_2026_layout_and_cost_always_zero_is_unknown():
    trajs, errs = parse_all("run_2026/results.json")
    assert not errs and [t.outcome for t in trajs] == [1, 0]
    t = trajs[0]
    assert t.meta["layout"] == "2026-results" and t.meta["cost_source"] == "none"
    renew = t.steps[1]
    assert renew.actions[0].tool == "renewLoan" and renew.kind == "edit"  # camelCase verb
    assert renew.input_tokens == 900 and renew.output_tokens == 19
    # present but always 0 != a cost of 0
    assert all(s.cost_usd is None for tr in trajs for s in tr.steps)
    assert t.meta["agent_cost_total"] is None
    assert trajs[1].run_id.endswith("/renew_0/trial1/sim1")


def test_provider_billed_cost_is_used_when_the_tau2_cost_is_zero():
    t = parse_all("openrouter_billed.json")[0][0]
    assert t.meta["cost_source"] == "raw-billed-cost"
    assert [s.cost_usd for s in t.steps] == [None, 0.00021, 0.00012]


def test_agent_without_usage_has_none_tokens():
    t = parse_all("custom_agent_no_usage.json")[0][0]
    assert t.outcome == 0
    for s in t.steps:
        assert s.input_tokens is None and s.output_tokens is None and s.cost_usd is None


def test_solo_mode_prompt_is_the_ticket():
    t = parse_all("solo_no_user.json")[0][0]
    assert t.prompt.startswith("Customer at 12 Oak St")
    assert [s.kind for s in t.steps] == ["view", "edit", "other"]
    assert t.steps[0].observation == '{"light": "red", "uptime": 0}'


def test_ingest_run_reports_every_skip_and_keeps_the_batch(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "tau2")
    trajs, rep = ws.ingest()
    assert rep.trajectories == len(trajs) == 7
    assert (rep.resolved, rep.unresolved, rep.unlabelled) == (4, 3, 0)
    assert len({t.run_id for t in trajs}) == 7
    # inside ingest_run the file part is the path inside the run folder
    assert sorted({t.run_id.split("/")[1] for t in trajs}) == sorted(
        {Path(t.meta["source_file"]).relative_to(ws.run).parts[0] for t in trajs}
    )
    skipped = {(Path(s["file"]).name, s["field"]) for s in rep.skipped}
    assert ("truncated.json", "<json>") in skipped
    assert ("shop_2025.json", "simulations[3].reward_info") in skipped
    assert len(rep.skipped) == 6
    assert all(s["reason"] for s in rep.skipped)


def test_gzip_and_truncated_gzip(tmp_path):
    src = (FIXTURES / "solo_no_user.json").read_bytes()
    good = tmp_path / "solo.json.gz"
    good.write_bytes(gzip.compress(src))
    spec = replace(SPEC, glob="solo.json.gz")
    assert tau2.discover(tmp_path, spec) == [good]
    assert len(list(tau2.parse(good, spec, "tau2"))) == 1
    bad = tmp_path / "cut.json.gz"
    bad.write_bytes(gzip.compress(src)[:60])
    with pytest.raises(IngestError) as e:
        list(tau2.parse(bad, spec, "tau2"))
    assert e.value.field == "<file>" and e.value.file.endswith("cut.json.gz")


def test_discover_exact_file_name_with_glob_characters(tmp_path):
    p = tmp_path / "weird[1]~.json"
    shutil.copy(FIXTURES / "solo_no_user.json", p)
    assert tau2.discover(tmp_path, replace(SPEC, glob=p.name)) == [p]


def test_file_level_errors_name_the_field(tmp_path):
    p = tmp_path / "nosims.json"
    p.write_text('{"info": {}, "simulations": {}}')
    with pytest.raises(IngestError) as e:
        list(tau2.parse(p, SPEC, "tau2"))
    assert e.value.field == "simulations" and "expected list" in e.value.reason
    p.write_text('{"info": {}, "simulations": []}')
    with pytest.raises(IngestError, match="holds no simulation"):
        list(tau2.parse(p, SPEC, "tau2"))


def test_service_tool_names_are_classified_by_their_verb():
    assert classify_action("transfer_to_human_agents", "{}") == "submit"
    assert classify_action("check_apn_settings", "{}") == "view"
    assert classify_action("can_send_mms", "{}") == "view"
    assert classify_action("find_user_id_by_email", "{}") == "search"
    assert classify_action("toggle_airplane_mode", "{}") == "edit"


def test_same_task_number_in_two_domains_is_two_tasks(tmp_path):
    """Task "7" of one domain is not task "7" of another (61 native ids collide across the shared files)."""
    import json

    d = json.loads((FIXTURES / "shop_2025.json").read_text())
    d["info"]["environment_info"]["domain_name"] = "pharmacy"
    (tmp_path / "other.json").write_text(json.dumps(d))
    a, _ = parse_all("shop_2025.json")
    b = [
        x
        for x in tau2.parse(tmp_path / "other.json", SPEC, "tau2")
        if not isinstance(x, IngestError)
    ]
    assert a[0].meta["native_task_id"] == b[0].meta["native_task_id"] == "7"
    assert a[0].task_id == "bookshop/7" and b[0].task_id == "pharmacy/7"
