"""``earlyeval-sweagent``: SWE-agent's ``sweagent run`` with the earlyeval hook, switched on from a config file.

    earlyeval-sweagent run --earlyeval ee.yaml [every `sweagent run` option: --config ..., --agent.model.name ...]

``sweagent run`` itself, the agent given an ``EarlyStopHook`` from the ``earlyeval`` block (a bad block exits 2);
``run-batch`` has no hook, so only ``run``. Why and how: docs/integrations.md, "SWE-agent".
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from sweagent.run.common import BasicCLI
from sweagent.run.run_single import RunSingle, RunSingleConfig

from earlyeval.integrations.config import ConfigError
from earlyeval.integrations.swe_agent import EarlyStopHook

USAGE = """usage: earlyeval-sweagent run --earlyeval EE.yaml [sweagent run options]

Runs `sweagent run` (SWE-agent's own options and configs) with earlyeval's EarlyStopHook on its agent,
configured by EE.yaml's earlyeval block (model, thresholds, tasks, halt_on, autosubmit, run_id);
see docs/integrations.md.  `earlyeval-sweagent run --help` lists sweagent run's options."""


def read_block(path: Path) -> dict[str, Any]:
    """The ``earlyeval`` block of ``path``: the whole file, or its ``earlyeval`` key; a ConfigError naming the file."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"--earlyeval {path}: cannot read it: {e}") from None
    if isinstance(data, dict) and isinstance(data.get("earlyeval"), dict):
        data = data["earlyeval"]
    if not isinstance(data, dict):
        raise ConfigError(
            f"--earlyeval {path}: an earlyeval block (a mapping with at least `model:`), "
            f"not {type(data).__name__}"
        )
    return data


def run(args: list[str]) -> RunSingle:
    """``sweagent run`` with the hook (the runner, after its run)."""
    rest, block = list(args), None
    if "--earlyeval" in rest:
        i = rest.index("--earlyeval")
        if i + 1 >= len(rest):
            raise ConfigError("--earlyeval: needs the path of the earlyeval block (YAML)")
        block = read_block(Path(rest[i + 1]))
        del rest[i : i + 2]
    elif "-h" not in rest and "--help" not in rest:
        raise ConfigError(
            "--earlyeval EE.yaml is required (the earlyeval block: at least `model: <model dir>`)"
        )
    hook = _hook(block) if block is not None else None  # before any environment starts
    config = BasicCLI(RunSingleConfig, help_text=USAGE).get_config(rest)
    runner = RunSingle.from_config(config)  # type: ignore[arg-type]
    if hook is not None:
        runner.agent.add_hook(hook)
    runner.run()
    return runner


def _hook(block: dict[str, Any]) -> EarlyStopHook:
    try:
        return EarlyStopHook.from_config(block, "earlyeval")
    except ConfigError:
        raise
    except Exception as e:
        raise ConfigError(f"earlyeval.model: cannot load {block.get('model')}: {e}") from e


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        sys.exit(0 if args else 2)
    if args[0] not in ("run", "r"):
        print(
            f"earlyeval-sweagent: unknown command {args[0]!r} (available: run)\n\n{USAGE}",
            file=sys.stderr,
        )
        sys.exit(2)
    try:
        run(args[1:])
    except ConfigError as e:
        print(f"earlyeval-sweagent run: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
