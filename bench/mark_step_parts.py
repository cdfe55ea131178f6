"""Where a steady step's ``mark_step`` spends the main thread's time: wall clock against
the main thread's own CPU, for ``mark_step`` and for each graph's launch.

    OMP_NUM_THREADS=1 python bench/mark_step_parts.py [--workload decoder_adamw]
        [--backend torchscript] [--steps 200]

A real loop of ``_real_workloads.py`` (lazy device, every step reads the loss) runs
``--steps`` steady steps after 15 warm ones. Per step, ``mark_step``'s wall time and the
main thread's CPU time in it (``time.thread_time``) are recorded, and the same for every
``Backend.launch`` call, grouped by the graph's input count (a decoder step with early
results launches two graphs: the loss's and the rest). Medians are printed.

Wall well above CPU means the main thread waited: for a run whose results it reads (the
early-results graph, which the loss read needs anyway), or, runnable, for a CPU. On the
2-core development machine, while another benchmark kept it loaded (load average
1.1-1.8), some processes (or stretches of one) showed the rest graph's TorchScript launch
of the 2-layer decoder at a median ~1.2 ms of wall for ~0.13 ms of CPU; idle, and in the
other processes, ~0.12 ms for both. py-spy ``--native`` puts that wait inside
``at::launch``; with the interop worker threads pinned to one CPU and the main thread to
the other, no process showed it: consistent with the worker that ``prim::fork`` wakes
running the graph on the main thread's CPU, the other one being busy, while the main
thread waits for it. That is the machine's load, not lazygen's work, but it moves a
loaded machine's step times by ~1 ms from one process to the next, and profiles that
count runnable threads as busy book it to ``TorchScriptBackend.launch``. One process, no
A/B: compare runs of the same build on one machine only, and several processes of each.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from _real_workloads import WORKLOADS

import lazygen.runtime as lr
from lazygen.runtime.devices import all_devices
from lazygen.runtime.execution import executor


class _Clocked:
    """Wall and main-thread CPU time of each call of ``owner.name`` (wrapped in place),
    grouped by ``group(*args)``."""

    def __init__(self, owner, name: str, group) -> None:
        self.calls: dict[object, tuple[list, list]] = {}
        self.recording = False
        wrapped = getattr(owner, name)

        def clocked(*args, **kwargs):
            start, start_cpu = time.perf_counter(), time.thread_time()
            try:
                return wrapped(*args, **kwargs)
            finally:
                if self.recording:
                    wall, cpu = self.calls.setdefault(group(*args), ([], []))
                    wall.append(time.perf_counter() - start)
                    cpu.append(time.thread_time() - start_cpu)

        setattr(owner, name, clocked)


def run(workload: str, backend: str, steps: int) -> dict[str, tuple[float, float, int]]:
    """Per timed part: median wall ms, median main-thread CPU ms, calls."""
    lr.init(backend=backend)
    torch.set_num_threads(1)
    model, inputs, loss_fn, make_optimizer = WORKLOADS[workload]()
    device = lr.device()
    model = model.to(device)
    inputs = tuple(t.to(device) for t in inputs)
    optimizer = make_optimizer(model.parameters())
    backend_class = type(next(iter(all_devices())).backend)
    mark_step = _Clocked(executor, "mark_step", lambda *args: "mark_step")
    launch = _Clocked(
        backend_class, "launch", lambda _self, _exe, graph_inputs: f"launch/{len(graph_inputs)}"
    )

    def step() -> float:
        optimizer.zero_grad()
        loss = loss_fn(model, inputs)
        loss.backward()
        optimizer.step()
        lr.mark_step()
        return loss.item()

    for _ in range(15):
        step()
    mark_step.recording = launch.recording = True
    for _ in range(steps):
        step()
    parts = {**mark_step.calls, **launch.calls}
    return {
        name: (statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3, len(wall))
        for name, (wall, cpu) in parts.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="decoder_adamw")
    parser.add_argument("--backend", default="torchscript")
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    for name, (wall, cpu, calls) in run(args.workload, args.backend, args.steps).items():
        print(
            f"{args.workload} {args.backend} {name}: wall {wall:.3f} ms, "
            f"main-thread CPU {cpu:.3f} ms ({calls} calls)"
        )


if __name__ == "__main__":
    main()
