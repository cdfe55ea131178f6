"""One rank checking every collective on lazy tensors against its expected value, sync and
async, then host tensors and a barrier. ``python collectives_worker.py [graph|cut]``:
``cut`` makes the backend declare it cannot run collectives in graphs, so each one cuts the
graph instead. Prints the counters it saw; exits non-zero on a wrong value."""

from __future__ import annotations

import sys

import torch
import torch.distributed as dist

import lazygen.runtime as lr


def check(name: str, got: torch.Tensor, expected) -> bool:
    expected = torch.as_tensor(expected, dtype=got.dtype)
    ok = torch.equal(got.cpu(), expected)
    if not ok:
        print(f"rank {dist.get_rank()}: {name}: got {got.cpu()} expected {expected}", flush=True)
    return ok


def main(mode: str) -> int:
    lr.init()
    if mode == "cut":
        lr.backend().collectives_in_graph = False
    dist.init_process_group("lazygen")  # the lazy backend for lazy and host tensors
    rank, size = dist.get_rank(), dist.get_world_size()
    dev = lr.device()
    ok = []

    x = torch.full((4,), float(rank + 1), device=dev)
    dist.all_reduce(x)
    ok.append(check("all_reduce", x, [3.0] * 4))

    x = torch.full((2, 2), float(rank + 1), device=dev)
    view = x[0]  # a view of x sees the reduced value too
    work = dist.all_reduce(x, op=dist.ReduceOp.MAX, async_op=True)
    work.wait()
    ok.append(check("all_reduce max async", view, [2.0, 2.0]))

    x = torch.full((3,), float(rank + 1), device=dev)
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    ok.append(check("all_reduce avg", x, [1.5] * 3))

    y = torch.full((2,), float(rank), device=dev)
    dist.broadcast(y, src=1)
    ok.append(check("broadcast", y, [1.0, 1.0]))

    outs = [torch.empty(2, device=dev) for _ in range(size)]
    dist.all_gather(outs, torch.full((2,), float(rank), device=dev))
    ok += [check("all_gather", o, [float(r)] * 2) for r, o in enumerate(outs)]

    out = torch.empty(2 * size, device=dev)
    dist.all_gather_into_tensor(out, torch.full((2,), float(rank + 5), device=dev))
    ok.append(check("all_gather_into_tensor", out, [5.0, 5.0, 6.0, 6.0]))

    out = torch.empty(2, device=dev)
    dist.reduce_scatter_tensor(out, torch.arange(2.0 * size, device=dev) * (rank + 1))
    ok.append(check("reduce_scatter_tensor", out, [[0.0, 3.0], [6.0, 9.0]][rank]))

    out = torch.empty(2, device=dev)
    dist.reduce_scatter(out, [torch.full((2,), float(i + rank), device=dev) for i in range(size)])
    ok.append(check("reduce_scatter", out, [[1.0, 1.0], [3.0, 3.0]][rank]))

    # A collective whose result this rank drops must still run on it (rank 1 reads it).
    dropped = torch.full((2,), 7.0 * (rank + 1), device=dev)
    dist.all_reduce(dropped)
    if rank == 1:
        ok.append(check("dropped on rank 0", dropped, [21.0, 21.0]))
    del dropped

    host = torch.ones(3) * (rank + 1)
    dist.all_reduce(host)  # host tensors go to gloo, after the traced collectives
    ok.append(check("host all_reduce", host, [3.0] * 3))
    dist.barrier()
    lr.mark_step()
    lr.wait_device_ops()
    value = lr.metrics.counter_value
    print(
        f"rank {rank} {mode}: lazy::all_reduce={value('lazy::all_reduce') or 0} "
        f"DistributedGraphCut={value('DistributedGraphCut') or 0} ok={all(ok)}",
        flush=True,
    )
    dist.destroy_process_group()
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "graph"))
