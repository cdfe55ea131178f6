"""Single-controller SPMD on the jax backend, with torch_xla's surface.

One process drives every device: tensors on the lazy device are annotated with how they
are split over a logical mesh, the step's graph becomes one XLA program for the whole mesh,
and XLA's partitioner inserts the collectives. A torch_xla SPMD script ports by changing
its imports::

    import lazygen.spmd as xs          # torch_xla.distributed.spmd as xs
    xs.use_spmd()                      # torch_xla.runtime.use_spmd()
    mesh = xs.Mesh(range(8), (4, 2), ("data", "model"))
    xs.mark_sharding(model.fc1.weight, mesh, ("model", None))

docs/spmd.md has the migration table, the plans and what is not there.
"""

from __future__ import annotations

from .api import (
    clear_sharding,
    get_1d_mesh,
    get_global_mesh,
    global_device_count,
    is_spmd,
    mark_sharding,
    mark_sharding_with_gradients,
    set_global_mesh,
    sharding_of,
    to_device,
    use_spmd,
)
from .diagnostics import ProgramReport, parameter_bytes, programs, report
from .mesh import HybridMesh, Mesh
from .multihost import initialize, process_index
from .plans import SpmdFullyShardedDataParallel, fsdp_spec, shard_by_name, shard_fsdp

__all__ = [
    "HybridMesh",
    "Mesh",
    "ProgramReport",
    "SpmdFullyShardedDataParallel",
    "clear_sharding",
    "fsdp_spec",
    "get_1d_mesh",
    "get_global_mesh",
    "global_device_count",
    "initialize",
    "is_spmd",
    "mark_sharding",
    "mark_sharding_with_gradients",
    "parameter_bytes",
    "process_index",
    "programs",
    "report",
    "set_global_mesh",
    "shard_by_name",
    "shard_fsdp",
    "sharding_of",
    "to_device",
    "use_spmd",
]
