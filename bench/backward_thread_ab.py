"""What running a captured step's backward on the calling thread saves, both ways in one
process.

    OMP_NUM_THREADS=1 python bench/backward_thread_ab.py [--workload encoder]
        [--backend jax] [--blocks 24] [--steps 25]

torch's autograd engine runs the backward nodes of an accelerator on that device's worker
thread while the caller waits; lazygen runs a backward whose roots are all on the lazy
device on the calling thread instead (``privateuse1/backward_thread.py``). The difference is
a fraction of a millisecond per step, below what fresh processes resolve on a loaded
machine, so one process runs blocks of steps both ways alternately (``threads``: within
torch's backward entry point past lazygen's wrapper, ``backward_thread.engine_threads``:
torch's default; ``caller``: lazygen's) and prints per
arm the median over the steady steps (the first 5 of each block dropped) of the step's wall
and CPU time and of ``loss.backward()``'s wall time. Compare the lines of one run only; one
workload and backend per process (``lazygen.runtime.init`` chooses the backend once).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from _step_workloads import WORKLOADS, training_step

import lazygen.runtime as lr
from lazygen.runtime.privateuse1 import backward_thread

ARMS = ("threads", "caller")


class _Backward:
    """torch's backward entry point replaced by one that keeps each call's wall time (timing
    inside the step would make Dynamo break its graph there) and runs it through lazygen's
    wrappers (arm ``caller``) or past the calling-thread one (``threads``)."""

    def __init__(self) -> None:
        self.arm = "caller"
        self.walls: list[float] = []
        through = {"caller": torch.autograd.graph._engine_run_backward}
        through["threads"] = backward_thread.engine_threads(through["caller"])

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return through[self.arm](*args, **kwargs)
            finally:
                self.walls.append(time.perf_counter() - start)

        torch.autograd.graph._engine_run_backward = torch.autograd._engine_run_backward = timed


def run(workload: str, backend: str, blocks: int, steps: int) -> dict[str, tuple]:
    """Per arm: median step wall, step CPU and backward wall time (s), steps timed."""
    lr.init(backend=backend)
    step = training_step(workload, on_lazy_device=True)
    compiled = torch.compile(step, backend="lazygen", options={"backend": backend})
    backward_entry = _Backward()
    for _ in range(15):
        compiled().item()
    wall: dict[str, list] = {arm: [] for arm in ARMS}
    cpu: dict[str, list] = {arm: [] for arm in ARMS}
    backward: dict[str, list] = {arm: [] for arm in ARMS}
    for block in range(blocks):
        arm = ARMS[block % 2]
        backward_entry.arm = arm
        for i in range(steps):
            start, start_cpu = time.perf_counter(), time.process_time()
            compiled().item()
            if i >= min(5, steps - 1):
                wall[arm].append(time.perf_counter() - start)
                cpu[arm].append(time.process_time() - start_cpu)
                backward[arm].append(backward_entry.walls[-1])
    return {
        arm: (
            statistics.median(wall[arm]),
            statistics.median(cpu[arm]),
            statistics.median(backward[arm]),
            len(wall[arm]),
        )
        for arm in ARMS
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=WORKLOADS, default="encoder")
    parser.add_argument("--backend", default="jax")
    parser.add_argument("--blocks", type=int, default=24)
    parser.add_argument("--steps", type=int, default=25)
    args = parser.parse_args()
    for arm, (wall, cpu, backward, n) in run(
        args.workload, args.backend, args.blocks, args.steps
    ).items():
        print(
            f"{args.workload} {args.backend} {arm}: step {wall * 1e3:.3f} ms, CPU "
            f"{cpu * 1e3:.3f} ms, backward() {backward * 1e3:.3f} ms ({n} steps)"
        )


if __name__ == "__main__":
    main()
