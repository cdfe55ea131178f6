"""Sharding plans applied to an unchanged ``nn.Module``: FSDP-style and by parameter name.

* ``shard_fsdp`` / ``SpmdFullyShardedDataParallel`` (torch_xla's FSDPv2 idea): every
  parameter split on its largest dimension over the ``fsdp`` axis (the largest one that
  the axis divides; a parameter none divides stays replicated). XLA gathers each weight
  where a layer needs it and reduce-scatters its gradient; the optimizer's state follows
  its parameter (it is computed from the parameter's gradient, and each updated value
  keeps its input's layout: ``lazygen.runtime.backends.jax.sharding``).
* ``shard_by_name``: a dict of name patterns (``fnmatch``: ``"h.*.attn.c_attn.weight"``)
  to partition specs, as torchax and torchtitan write tensor parallelism; the first
  pattern matching a parameter's (or buffer's) name decides, unmatched ones stay
  replicated, and a pattern matching nothing is an error (a misspelt name would otherwise
  silently leave a layer replicated).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping

import torch

from lazygen.runtime.errors import LazygenRuntimeError

from .api import get_global_mesh, mark_sharding
from .mesh import Mesh


def _mesh(mesh: Mesh | None) -> Mesh:
    mesh = mesh or get_global_mesh()
    if mesh is None:
        raise LazygenRuntimeError(
            "lazygen.spmd: no mesh given and no global mesh set (lazygen.spmd.set_global_mesh)"
        )
    return mesh


def _tensors(module: torch.nn.Module):
    """Each parameter and buffer once (tied parameters under their first name)."""
    yield from module.named_parameters()
    yield from module.named_buffers()


def fsdp_spec(shape: tuple[int, ...], pieces: int, axis: str) -> tuple:
    """The partition spec splitting a tensor of ``shape`` on its largest dimension that
    ``pieces`` divides (the earlier one among equals) over ``axis``; all None if none."""
    spec: list = [None] * len(shape)
    for d in sorted(range(len(shape)), key=lambda d: -shape[d]):
        if shape[d] % pieces == 0 and shape[d] >= pieces:
            spec[d] = axis
            break
    return tuple(spec)


def shard_fsdp(
    module: torch.nn.Module, mesh: Mesh | None = None, axis: str = "fsdp"
) -> dict[str, tuple]:
    """Split every parameter (and floating buffer) of ``module``, already on the lazy
    device, on its largest dimension over mesh axis ``axis``; returns name -> spec."""
    mesh = _mesh(mesh)
    if mesh.get_axis_name_idx(axis) is None:
        raise LazygenRuntimeError(
            f"lazygen.spmd: FSDP shards over mesh axis {axis!r}, which {mesh!r} lacks "
            f"(axes {mesh.axis_names}); name one 'fsdp' or pass axis="
        )
    pieces = mesh.shape()[axis]
    plan = {}
    for name, tensor in _tensors(module):
        if not tensor.is_floating_point():
            continue
        spec = fsdp_spec(tuple(tensor.shape), pieces, axis)
        mark_sharding(tensor, mesh, spec)
        plan[name] = spec
    return plan


class SpmdFullyShardedDataParallel(torch.nn.Module):
    """torch_xla's ``SpmdFullyShardedDataParallel``: wraps ``module`` (on the lazy device)
    after ``shard_fsdp``; ``shard_output(output, mesh)``, if given, annotates the output
    (the batch of the inputs is the caller's to shard, e.g. ``("fsdp", None)``)."""

    def __init__(
        self,
        module: torch.nn.Module,
        mesh: Mesh | None = None,
        shard_output: Callable | None = None,
        axis: str = "fsdp",
    ) -> None:
        super().__init__()
        self._fsdp_wrapped_module = module
        self.mesh = _mesh(mesh)
        self.shard_output = shard_output
        self.plan = shard_fsdp(module, self.mesh, axis)

    @property
    def module(self) -> torch.nn.Module:
        return self._fsdp_wrapped_module

    def forward(self, *args, **kwargs):
        output = self._fsdp_wrapped_module(*args, **kwargs)
        if self.shard_output is not None:
            self.shard_output(output, self.mesh)
        return output


def shard_by_name(
    module: torch.nn.Module, plan: Mapping[str, tuple], mesh: Mesh | None = None
) -> dict[str, tuple]:
    """Annotate ``module``'s parameters and buffers by name pattern (see the module
    docstring); returns name -> spec of those annotated."""
    mesh = _mesh(mesh)
    applied: dict[str, tuple] = {}
    used: set[str] = set()
    names = []
    for name, tensor in _tensors(module):
        names.append(name)
        for pattern, spec in plan.items():
            if fnmatch.fnmatchcase(name, pattern):
                mark_sharding(tensor, mesh, spec)
                applied[name] = tuple(spec)
                used.add(pattern)
                break
    unused = [p for p in plan if p not in used]
    if unused:
        raise LazygenRuntimeError(
            f"lazygen.spmd.shard_by_name: pattern(s) {unused} match no parameter or buffer "
            f"of {type(module).__name__} (names look like {names[:6]})"
        )
    return applied
