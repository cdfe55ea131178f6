"""One rank of sharded training on the lazy device: DeviceMesh, DTensor, FSDP2 (run by
``launch.run``). ``python sharded_worker.py <scenario>[,<scenario>...]``.

Each scenario prints ``<scenario>: ok=<bool> ...`` with what it measured; the process exits
non-zero when one fails. Scenarios are combined into few processes because each start
costs seconds on 2 cores.
"""

from __future__ import annotations

import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch.distributed.device_mesh import init_device_mesh

import lazygen.runtime as lr


def _report(name: str, ok: bool, detail: str = "") -> bool:
    print(f"rank {dist.get_rank()} {name}: ok={ok} {detail}".rstrip(), flush=True)
    return ok


def mesh() -> bool:
    """1-D and 2-D meshes on the lazy device, sub-meshes by name, a group per dimension."""
    rank, size = dist.get_rank(), dist.get_world_size()
    dev = lr.device()
    flat = init_device_mesh(lr.device().type, (size,))
    checks = [flat.device_type == dev.type, bool(flat.get_group().group_name)]
    x = torch.full((3,), float(rank + 1), device=dev)
    total = funcol.all_reduce(x, "sum", flat)
    checks.append(total.cpu().tolist() == [size * (size + 1) / 2] * 3)
    grid = init_device_mesh(dev.type, (1, size), mesh_dim_names=("dp", "tp"))
    tp, dp = grid["tp"], grid["dp"]
    checks += [tp.size() == size, dp.size() == 1, tp.get_local_rank() == rank]
    checks.append(grid.get_group("tp").size() == size and grid.get_group("dp").size() == 1)
    y = torch.full((2,), float(rank + 1), device=dev)
    checks.append(funcol.all_reduce(y, "sum", tp).cpu().tolist() == [size * (size + 1) / 2] * 2)
    checks.append(funcol.all_reduce(y, "sum", dp).cpu().tolist() == [float(rank + 1)] * 2)
    return _report("mesh", all(checks), f"checks={checks}")


SCENARIOS = {"mesh": mesh}


def main(names: str) -> int:
    lr.init()
    dist.init_process_group("cpu:gloo,lazygen:lazygen")
    failed = [name for name in names.split(",") if not SCENARIOS[name]()]
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
