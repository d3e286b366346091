"""``earlyeval-mini``: mini-swe-agent's own batch runners, with the earlyeval agent.

    earlyeval-mini swebench -c swebench.yaml -c earlyeval.yaml --subset verified --split test -o out/ -w 4

runs ``mini-extra swebench`` itself (``minisweagent.run.benchmarks.swebench.app``: the same options,
dataset loading, environments, ``preds.json`` and trajectory files), with two changes:

* each instance's agent is :class:`EarlyStopProgressAgent` (``EarlyStopAgent`` with the runner's
  progress reporting), configured by the config's ``agent.earlyeval`` block -- ``mini-extra
  swebench`` itself always builds its ``ProgressTrackingAgent`` and ignores ``agent.agent_class``;
* the whole SWE-bench instance (id, problem statement, gold patch, tests) starts the monitor, so
  the gold and prior features have their inputs.

A halted instance has ``exit_status`` ``PredictedFailure``/``PredictedSuccess`` in
``exit_statuses_*.yaml`` and in its trajectory (``info.earlyeval``: probabilities, reason, step,
thresholds); its ``preds.json`` patch is ``""``, or with ``submit_diff: true`` the working
``git diff`` for a predicted success.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator

from minisweagent.run.benchmarks import swebench as _swebench
from minisweagent.run.benchmarks.utils.common import ProgressTrackingAgent

from earlyeval.integrations.config import ConfigError, monitor_from_config, split_config
from earlyeval.integrations.mini_swe_agent import ADAPTER_KEYS, EarlyStopAgent, processing

USAGE = """usage: earlyeval-mini swebench [mini-extra swebench options]

Runs `mini-extra swebench` with earlyeval's EarlyStopAgent (configured by the config's
`agent.earlyeval` block: model, thresholds, tasks, submit_diff); see docs/integrations.md.
`earlyeval-mini swebench --help` lists mini-extra swebench's own options."""


class EarlyStopProgressAgent(EarlyStopAgent, ProgressTrackingAgent):
    """EarlyStopAgent with the batch runner's progress reporting (``progress_manager``, ``instance_id``)."""


@contextmanager
def earlyeval_swebench() -> Iterator[Any]:
    """mini-extra swebench's module with the earlyeval agent and the instance passed to the monitor."""
    orig_agent, orig_process, orig_merge = _swebench.ProgressTrackingAgent, _swebench.process_instance, _swebench.recursive_merge

    def process_instance(instance: dict, *args: Any, **kwargs: Any) -> None:
        with processing(instance):
            return orig_process(instance, *args, **kwargs)

    def recursive_merge(*configs: Any) -> dict:  # main() merges the -c configs once, before any instance
        config = orig_merge(*configs)
        check_config(config)
        return config

    _swebench.ProgressTrackingAgent = EarlyStopProgressAgent  # type: ignore[misc]
    _swebench.process_instance = process_instance  # type: ignore[assignment]
    _swebench.recursive_merge = recursive_merge  # type: ignore[assignment]
    try:
        yield _swebench
    finally:
        _swebench.ProgressTrackingAgent = orig_agent  # type: ignore[misc]
        _swebench.process_instance = orig_process  # type: ignore[assignment]
        _swebench.recursive_merge = orig_merge  # type: ignore[assignment]


def check_config(config: dict) -> None:
    """Fail before the first instance: the ``agent.earlyeval`` block is valid and its model loads."""
    agent = config.get("agent") if isinstance(config.get("agent"), dict) else {}
    mon, _ = split_config(agent.get("earlyeval"), ADAPTER_KEYS, "agent.earlyeval")
    try:
        monitor_from_config(mon, "agent.earlyeval")  # cached: the instances spawn from this load
    except ConfigError:
        raise
    except Exception as e:
        raise ConfigError(f"agent.earlyeval.model: cannot load {mon['model']}: {e}") from e


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        sys.exit(0 if args else 2)
    cmd, rest = args[0], args[1:]
    if cmd != "swebench":
        print(f"earlyeval-mini: unknown command {cmd!r} (available: swebench)\n\n{USAGE}", file=sys.stderr)
        sys.exit(2)
    with earlyeval_swebench() as sb:
        try:  # (click's standalone mode exits on its own errors and lets others through)
            sb.app(args=rest, prog_name="earlyeval-mini swebench")
        except ConfigError as e:
            print(f"earlyeval-mini swebench: {e}", file=sys.stderr)
            sys.exit(2)


if __name__ == "__main__":
    main()
