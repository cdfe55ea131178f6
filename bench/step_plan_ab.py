"""What a captured step's sync costs with and without its plan, both ways in one process.

    OMP_NUM_THREADS=1 python bench/step_plan_ab.py [--workload encoder]
        [--backend torchscript] [--blocks 24] [--steps 25]

A captured whole step (``torch.compile`` of forward, backward and optimizer with the model
on the lazy device) syncs one graph of the same structure at every step; the executor
replays the device's ``StepPlan`` of the step before (``execution/step_plan.py``) instead
of the generic look-up. The difference is a fraction of a millisecond, below what fresh
processes resolve on a loaded machine, so one process runs blocks of steps with the plan
on and off alternately (off: ``step_plan.find`` answers None, so every step takes the
generic path, as before the plan) and prints per arm the median over the steady steps
(the first 5 of each block dropped) of the step's CPU time and of the sync's own CPU time
(``_sync_device`` less the program's run). Compare the two lines of one run only; one
workload and backend per process (``lazygen.runtime.init`` chooses the backend once).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from _step_workloads import WORKLOADS, training_step

import lazygen.runtime as lr
from lazygen.runtime.execution import executor, running, step_plan


class _Timed:
    """CPU time spent in ``module.name`` since the last ``clear`` (wrapped in place)."""

    def __init__(self, module, name: str) -> None:
        self.spent = 0.0
        wrapped = getattr(module, name)

        def timed(*args, **kwargs):
            start = time.process_time()
            try:
                return wrapped(*args, **kwargs)
            finally:
                self.spent += time.process_time() - start

        setattr(module, name, timed)


def run(workload: str, backend: str, blocks: int, steps: int) -> dict[str, tuple]:
    """Per arm: median step CPU time, median sync CPU time less the program's, steps timed,
    steps that replayed the plan."""
    lr.init(backend=backend)
    step = training_step(workload, on_lazy_device=True)
    compiled = torch.compile(step, backend="lazygen", options={"backend": backend})
    for _ in range(15):
        compiled().item()
    sync, program = _Timed(executor, "_sync_device"), _Timed(running, "execute")
    planned, generic = step_plan.find, lambda device, outputs: None
    cpu: dict[str, list] = {"plan": [], "generic": []}
    own: dict[str, list] = {"plan": [], "generic": []}
    replays = {"plan": 0, "generic": 0}  # steps that replayed the plan
    for block in range(blocks):
        arm = "plan" if block % 2 else "generic"
        step_plan.find = planned if arm == "plan" else generic
        for i in range(steps):
            sync.spent = program.spent = 0.0
            before = lr.metrics.counter_value("StepPlanReplay") or 0
            start = time.process_time()
            compiled().item()
            if i >= min(5, steps - 1):
                cpu[arm].append(time.process_time() - start)
                own[arm].append(sync.spent - program.spent)
                replays[arm] += (lr.metrics.counter_value("StepPlanReplay") or 0) - before
    step_plan.find = planned
    return {
        arm: (statistics.median(cpu[arm]), statistics.median(own[arm]), len(cpu[arm]), replays[arm])
        for arm in cpu
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=WORKLOADS, default="encoder")
    parser.add_argument("--backend", default="torchscript")
    parser.add_argument("--blocks", type=int, default=24)
    parser.add_argument("--steps", type=int, default=25)
    args = parser.parse_args()
    for arm, (cpu, own, n, k) in run(args.workload, args.backend, args.blocks, args.steps).items():
        print(
            f"{args.workload} {args.backend} {arm}: step CPU {cpu * 1e3:.3f} ms, "
            f"sync less program {own * 1e3:.3f} ms ({n} steps, {k} planned)"
        )


if __name__ == "__main__":
    main()
