"""DLPack and lazy tensors: a clear error instead of a tensor without memory.

DLPack shares a tensor's memory with another library. A lazy tensor has no memory of its
own (its values are a graph's result, or device data owned by the backend), yet
``torch.utils.dlpack.to_dlpack`` exported its placeholder storage: ``torch.from_dlpack`` of
that capsule gave a plain tensor "on" the lazy device without data, whose ``.cpu()`` recursed
until Python gave up. Exporting the backend's data instead would hand out a writable alias
of device data that the graphs treat as immutable, and a CPU tensor where CUDA gives a CUDA
one. So ``install()`` wraps ``torch.utils.dlpack.to_dlpack`` (also ``torch.to_dlpack``),
``Tensor.__dlpack__`` and ``Tensor.__dlpack_device__``: for a lazy tensor they raise an error
saying to export ``t.cpu()`` (a copy); for every other tensor they are torch's.

Importing a capsule onto the lazy device (``torch.from_dlpack(capsule).to(<lazy>)``) needs
nothing: it is an ordinary host-to-device copy. Code that took ``torch._C._to_dlpack`` before
``init()`` is not covered (the reason is in docs/device-contract.md).
"""

from __future__ import annotations

import functools

import torch
import torch.utils.dlpack

from ..errors import LazygenRuntimeError
from ..tracing.tensor import is_lazy
from . import patches


def refusal(tensor: torch.Tensor) -> LazygenRuntimeError:
    return LazygenRuntimeError(
        f"lazygen: a {tensor.device} tensor cannot be exported through DLPack: lazy tensors "
        "have no memory of their own to share (their values live in the backend's device "
        "data, which graphs treat as immutable). Export a host copy instead: "
        "torch.utils.dlpack.to_dlpack(t.cpu()) or torch.from_dlpack(t.cpu())"
    )


def _guarded(original):
    @functools.wraps(original)
    def wrapper(tensor, *args, **kwargs):
        if is_lazy(tensor):
            raise refusal(tensor)
        return original(tensor, *args, **kwargs)

    wrapper._lazygen_original = original
    return wrapper


def install() -> None:
    """Wrap the export functions (once per process)."""
    if not patches.wrap(torch.utils.dlpack, "to_dlpack", _guarded):
        return
    if getattr(torch, "to_dlpack", None) is patches.original(torch.utils.dlpack, "to_dlpack"):
        patches.replace(torch, "to_dlpack", torch.utils.dlpack.to_dlpack)
    for name in ("__dlpack__", "__dlpack_device__"):
        patches.wrap(torch.Tensor, name, _guarded)
