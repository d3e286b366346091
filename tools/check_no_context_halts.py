"""The README's hand-written Monitor loop (EarlyStopper) replayed on the real resolved SWE-bench runs
with the shipped model: how many runs it halts (and halts wrongly, as failures) without a task
(start() never called; start(task=None)), with a task id and prompt only, and with the task table.
Usage: .venv/bin/python tools/check_no_context_halts.py [models/swebench]"""

from __future__ import annotations

import sys
from collections import Counter

from earlyeval import Monitor
from earlyeval.integrations import EarlyStopper
from earlyeval.live.runstate import RunState
from earlyeval.tables.store import read_ingested_tasks, read_ingested_trajectories


def main() -> None:
    mdir = sys.argv[1] if len(sys.argv) > 1 else "models/swebench"
    tasks = read_ingested_tasks("swebench")
    resolved = [t for t in read_ingested_trajectories("swebench") if t.outcome == 1]

    def no_start(st, t):
        st.decisions, st.halted, st.n_steps = [], None, 0
        st.monitor.run = RunState()  # a run never started

    modes = {
        "no start()": (no_start, None),
        "start(task=None)": (lambda st, t: st.start(task=None, run_id=t.run_id), None),
        "task id + prompt, no task table": (
            lambda st, t: st.start(
                task={"task_id": t.task_id, "prompt": t.prompt}, run_id=t.run_id
            ),
            None,
        ),
        "task id + prompt + task table (README)": (
            lambda st, t: st.start(
                task={"task_id": t.task_id, "prompt": t.prompt}, run_id=t.run_id
            ),
            tasks,
        ),
    }
    print(f"{len(resolved)} resolved SWE-bench runs, model {mdir}")
    for name, (start, table) in modes.items():
        stopper = EarlyStopper(Monitor.load(mdir, tasks=table))
        c: Counter = Counter()
        for t in resolved:
            start(stopper, t)
            for s in t.steps[:-1]:
                d = stopper.after_step(
                    action=s.action,
                    observation=s.observation,
                    thought=s.thought,
                    error=s.error,
                    input_tokens=s.input_tokens,
                    output_tokens=s.output_tokens,
                    cost_usd=s.cost_usd,
                )
                c[d.context] += 1
                if d.halt:
                    c["halted"] += 1
                    c["halted as failure (wrong)"] += d.outcome == "failure"
                    break
        print(
            f"  {name:<42} halted {c['halted']:>4}, wrongly (as failure) {c['halted as failure (wrong)']:>4}; "
            f"decisions by context {dict((k, v) for k, v in c.items() if not k.startswith('halted'))}"
        )
    print(
        "(the model was trained on these runs: the last line is in-sample, not an accuracy estimate)"
    )


if __name__ == "__main__":
    main()
