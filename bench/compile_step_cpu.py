"""CPU time of one compiled training step, in blocks, for differences of a few microseconds.

    python bench/compile_step_cpu.py WORKLOAD [IMPL ...] [--blocks 11] [--steps 500]

``bench/compile_backend.py`` times each implementation in its own process by wall clock;
on a shared machine its rows differ by 10% from one run to the next, more than the
per-call costs being cut. This one compiles the step of ``compile_backend`` (the same
workloads and implementations) once per implementation in *one* process, then runs blocks
of ``--steps`` steps in turns, implementation after implementation, and reports each one's
thread CPU time per step: the least block (what the program costs when nothing else gets
in its way) and the median. One thread (``torch.set_num_threads(1)``), so the thread's CPU
time is the step's.

Caveat, printed with the results: in one process every implementation shares the state of
the first one that needs it. Once lazygen's device is up, Dynamo registers the current
stream in every frame it traces and runs a prologue per call of each compiled frame that
does not drop it (Inductor's do not; lazygen's backend drops it when unread): ~5 us a frame.
Compare lazygen with Inductor in separate processes (``compile_backend.py``) for that.
"""

from __future__ import annotations

import argparse
import statistics
import time

import compile_backend
import torch
import torch._dynamo


def compiled_step(workload: str, impl: str):
    """The compiled training step of ``compile_backend`` (backward traced), warmed up."""
    step = compile_backend.compiled(compile_backend._step(workload, detach=True), impl)
    for _ in range(compile_backend.WARMUP * 6):
        step().item()
    return step


def blocks(steps: dict, blocks: int, per_block: int) -> dict[str, list[float]]:
    """Microseconds of thread CPU time per step, one value per block, blocks in turns."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(blocks):
        for name, step in steps.items():
            start = time.thread_time_ns()
            for _ in range(per_block):
                step().item()
            times[name].append((time.thread_time_ns() - start) / per_block / 1e3)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=compile_backend.WORKLOADS)
    parser.add_argument("impls", nargs="*", default=["lazygen-inductor", "inductor"])
    parser.add_argument("--blocks", type=int, default=11)
    parser.add_argument("--steps", type=int, default=500, help="steps per block")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch._dynamo.config.trace_autograd_ops = True
    steps = {impl: compiled_step(args.workload, impl) for impl in args.impls}
    times = blocks(steps, args.blocks, args.steps)
    first = args.impls[0]
    least = {impl: min(t) for impl, t in times.items()}
    print(f"{args.workload}: thread CPU time per step, {args.blocks} blocks of {args.steps}")
    for impl, t in times.items():
        print(
            f"  {impl:22s} least {least[impl]:9.1f} us  median {statistics.median(t):9.1f} us"
            f"  {first} / this {least[first] / least[impl]:.2f}x"
        )
    if any(i.startswith("lazygen-") for i in args.impls) and len(args.impls) > 1:
        print("  (one process: Inductor's frames pay Dynamo's stream prologue, lazygen's not)")


if __name__ == "__main__":
    main()
