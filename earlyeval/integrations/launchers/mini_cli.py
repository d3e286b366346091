"""``earlyeval-mini``: a SWE-bench batch of mini-swe-agent with the earlyeval agent.

``mini-extra swebench``'s options and outputs, built from that runner's own functions, with the agent class
taken from the config and each instance's SWE-bench record as its task. Details: docs/integrations.md,
"mini-swe-agent".
"""

from __future__ import annotations

from earlyeval.core.extras import require

require("cli", "earlyeval-mini", ("typer",))

import concurrent.futures
import copy
import inspect
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import typer
from minisweagent.agents import get_agent_class
from minisweagent.config import get_config_from_spec
from minisweagent.models import get_model
from minisweagent.run.benchmarks import swebench as sb
from minisweagent.run.benchmarks.utils.batch_progress import RunBatchProgressManager
from minisweagent.run.benchmarks.utils.common import ProgressTrackingAgent
from minisweagent.utils.log import add_file_handler, logger
from minisweagent.utils.serialize import UNSET, recursive_merge
from rich.live import Live

from earlyeval.integrations.config import (
    ConfigError,
    monitor_from_config,
    split_config,
    submit_required,
)
from earlyeval.integrations.mini_swe_agent import ADAPTER_KEYS, EarlyStopAgent

BENCHMARK_HALT_ON = "both"  # a benchmark pass records the predicted outcome of every decided run
AGENT_KEY = "agent.agent_class"
TASK_FIELDS = (
    "instance_id",
    "problem_statement",
    "patch",
    "test_patch",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "repo",
    "base_commit",
    "version",
    "created_at",
)

USAGE = """usage: earlyeval-mini swebench [mini-extra swebench options]

Runs mini-swe-agent on SWE-bench with earlyeval's EarlyStopAgent (configured by the config's
`agent.earlyeval` block: model, thresholds, tasks, halt_on (default both)); see docs/integrations.md.
`earlyeval-mini swebench --help` lists the options (those of mini-extra swebench)."""


class EarlyStopProgressAgent(EarlyStopAgent, ProgressTrackingAgent):
    """EarlyStopAgent with the batch runner's progress reporting (``progress_manager``, ``instance_id``)."""


def agent_class_of(agent_config: dict) -> type:
    """The batch agent class: ``agent.agent_class`` through mini's ``get_agent_class`` (default and for
    ``EarlyStopAgent`` itself: ``EarlyStopProgressAgent``); it must report progress and consult the monitor."""
    spec = agent_config.get("agent_class")
    if spec in (None, "", UNSET):
        return EarlyStopProgressAgent
    try:
        cls = get_agent_class(str(spec))
    except ValueError as e:
        raise ConfigError(f"{AGENT_KEY}: {e}") from None
    if cls is EarlyStopAgent:
        return EarlyStopProgressAgent
    if not (
        isinstance(cls, type)
        and issubclass(cls, EarlyStopAgent)
        and issubclass(cls, ProgressTrackingAgent)
    ):
        raise ConfigError(
            f"{AGENT_KEY}: {spec!r} is not an EarlyStopAgent with the runner's progress reporting "
            f"(subclass {EarlyStopProgressAgent.__module__}.EarlyStopProgressAgent, or leave the key out)"
        )
    return cls


def instance_agent_config(config: dict, instance: dict) -> dict:
    """This instance's ``agent`` config: the batch's, its ``earlyeval.task`` the instance (halt_on default both)."""
    agent = copy.deepcopy(config.get("agent") or {})
    agent.pop("agent_class", None)
    ee = dict(agent.get("earlyeval") or {})
    ee["task"] = {k: instance[k] for k in TASK_FIELDS if instance.get(k) is not None}
    if ee.get("halt_on") is None:
        ee["halt_on"] = BENCHMARK_HALT_ON
    agent["earlyeval"] = ee
    return agent


def check_config(config: dict) -> None:
    """Fail before the first instance: the agent class and the ``agent.earlyeval`` block are valid, its model loads."""
    agent = config.get("agent") if isinstance(config.get("agent"), dict) else {}
    agent_class_of(agent)
    ee = agent.get("earlyeval")
    if isinstance(ee, dict) and ee.get("halt_on") is None:
        ee = {**ee, "halt_on": BENCHMARK_HALT_ON}
    mon, opts = split_config(ee, ADAPTER_KEYS, "agent.earlyeval")
    submit_required({**opts, "halt_on": mon.halt_on}, "submit_diff", "agent.earlyeval")
    try:
        # cached: the instances spawn from this load
        monitor_from_config(mon, "agent.earlyeval", allow_pass=True)
    except ConfigError:
        raise
    except Exception as e:
        raise ConfigError(f"agent.earlyeval.model: cannot load {mon.model}: {e}") from e


def process_instance(
    instance: dict, output_dir: Path, config: dict, progress_manager: RunBatchProgressManager
) -> None:
    """One SWE-bench instance, as ``mini-extra swebench`` processes it, with the configured earlyeval agent."""
    instance_id = instance["instance_id"]
    instance_dir = output_dir / instance_id
    sb.remove_from_preds_file(output_dir / "preds.json", instance_id)
    (instance_dir / f"{instance_id}.traj.json").unlink(missing_ok=True)
    model = get_model(config=config.get("model", {}))
    progress_manager.on_instance_start(instance_id)
    progress_manager.update_instance_status(instance_id, "Pulling/starting environment")
    agent, exit_status, result, extra_info = None, None, None, {}
    try:
        env = sb.get_sb_environment(config, instance)
        cls = agent_class_of(config.get("agent") or {})
        agent = cls(
            model,
            env,
            progress_manager=progress_manager,
            instance_id=instance_id,
            **instance_agent_config(config, instance),
        )
        info = agent.run(instance["problem_statement"])
        exit_status, result = info.get("exit_status"), info.get("submission")
    except Exception as e:
        logger.error(f"Error processing instance {instance_id}: {e}", exc_info=True)
        exit_status, result = type(e).__name__, ""
        extra_info = {"traceback": traceback.format_exc(), "exception_str": str(e)}
    finally:
        if agent is not None:
            traj_path = instance_dir / f"{instance_id}.traj.json"
            agent.save(
                traj_path,
                {
                    "info": {"exit_status": exit_status, "submission": result, **extra_info},
                    "instance_id": instance_id,
                },
            )
            logger.info(f"Saved trajectory to '{traj_path}'")
        sb.update_preds_file(
            output_dir / "preds.json", instance_id, model.config.model_name, result
        )
        progress_manager.on_instance_end(instance_id, exit_status)


def run_batch(
    subset: str,
    split: str,
    slice_spec: str,
    filter_spec: str,
    shuffle: bool,
    output: str,
    workers: int,
    model: str | None,
    model_class: str | None,
    redo_existing: bool,
    config_spec: list[str],
    environment_class: str | None,
) -> None:
    """``mini-extra swebench``'s main loop (dataset, filters, configs, progress, workers) over ``process_instance``."""
    output_path = Path(output)
    configs = [get_config_from_spec(spec) for spec in config_spec]
    configs.append(
        {
            "environment": {"environment_class": environment_class or UNSET},
            "model": {"model_name": model or UNSET, "model_class": model_class or UNSET},
        }
    )
    config = recursive_merge(*configs)
    check_config(config)  # before any instance or output
    output_path.mkdir(parents=True, exist_ok=True)
    add_file_handler(output_path / "minisweagent.log")
    from datasets import load_dataset  # as mini-extra swebench: only when a batch runs

    dataset_path = sb.DATASET_MAPPING.get(subset, subset)
    logger.info(f"Loading dataset {dataset_path}, split {split}...")
    instances = sb.filter_instances(
        list(load_dataset(dataset_path, split=split)),
        filter_spec=filter_spec,
        slice_spec=slice_spec,
        shuffle=shuffle,
    )
    if not redo_existing and (output_path / "preds.json").exists():
        done = set(json.loads((output_path / "preds.json").read_text()))
        logger.info(f"Skipping {len(done)} existing instances")
        instances = [i for i in instances if i["instance_id"] not in done]
    logger.info(f"Running on {len(instances)} instances...")
    progress = RunBatchProgressManager(
        len(instances), output_path / f"exit_statuses_{time.time()}.yaml"
    )
    with Live(progress.render_group, refresh_per_second=4):
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as executor:
            futures = {
                executor.submit(process_instance, i, output_path, config, progress): i[
                    "instance_id"
                ]
                for i in instances
            }
            try:
                _wait(futures, progress)
            except KeyboardInterrupt:
                logger.info("Cancelling all pending jobs. Press ^C again to exit immediately.")
                for f in futures:
                    if not f.running() and not f.done():
                        f.cancel()
                _wait(futures, progress)


def _wait(futures: dict[concurrent.futures.Future, str], progress: RunBatchProgressManager) -> None:
    for future in concurrent.futures.as_completed(futures):
        try:
            future.result()
        except concurrent.futures.CancelledError:
            pass
        except Exception as e:
            logger.error(f"Error in future for instance {futures[future]}: {e}", exc_info=True)
            progress.on_uncaught_exception(futures[future], e)


def _swebench(**options: Any) -> None:
    try:
        run_batch(**options)
    except ConfigError as e:
        print(f"earlyeval-mini swebench: {e}", file=sys.stderr)
        raise typer.Exit(2)


# the options are mini-extra swebench's own (its typer signature), so that both read the same command lines
_swebench.__signature__ = inspect.signature(sb.main)  # type: ignore[attr-defined]
if list(inspect.signature(sb.main).parameters) != list(inspect.signature(run_batch).parameters):
    raise ImportError(
        "earlyeval-mini: this mini-swe-agent's `mini-extra swebench` options differ from the ones "
        f"run_batch takes ({list(inspect.signature(sb.main).parameters)}); see docs/integrations.md"
    )
app = typer.Typer(rich_markup_mode="rich", add_completion=False)
app.command(
    help="mini-swe-agent on SWE-bench instances with earlyeval's agent (options: mini-extra swebench's)."
)(_swebench)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        sys.exit(0 if args else 2)
    cmd, rest = args[0], args[1:]
    if cmd != "swebench":
        print(
            f"earlyeval-mini: unknown command {cmd!r} (available: swebench)\n\n{USAGE}",
            file=sys.stderr,
        )
        sys.exit(2)
    app(args=rest, prog_name="earlyeval-mini swebench")


if __name__ == "__main__":
    main()
