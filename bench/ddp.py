"""A DDP training step with 2 processes on loopback gloo: lazygen vs eager, one run.

    python bench/ddp.py [--steps-per-block 10] [--blocks 5] [--nproc 2]

MLP 784-256-10, batch 64 per process, SGD(momentum 0.9). Each process trains an eager DDP
model (CPU tensors, a plain gloo group) and a lazy DDP model (the ``lazygen`` c10d backend)
in alternating blocks of steps, both ranks starting each block together (a barrier); a
lazy block ends when its last graph ran. Reported: median ms/step of each, their ratio,
and per lazy step (the last block): graphs run, collectives in the graph, graph cuts.

``--cut`` measures the fallback for backends that cannot run functional collectives.

Without ``RANK`` in the environment the script launches itself ``--nproc`` times (free
port, own sessions, killed on exit or timeout) and prints rank 0's table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from _timing import run_ranks


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps-per-block", type=int, default=10)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument(
        "--cut",
        action="store_true",
        help="make the backend cut the graph at each collective (as one that cannot run "
        "functional collectives would)",
    )
    return parser.parse_args()


def launch(args: argparse.Namespace) -> int:
    stdout, codes = run_ranks(args.nproc, args.timeout)
    print(stdout, end="")
    return max(abs(code) for code in codes)


def rank_main(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    import lazygen.runtime as lr

    torch.set_num_threads(1)
    lr.init()
    if args.cut:
        lr.backend().collectives_in_graph = False
    dist.init_process_group("cpu:gloo,lazygen:lazygen")
    gloo = dist.new_group(backend="gloo")
    rank = dist.get_rank()
    device = lr.device()

    def mlp():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))

    eager = DDP(mlp(), process_group=gloo)
    lazy = DDP(mlp().to(device))
    optimizers = {
        "eager": torch.optim.SGD(eager.parameters(), lr=0.01, momentum=0.9),
        "lazy": torch.optim.SGD(lazy.parameters(), lr=0.01, momentum=0.9),
    }
    models = {"eager": eager, "lazy": lazy}
    gen = torch.Generator().manual_seed(rank)
    x, y = torch.randn(64, 784, generator=gen), torch.randint(0, 10, (64,), generator=gen)
    inputs = {"eager": (x, y), "lazy": (x.to(device), y.to(device))}
    counters = lr.metrics.counter_value

    def block(name: str) -> float:
        model, opt, (data, target) = models[name], optimizers[name], inputs[name]
        dist.barrier(group=gloo)
        start = time.perf_counter()
        for _ in range(args.steps_per_block):
            nn.functional.cross_entropy(model(data), target).backward()
            opt.step()
            opt.zero_grad()
            if name == "lazy":
                lr.mark_step()
        if name == "lazy":
            lr.wait_device_ops()
        return (time.perf_counter() - start) / args.steps_per_block

    times: dict[str, list[float]] = {"eager": [], "lazy": []}
    block("eager"), block("lazy")  # warm-up: compiles, bucket rebuild
    for _ in range(args.blocks):
        for name in ("eager", "lazy"):
            before = [counters(c) or 0 for c in ("CachedCompile", "UncachedCompile")]
            before += [counters(c) or 0 for c in ("lazy::all_reduce", "DistributedGraphCut")]
            times[name].append(block(name))
            after = [counters(c) or 0 for c in ("CachedCompile", "UncachedCompile")]
            after += [counters(c) or 0 for c in ("lazy::all_reduce", "DistributedGraphCut")]
            if name == "lazy":
                delta = [(a - b) / args.steps_per_block for a, b in zip(after, before, strict=True)]
    eager_ms = statistics.median(times["eager"]) * 1000
    lazy_ms = statistics.median(times["lazy"]) * 1000
    result = {
        "eager_ms_per_step": round(eager_ms, 2),
        "lazy_ms_per_step": round(lazy_ms, 2),
        "lazy_over_eager": round(lazy_ms / eager_ms, 2),
        "graphs_per_step": delta[0] + delta[1],
        "uncached_compiles_per_step": delta[1],
        "collectives_in_graph_per_step": delta[2],
        "graph_cuts_per_step": delta[3],
    }
    if rank == 0:
        mode = "graph cut per collective" if args.cut else "collectives in the graph"
        print(f"\n### DDP step, 2 processes, gloo on loopback, {mode}")
        print("(MLP 784-256-10, batch 64 per process, SGD momentum)\n")
        print("| measurement | value |")
        print("|---|---:|")
        for key, value in result.items():
            print(f"| {key} | {value} |")
        print(json.dumps(result))
    dist.destroy_process_group()


if __name__ == "__main__":
    arguments = parse()
    if "RANK" in os.environ:
        rank_main(arguments)
    else:
        sys.exit(launch(arguments))
