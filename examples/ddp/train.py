"""Data-parallel training on the lazy device with unchanged torch.distributed code.

    torchrun --standalone --nproc-per-node 2 examples/ddp/train.py --steps 50

Each process drives one lazy device; DistributedDataParallel averages gradients with
all-reduces that lazygen records into the step's graph (one graph per step, no cut);
``mark_step`` runs it. Rank 0 logs and writes the checkpoint.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import lazygen.runtime as lr


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch", type=int, default=32, help="per process")
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--checkpoint", default="ddp_checkpoint.pt")
    return parser.parse_args()


def main() -> None:
    args = parse()
    lr.init()  # registers the "lazygen" c10d backend too
    dist.init_process_group("cpu:gloo,lazygen:lazygen")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = lr.device()

    torch.manual_seed(0)  # the same initial model everywhere (DDP broadcasts rank 0's too)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    ddp = DDP(model, gradient_as_bucket_view=True)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard
    target_map = torch.randn(32, 10, generator=torch.Generator().manual_seed(7))

    for step in range(1, args.steps + 1):
        x = torch.randn(args.batch, 32, generator=data)
        y = (x @ target_map).argmax(1)
        loss = nn.functional.cross_entropy(ddp(x.to(device)), y.to(device))
        loss.backward()
        opt.step()
        opt.zero_grad()
        lr.mark_step()
        if rank == 0 and step % args.log_every == 0:
            print(f"step {step:4d}  loss {loss.item():.4f}", flush=True)

    # torch.save of lazy tensors is being fixed separately: save a CPU copy of the state.
    if rank == 0:
        state = {k: v.cpu() for k, v in model.state_dict().items()}
        torch.save({"model": state, "steps": args.steps, "world": world}, args.checkpoint)
        print(f"saved {args.checkpoint}", flush=True)
    dist.barrier()
    if rank == 0:
        counters = lr.metrics.counter_value
        cuts = counters("DistributedGraphCut") or 0
        print(f"collectives in graphs: {counters('lazy::all_reduce') or 0}, cuts: {cuts}")
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    main()
