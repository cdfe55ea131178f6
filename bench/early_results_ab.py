"""What the early-results split costs and wins on a real loop, both ways in one process.

    python bench/early_results_ab.py [--workloads decoder_adamw,mlp_adam] [--backend B]
                                     [--blocks 10] [--steps 15]

``mark_step`` launches a step's single-element results (the loss) in a graph of their own
when the step has at most ``early_results_max_nodes`` traced nodes (``execution/split.py``):
the loss is read once that graph ran, and the rest runs while the caller traces the next
step. That overlap needs a free core; the split's walks and second launch cost CPU whether
or not it gets one. Fresh processes differ by more than this difference on a loaded
machine, so one process runs blocks of steps alternating ``config.set_early_results(True)``
and ``(False)`` (both graphs compiled before timing) and prints, per setting, the median
and minimum over blocks of the wall time and of the process's CPU time (all threads: the
backward runs on autograd's device thread, the graphs on the backend's worker) per step.
Run with ``OMP_NUM_THREADS=1``; compare the two lines of one workload, not across runs.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from _real_workloads import WORKLOADS

import lazygen.runtime as lr


def _loop(workload: str, backend: str):
    """One step of ``workload`` on the lazy device (the loss read, as real loops do)."""
    lr.init(backend=backend)
    model, inputs, loss_fn, make_optimizer = WORKLOADS[workload]()
    device = lr.device()
    model = model.to(device)
    inputs = tuple(t.to(device) for t in inputs)
    optimizer = make_optimizer(model.parameters())

    def step() -> None:
        optimizer.zero_grad()
        loss = loss_fn(model, inputs)
        loss.backward()
        optimizer.step()
        lr.mark_step()
        loss.item()

    return step


def measure(workload: str, backend: str, blocks: int, steps: int) -> dict[str, tuple]:
    """Per setting (``split``, ``whole``): per block, the wall and CPU ms a step and how
    many steps were split (all of the ``split`` blocks' steps, unless the step is larger
    than ``early_results_max_nodes`` or the backend runs graphs synchronously)."""
    step = _loop(workload, backend)
    settings = {"split": True, "whole": False}
    for enabled in settings.values():  # each setting's graphs compiled before timing
        lr.config.set_early_results(enabled)
        for _ in range(5):
            step()
    times: dict[str, tuple[list, list, list]] = {name: ([], [], []) for name in settings}
    for block in range(blocks):
        names = list(settings) if block % 2 == 0 else list(reversed(settings))
        for name in names:
            lr.config.set_early_results(settings[name])
            step()  # the first step after a switch syncs the other setting's last run
            splits = lr.metrics.counter_value("EarlyResultGraph") or 0
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(steps):
                step()
            times[name][0].append((time.perf_counter() - wall) / steps * 1e3)
            times[name][1].append((time.process_time() - cpu) / steps * 1e3)
            times[name][2].append((lr.metrics.counter_value("EarlyResultGraph") or 0) - splits)
    lr.config.set_early_results(True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default="decoder_adamw,mlp_adam")
    parser.add_argument("--backend", default="torchscript")
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--steps", type=int, default=15)
    args = parser.parse_args()
    torch.manual_seed(0)
    for workload in args.workloads.split(","):
        measured = measure(workload, args.backend, args.blocks, args.steps)
        for name, (wall, cpu, splits) in measured.items():
            print(
                f"{workload} {args.backend} {name}: wall median {statistics.median(wall):.2f}"
                f" ms (min {min(wall):.2f}), CPU median {statistics.median(cpu):.2f} ms"
                f" (min {min(cpu):.2f}), {sum(splits)} of {len(splits) * args.steps} steps split"
            )


if __name__ == "__main__":
    main()
