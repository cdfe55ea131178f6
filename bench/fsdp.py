"""An FSDP2 training step on loopback gloo: lazygen vs CPU FSDP2, 2 and 4 processes, one run.

    python bench/fsdp.py [--nprocs 2,4] [--steps-per-block 5] [--blocks 3]

The small Llama-style model of examples/fsdp (2 blocks, dim 16), global batch 8, AdamW,
``fully_shard`` per block and at the root. Each process trains a CPU FSDP2 model (a plain
gloo group) and a lazy FSDP2 model (the ``lazygen`` c10d backend) in alternating blocks of
steps, all ranks starting each block together (a barrier); a lazy block ends when its last
graph ran. Reported per world size: median ms/step of each and their ratio, graphs per
lazy step, collectives per step (lazy: recorded in its graph; CPU: issued to gloo, counted
by torch's ``CommDebugMode``) and graph cuts.

Without ``RANK`` in the environment the script launches itself once per world size (free
port, own sessions, killed on exit or timeout) and prints one table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

from _timing import run_ranks


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", default="2,4", help="world sizes, comma-separated")
    parser.add_argument("--steps-per-block", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    try:
        args.sizes = [int(n) for n in args.nprocs.split(",")]
    except ValueError:
        parser.error(f"--nprocs {args.nprocs!r}: give world sizes such as 2,4")
    if any(n < 1 or 8 % n for n in args.sizes):
        parser.error(f"--nprocs {args.nprocs!r}: each world size must divide the batch (8)")
    return args


def launch(args: argparse.Namespace, nproc: int) -> dict:
    stdout, codes = run_ranks(nproc, args.timeout)
    if any(codes):
        raise SystemExit(f"bench/fsdp.py: a rank of the {nproc}-process run failed: {codes}")
    return json.loads(stdout.strip().splitlines()[-1])


def rank_main(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.debug import CommDebugMode

    import lazygen.runtime as lr

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "fsdp"))
    from llama import Config, Llama, batches, loss_of

    # FSDP2 warns that the model returns a view (logits of a 3-D linear) and about full
    # backward hooks with inputs not requiring grad: both expected here
    warnings.filterwarnings("ignore", message="FSDP2-wrapped module")
    warnings.filterwarnings("ignore", message="Full backward hook is firing")
    torch.set_num_threads(1)
    lr.init()
    dist.init_process_group("cpu:gloo,lazygen:lazygen")
    gloo = dist.new_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    config, batch = Config(), 8
    tokens, targets = next(batches(config, 1, batch))
    rows = slice(rank * batch // world, (rank + 1) * batch // world)

    def sharded(device, mesh):
        torch.manual_seed(0)
        model = Llama(config).to(device)
        for block in model.layers:
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
        return model, torch.optim.AdamW(model.parameters(), lr=1e-3)

    cpu_mesh = DeviceMesh.from_group(gloo, "cpu")
    models = {"cpu": sharded("cpu", cpu_mesh), "lazy": sharded(lr.device(), None)}
    inputs = {
        "cpu": (tokens[rows], targets[rows]),
        "lazy": (tokens[rows].to(lr.device()), targets[rows].to(lr.device())),
    }
    counters = lr.metrics.counter_value
    names = ("CachedCompile", "UncachedCompile", "DistributedGraphCut")
    names += tuple(f"lazy::{c}" for c in ("all_gather_into_tensor", "reduce_scatter_tensor"))
    names += ("lazy::all_reduce",)

    def step(name: str) -> None:
        (model, optimizer), (x, y) = models[name], inputs[name]
        loss_of(model, x, y).backward()
        optimizer.step()
        optimizer.zero_grad()
        if name == "lazy":
            lr.mark_step()

    def block(name: str) -> float:
        dist.barrier(group=gloo)
        start = time.perf_counter()
        for _ in range(args.steps_per_block):
            step(name)
        if name == "lazy":
            lr.wait_device_ops()
        return (time.perf_counter() - start) / args.steps_per_block

    block("cpu"), block("lazy")  # warm-up: FSDP's lazy init, compiles
    with CommDebugMode() as comm:
        step("cpu")
    cpu_collectives = comm.get_total_counts()
    times: dict[str, list[float]] = {"cpu": [], "lazy": []}
    for _ in range(args.blocks):
        for name in ("cpu", "lazy"):
            before = [counters(c) or 0 for c in names]
            times[name].append(block(name))
            if name == "lazy":
                after = [counters(c) or 0 for c in names]
                delta = [(a - b) / args.steps_per_block for a, b in zip(after, before, strict=True)]
    cpu_ms = statistics.median(times["cpu"]) * 1000
    lazy_ms = statistics.median(times["lazy"]) * 1000
    result = {
        "processes": world,
        "cpu_ms_per_step": round(cpu_ms, 2),
        "lazy_ms_per_step": round(lazy_ms, 2),
        "lazy_over_cpu": round(lazy_ms / cpu_ms, 2),
        "lazy_graphs_per_step": delta[0] + delta[1],
        "lazy_collectives_per_step": sum(delta[3:]),
        "cpu_collectives_per_step": cpu_collectives,
        "lazy_graph_cuts_per_step": delta[2],
    }
    if rank == 0:
        print(json.dumps(result), flush=True)
    dist.destroy_process_group()


def main(args: argparse.Namespace) -> int:
    results = [launch(args, nproc) for nproc in args.sizes]
    print("\n### FSDP2 step on loopback gloo: lazygen vs CPU FSDP2")
    print("(Llama-style 2 blocks, dim 16, global batch 8, AdamW, fully_shard per block)\n")
    keys = list(results[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---:|" * len(keys))
    for result in results:
        print("| " + " | ".join(str(result[k]) for k in keys) + " |")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    arguments = parse()
    if "RANK" in os.environ:
        rank_main(arguments)
    else:
        sys.exit(main(arguments))
