"""torch.compile(backend="lazygen") next to eager and torch.compile's own inductor.

    python bench/compile_backend.py [--steps 60] [--impls eager,lazygen-torchscript,inductor]

Workloads (the whole training step compiled, loss read every step):
* ``mlp``: MLP 784-256-10, batch 64, Adam;
* ``decoder``: 2-layer TransformerDecoder (d=16, 4 heads, ff 32), batch 3x6, AdamW.

Each (workload, implementation) runs in a fresh process. Reported: the first step (Dynamo,
aot_autograd, capture and compile) and the median of the steps after the third. Target:
steady state <= 1.2x eager with lazygen's TorchScript backend.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time

import torch

WORKLOADS = ("mlp", "decoder")
IMPLS = ("eager", "lazygen-torchscript", "lazygen-inductor", "inductor")


def _workload(name: str):
    torch.manual_seed(0)
    if name == "mlp":
        model = torch.nn.Sequential(
            torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
        )
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))

        def loss_fn():
            return torch.nn.functional.cross_entropy(model(x), y)

    else:
        layer = torch.nn.TransformerDecoderLayer(16, 4, 32, batch_first=True)
        model = torch.nn.TransformerDecoder(layer, 2)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x, memory = torch.randn(3, 6, 16), torch.randn(3, 6, 16)

        def loss_fn():
            return model(x, memory).pow(2).mean()

    def step():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        return loss

    return step


def run_one(workload: str, impl: str, steps: int) -> dict:
    torch.set_num_threads(1)
    step = _workload(workload)
    if impl.startswith("lazygen-"):
        step = torch.compile(step, backend="lazygen", options={"backend": impl[8:]})
    elif impl == "inductor":
        step = torch.compile(step)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step().item()
        times.append(time.perf_counter() - start)
    result = {"first_s": times[0], "steady_ms": statistics.median(times[3:]) * 1e3}
    if impl.startswith("lazygen-"):
        import lazygen.runtime as lr

        result["captures"] = lr.metrics.counter_value("DynamoCapture") or 0
        result["eager_graphs"] = lr.metrics.counter_value("DynamoEagerGraph") or 0
    return result


def _available(impl: str) -> bool:
    """lazygen backends whose module is not in this build (inductor, on some branches) are
    reported as missing rather than as failures."""
    if not impl.startswith("lazygen-"):
        return True
    from lazygen.runtime.backends import BUILTIN

    target = BUILTIN.get(impl[8:])
    return target is None or importlib.util.find_spec(target.partition(":")[0]) is not None


def _child(workload: str, impl: str, steps: int) -> dict | None:
    if not _available(impl):
        print(f"  {workload} {impl}: backend not in this build, skipped", file=sys.stderr)
        return None
    cmd = [sys.executable, __file__, "--child", workload, impl, "--steps", str(steps)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {workload} {impl}: failed ({tail})", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--impls", default="eager,lazygen-torchscript,lazygen-inductor,inductor")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "IMPL"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(*args.child, args.steps)))
        return
    print(f"compile_backend: {args.steps} steps, 1 thread; steady = median of steps 4..")
    print(f"{'workload':9} {'impl':21} {'first step':>11} {'steady':>11} {'vs eager':>9}  notes")
    for workload in args.workloads.split(","):
        results = {impl: _child(workload, impl, args.steps) for impl in args.impls.split(",")}
        eager = (results.get("eager") or {}).get("steady_ms")
        for impl, r in results.items():
            if r is None:
                continue
            ratio = f"{r['steady_ms'] / eager:.2f}x" if eager else "-"
            notes = ""
            if "captures" in r:
                notes = f"{r['captures']} captures, {r['eager_graphs']} eager graphs"
            print(
                f"{workload:9} {impl:21} {r['first_s']:>9.2f} s {r['steady_ms']:>8.2f} ms "
                f"{ratio:>9}  {notes}"
            )


if __name__ == "__main__":
    main()
