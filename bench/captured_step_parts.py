"""Where the host time of a captured training step goes (issue #48): the step of
``bench/captured_step.py``'s ``captured-<backend>`` route, with lazygen's parts of it timed.

    OMP_NUM_THREADS=1 python bench/captured_step_parts.py [--workload encoder]
        [--backend jax] [--steps 500]

Each part is a function wrapped with two clocks, the wall clock and the main thread's CPU
time (``time.thread_time``: what the host itself spends, which a loaded machine inflates
far less than the wall clock), nested parts subtracted from the part that calls them, so
each row is the part's own time per step. ``rest`` is the step's time outside every part:
Dynamo's guards, aot_autograd's and torch.optim's Python wrappers, the autograd engine
(not wrapped: Dynamo traces into torch's backward entry point, and a wrapper there with
clocks in it would move the step's graph breaks). A part whose wall time exceeds its CPU time waited: for the program (the backend's
run and the host read of the loss), or for a core.

The parts are lazygen's internal functions, looked up by name where their callers look
them up: a renamed function fails this script loudly (``AttributeError``), never silently.
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib
import time

from _step_workloads import WORKLOADS, training_step

#: (module, attribute path, row name): the parts, each wrapped where its callers find it.
PARTS = (
    ("lazygen.dynamo.splice", "Splice.__call__", "splice (a graph's call spliced)"),
    ("lazygen.dynamo.host_writes", "HostWrites.__call__", "host writes (step counts)"),
    ("lazygen.runtime.execution.executor", "sync", "sync (own)"),
    ("lazygen.runtime.execution.executor", "_sync_device", "sync a device (own)"),
    ("lazygen.runtime.execution.step_plan", "find", "step plan: replay (the guard)"),
    ("lazygen.runtime.execution.executor", "unreferenced_inputs", "liveness (donation)"),
    ("lazygen.runtime.execution.running", "read_inputs", "read inputs"),
    ("lazygen.runtime.devices", "LazyDevice.live_tensors", "live tensors"),
    ("lazygen.runtime.execution.running", "execute", "backend run (dispatch)"),
    ("lazygen.runtime.execution.step_plan", "device_data", "results as device data"),
)


class Clocks:
    """Per row, the wall and CPU seconds spent in it, its nested parts' excluded."""

    def __init__(self) -> None:
        self.wall: collections.Counter = collections.Counter()
        self.cpu: collections.Counter = collections.Counter()
        self.stack: list[list[float]] = []  # per open part: its nested parts' [wall, cpu]

    def wrap(self, function, row: str):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            start, start_cpu = time.perf_counter(), time.thread_time()
            self.stack.append([0.0, 0.0])
            try:
                return function(*args, **kwargs)
            finally:
                wall, cpu = time.perf_counter() - start, time.thread_time() - start_cpu
                nested = self.stack.pop()
                self.wall[row] += wall - nested[0]
                self.cpu[row] += cpu - nested[1]
                if self.stack:
                    self.stack[-1][0] += wall
                    self.stack[-1][1] += cpu

        return timed

    def clear(self) -> None:
        self.wall.clear()
        self.cpu.clear()


def install(clocks: Clocks, parts=PARTS) -> None:
    """Wrap every part (see ``PARTS``) and the backend's host read (``from_data``)."""
    for module_name, path, row in parts:
        owner = importlib.import_module(module_name)
        *outer, name = path.split(".")
        for attribute in outer:
            owner = getattr(owner, attribute)
        setattr(owner, name, clocks.wrap(getattr(owner, name), row))


def measure(workload: str, backend: str, steps: int) -> tuple[float, float, Clocks]:
    """The step's wall and CPU ms per step and the parts' clocks, after a warm-up."""
    import torch

    import lazygen.runtime as lr

    lr.init(backend=backend)
    clocks = Clocks()
    install(clocks)
    device_backend = type(lr.devices.get_device(0).backend)
    if hasattr(device_backend, "from_data"):
        device_backend.from_data = clocks.wrap(device_backend.from_data, "host read (from_data)")
    step = torch.compile(
        training_step(workload, on_lazy_device=True),
        backend="lazygen",
        options={"backend": backend},
    )
    for _ in range(15):
        step().item()
    clocks.clear()
    start, start_cpu = time.perf_counter(), time.thread_time()
    for _ in range(steps):
        step().item()
    wall = (time.perf_counter() - start) / steps * 1e3
    cpu = (time.thread_time() - start_cpu) / steps * 1e3
    return wall, cpu, clocks


def lazygen_cpu(clocks: Clocks, steps: int) -> float:
    """The main thread's CPU ms per step in lazygen's parts (the backend's own run and host
    read excluded: the program's dispatch and the wait for it)."""
    backend_rows = ("backend run (dispatch)", "host read (from_data)")
    return sum(c for row, c in clocks.cpu.items() if row not in backend_rows) / steps * 1e3


def report(workload: str, backend: str, steps: int, wall: float, cpu: float, clocks) -> str:
    lines = [
        f"{workload} captured-{backend}: step {wall:.3f} ms wall, {cpu:.3f} ms main-thread "
        f"CPU ({steps} steps)",
        f"  {'part':34s} {'wall ms':>8s} {'CPU ms':>8s}",
    ]
    for row in sorted(clocks.cpu, key=clocks.cpu.get, reverse=True):
        w, c = clocks.wall[row] / steps * 1e3, clocks.cpu[row] / steps * 1e3
        lines.append(f"  {row:34s} {w:8.3f} {c:8.3f}")
    rest_wall = wall - sum(clocks.wall.values()) / steps * 1e3
    rest_cpu = cpu - sum(clocks.cpu.values()) / steps * 1e3
    lines.append(f"  {'rest (Dynamo, aot, optim, engine)':34s} {rest_wall:8.3f} {rest_cpu:8.3f}")
    lines.append(f"  {'lazygen parts (CPU)':34s} {'':8s} {lazygen_cpu(clocks, steps):8.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=WORKLOADS, default="encoder")
    parser.add_argument("--backend", choices=("jax", "torchscript", "inductor"), default="jax")
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args(argv)
    wall, cpu, clocks = measure(args.workload, args.backend, args.steps)
    print(report(args.workload, args.backend, args.steps, wall, cpu, clocks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
