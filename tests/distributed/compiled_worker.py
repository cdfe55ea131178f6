"""One rank running functional collectives inside ``torch.compile(backend="lazygen")``
regions, on host tensors and a plain gloo group, checked against the same functions run
eagerly. ``python compiled_worker.py <lazygen backend>``.

Dynamo turns both ``torch.distributed._functional_collectives`` calls and in-place
``dist.all_reduce`` into ``_c10d_functional`` ops; lazygen captures them as IR nodes of the
compiled graph, which issues them on every replay. Prints the counters it saw; exits
non-zero on a wrong value."""

from __future__ import annotations

import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

import lazygen.runtime as lr


def gathered_sum(x):
    reduced = funcol.all_reduce(x * 2, "sum", dist.group.WORLD)
    gathered = funcol.all_gather_tensor(reduced + 1, 0, dist.group.WORLD)
    return gathered.sum() + reduced


def reduced_in_place(x):
    y = x + 1
    dist.all_reduce(y)
    return y * 3


def scattered(x):
    return funcol.reduce_scatter_tensor(x.repeat(2), "sum", 0, dist.group.WORLD) - 1


def main(backend: str) -> int:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    x = torch.arange(4.0) + rank
    ok = True
    for fn in (gathered_sum, reduced_in_place, scattered):
        compiled = torch.compile(fn, backend="lazygen", options={"backend": backend})
        compiled(x)
        compiles = lr.metrics.counter_value("UncachedCompile") or 0
        for step in range(3):  # replays: new values, no new compile, the same collectives
            got, expected = compiled(x + step), fn(x + step)
            if not torch.equal(got, expected):
                print(f"rank {rank}: {fn.__name__}: got {got}, eager {expected}", flush=True)
                ok = False
        if (lr.metrics.counter_value("UncachedCompile") or 0) != compiles:
            print(f"rank {rank}: {fn.__name__} compiled again on replay", flush=True)
            ok = False
    # The captures' collectives belong to their graphs: a sync on one rank alone must not
    # issue them again (it would pair with the other rank's next collective, below).
    if rank == 0:
        lr.mark_step()
        lr.wait_device_ops()
    host = torch.ones(3) * (rank + 1)
    dist.all_reduce(host)
    ok = ok and host.tolist() == [3.0] * 3
    value = lr.metrics.counter_value
    print(
        f"rank {rank} {backend}: lazy::all_reduce={value('lazy::all_reduce') or 0} "
        f"DistributedGraphCut={value('DistributedGraphCut') or 0} ok={ok}",
        flush=True,
    )
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
