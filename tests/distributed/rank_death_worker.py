"""One rank of a lazy-device training job in which one rank dies (run by ``launch.run``).
``python rank_death_worker.py <how> [<dying rank> [cut]]`` (rank 1 by default; rank 0 hosts
the job's store, so its death is seen through the store as well; ``cut``: the backend runs
collectives outside its graphs, each a graph cut):

* ``kill_mid_step``: the dying rank is killed (SIGKILL) halfway through tracing step 2;
  the other reaches the step's all-reduce and must stop with an error naming it.
* ``raise_mid_step``: the dying rank raises an exception there instead (and dies of it).
* ``kill_in_collective``: the dying rank is killed while it waits inside the step's
  all-reduce (the other comes late), which the other then enters.
* ``killed_while_waited_for``: the other rank waits inside the all-reduce; the dying rank
  dies before it comes.
* ``read_alone``: nobody dies; the "dying" rank never traces the step's all-reduce (a read
  under ``if rank == ...`` on the other), and stays alive past the group's timeout (5 s
  here): the other must stop with the timeout explained.

The surviving rank prints ``stopped after <seconds> s: <error type>: <message>`` and exits 3 when the
error reaches it (a hang is the launcher's timeout).
"""

from __future__ import annotations

import datetime
import os
import signal
import sys
import threading
import time

import torch
import torch.distributed as dist

import lazygen.runtime as lr


def _die(how: str) -> None:
    if how == "raise":
        raise ValueError("rank 1's data loader failed")
    os.kill(os.getpid(), signal.SIGKILL)


def step(model, x, dying: bool, how: str, index: int) -> None:
    loss = model(x).square().mean()
    if dying and index == 2 and how in ("kill_mid_step", "raise_mid_step"):
        _die("raise" if how == "raise_mid_step" else "kill")
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)  # traced: a node of the step's graph
    if index == 2 and how == "kill_in_collective":
        if dying:  # killed 3 s from now, while its graph waits in the all-reduce
            threading.Timer(3.0, _die, ("kill",)).start()
        else:
            time.sleep(8.0)
    if index == 2 and how == "killed_while_waited_for" and dying:
        time.sleep(3.0)  # the other rank is waiting in the all-reduce meanwhile
        _die("kill")
    lr.mark_step()
    for p in model.parameters():
        p.grad = None


def read_alone(model, x, dying: bool) -> None:
    """An all-reduce traced and read on one rank alone; the other stays alive past the
    timeout, then leaves."""
    if dying:
        time.sleep(15.0)
        return
    total = model(x).sum().detach()
    dist.all_reduce(total)
    print("read alone:", total.item(), flush=True)


def main(how: str, dying_rank: int, cut: bool) -> int:
    lr.init()
    if cut:
        lr.backend().collectives_in_graph = False
    timeout = datetime.timedelta(seconds=5 if how == "read_alone" else 120)
    dist.init_process_group("cpu:gloo,lazygen:lazygen", timeout=timeout)
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    model.to(lr.device())
    x = torch.randn(4, 8, device=lr.device())
    start = time.monotonic()
    try:
        if how == "read_alone":
            read_alone(model, x, rank == dying_rank)
            return 0
        for index in range(4):
            step(model, x, rank == dying_rank, how, index)
            start = time.monotonic() if index == 1 else start
    except Exception as error:
        if rank == dying_rank:  # it dies of it, as a program does
            raise
        took = time.monotonic() - start
        print(f"stopped after {took:.1f} s: {type(error).__name__}: {error}", flush=True)
        return 3
    print("finished all steps", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1, "cut" in sys.argv[3:]))
