"""Per-op tracing cost: a chain of ``add``s on 16x16, lazy (hand-written nodes) vs eager.

Run: ``python -m tests.support.trace_cost``.
"""

from __future__ import annotations

import time

import torch

import lazygen.runtime as lr


def measure(ops: int = 2000, repeats: int = 5) -> dict[str, float]:
    from lazygen.runtime import dispatch as registry

    from . import hand_written_nodes

    lr.init()
    registry.register_kernels(hand_written_nodes.KERNELS)
    results = {}
    for name, device in (("eager", "cpu"), ("lazy", "lazygen")):
        best = float("inf")
        for _ in range(repeats):
            x = torch.ones(16, 16, device=device)
            y = torch.ones(16, 16, device=device)
            start = time.perf_counter()
            for _ in range(ops):
                x = x + y
            best = min(best, time.perf_counter() - start)
            if device == "lazygen":
                lr.mark_step()
        results[name] = best / ops * 1e6
    start = time.perf_counter()
    x = torch.ones(16, 16, device="lazygen")
    for _ in range(ops):
        x = x + y
    lr.mark_step()
    results["lazy_trace_and_run_cached"] = (time.perf_counter() - start) / ops * 1e6
    registry.unregister_kernels(hand_written_nodes.KERNELS)
    return results


if __name__ == "__main__":
    for key, value in measure().items():
        print(f"{key}: {value:.2f} us/op")
