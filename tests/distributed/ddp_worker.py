"""One rank of DDP training runs on the lazy device, checked against eager (run by
``launch.run`` or torchrun). ``python ddp_worker.py <scenario>[,<scenario>...] [steps]``.

Every rank draws the same global batches (same seed) and trains on its slice; rank 0 also
trains the same model eagerly on the whole batch, single-process, and every rank compares
its parameters with it (DDP averages gradients, so with equal slices and a mean loss the
two agree). Scenarios: ``default``, ``bucket_view`` (``gradient_as_bucket_view=True``),
``no_sync`` (accumulation over two micro-batches), ``unused``
(``find_unused_parameters=True`` with a branch left out of the loss). Exits non-zero on a
mismatch; prints ``graphs/step=<n> cuts/step=<n>`` of each lazy run (its last step).
"""

from __future__ import annotations

import copy
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import lazygen.runtime as lr


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)
        self.unused = nn.Linear(16, 4)  # only in the loss when use_unused

    def forward(self, x, use_unused: bool = True):
        h = torch.relu(self.fc1(x))
        out = self.fc2(h)
        return out + self.unused(h) if use_unused else out


def batches(steps: int, micro: int, size: int):
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        yield [
            (torch.randn(4 * size, 8, generator=gen), torch.randn(4 * size, 4, generator=gen))
            for _ in range(micro)
        ]


def eager_reference(model: nn.Module, scenario: str, steps: int, size: int) -> nn.Module:
    model = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    micro = 2 if scenario == "no_sync" else 1
    for step, group in enumerate(batches(steps, micro, size)):
        for x, y in group:
            use_unused = scenario != "unused" or step % 2 == 0
            loss = nn.functional.mse_loss(model(x, use_unused), y) / micro
            loss.backward()
        opt.step()
        opt.zero_grad()
    return model


def main(scenarios: str, steps: int) -> int:
    lr.init()
    dist.init_process_group("cpu:gloo,lazygen:lazygen")
    failed = [s for s in scenarios.split(",") if not train(s, steps)]
    dist.destroy_process_group()
    return 1 if failed else 0


def train(scenario: str, steps: int) -> bool:
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1)
    base = Net()
    device = lr.device()
    model = copy.deepcopy(base).to(device)
    options = {}
    if scenario == "bucket_view":
        options["gradient_as_bucket_view"] = True
    if scenario == "unused":
        options["find_unused_parameters"] = True
    ddp = DDP(model, **options)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    micro = 2 if scenario == "no_sync" else 1
    graphs = cuts = 0
    for step, group in enumerate(batches(steps, micro, size)):
        before = _counters()
        for index, (x, y) in enumerate(group):
            x = x[rank * 4 : (rank + 1) * 4].to(device)
            y = y[rank * 4 : (rank + 1) * 4].to(device)
            use_unused = scenario != "unused" or step % 2 == 0
            accumulate = ddp.no_sync() if index < micro - 1 else _nothing()
            with accumulate:
                loss = nn.functional.mse_loss(ddp(x, use_unused), y) / micro
                loss.backward()
        opt.step()
        opt.zero_grad()
        lr.mark_step()
        after = _counters()
        if step == steps - 1:  # the steady state (compiled graphs replayed)
            graphs, cuts = after[0] - before[0], after[1] - before[1]
    lr.wait_device_ops()
    reference = eager_reference(base, scenario, steps, size)
    ok = True
    for (name, lazy), eager in zip(model.named_parameters(), reference.parameters(), strict=True):
        got = lazy.detach().cpu()
        if not torch.allclose(got, eager.detach(), atol=1e-5, rtol=1e-5):
            diff = (got - eager.detach()).abs().max().item()
            print(f"rank {rank}: {name} differs from eager by {diff}", flush=True)
            ok = False
    print(f"rank {rank} {scenario}: graphs/step={graphs} cuts/step={cuts} ok={ok}", flush=True)
    return ok


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _counters() -> tuple[int, int]:
    """Graphs run so far (each sync compiles or finds its graph once) and collectives that
    cut a graph."""
    value = lr.metrics.counter_value
    graphs = (value("CachedCompile") or 0) + (value("UncachedCompile") or 0)
    return graphs, value("DistributedGraphCut") or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3))
