"""Sharded (FSDP2) training on the lazy device with unchanged torch.distributed code.

    torchrun --standalone --nproc-per-node 2 examples/fsdp/train.py --steps 20

A small Llama-style model (``llama.py``) is sharded with ``fully_shard`` per block and at
the root; parameters, gradients and AdamW's state stay sharded (DTensors with lazy local
tensors). Each step's all-gathers and reduce-scatters are recorded into the step's graph
(one graph per step, no cut), and ``mark_step`` runs it. Every ``--checkpoint-every``
steps the sharded model and optimizer are saved with ``torch.distributed.checkpoint``
(each rank writes its shards); ``--resume`` continues from the last checkpoint, at any
world size.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from llama import Config, Llama, batches, loss_of
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import fully_shard

import lazygen.runtime as lr


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8, help="global batch (all ranks)")
    parser.add_argument("--log-every", type=int, default=5)
    parser.add_argument("--checkpoint-dir", default="fsdp_checkpoint")
    parser.add_argument("--checkpoint-every", type=int, default=10)
    parser.add_argument("--resume", action="store_true", help="start from the checkpoint")
    return parser.parse_args()


def save(model, optimizer, step: int, directory: Path) -> None:
    model_state, optim_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optim": optim_state, "step": torch.tensor(step)}
    dcp.save(state, storage_writer=dcp.FileSystemWriter(directory, overwrite=True))


def load(model, optimizer, directory: Path) -> int:
    model_state, optim_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optim": optim_state, "step": torch.tensor(0)}
    dcp.load(state, checkpoint_id=str(directory))
    set_state_dict(
        model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"]
    )
    return int(state["step"])


def main() -> None:
    args = parse()
    lr.init()  # registers the "lazygen" c10d backend too
    dist.init_process_group("cpu:gloo,lazygen:lazygen")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = lr.device()
    config = Config()

    torch.manual_seed(0)  # the same initial model everywhere; fully_shard keeps each shard
    model = Llama(config).to(device)
    for block in model.layers:
        fully_shard(block)  # the mesh: every rank, on the lazy device
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
    directory = Path(args.checkpoint_dir).resolve()
    start = load(model, optimizer, directory) if args.resume else 0
    if rank == 0 and start:
        print(f"resumed at step {start} from {directory}", flush=True)

    per_rank = args.batch // world
    counters = lr.metrics.counter_value
    for step, (tokens, targets) in enumerate(batches(config, args.steps, args.batch), 1):
        if step <= start:
            continue  # the data a resumed run already trained on
        rows = slice(rank * per_rank, (rank + 1) * per_rank)
        loss = loss_of(model, tokens[rows].to(device), targets[rows].to(device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        lr.mark_step()
        if rank == 0 and step % args.log_every == 0:
            print(f"step {step:4d}  loss {loss.item():.4f}", flush=True)
        if step % args.checkpoint_every == 0 or step == args.steps:
            save(model, optimizer, step, directory)
    if rank == 0:
        collectives = sum(
            counters(f"lazy::{name}") or 0
            for name in ("all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce")
        )
        cuts = counters("DistributedGraphCut") or 0
        print(f"saved {directory}; collectives in graphs: {collectives}, cuts: {cuts}")
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    main()
