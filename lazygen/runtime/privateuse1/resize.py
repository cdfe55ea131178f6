"""``Tensor.resize_`` of a lazy tensor.

torch's functionalization kernel for ``resize_`` (shared by every functional tensor, CPU
ones under ``torch.func.functionalize`` too) makes a shrunk tensor a view of its old
storage but leaves the wrapper's element count stale: after ``x = torch.empty(100,
device="lazygen"); x.resize_(50)``, ``x.shape`` was ``(50,)`` and ``x.numel()`` 100, so
every later op sized by ``numel()`` went wrong silently.

This kernel, registered for ``resize_`` at the lazy device's autograd key (which only lazy
tensors reach, ahead of functionalization), computes the resized value with ordinary lazy
ops (the first ``n`` elements, in the tensor's logical order; grown elements are zeros where
eager leaves them uninitialised) and makes it the tensor's new value, which updates its
sizes and element count together. Lazy tensors have contiguous strides, so the
``memory_format`` argument changes nothing (a documented difference).
"""

from __future__ import annotations

import math

import torch

from ..errors import LazygenRuntimeError


def _resize_(self: torch.Tensor, size, memory_format=None) -> torch.Tensor:
    if self.requires_grad:
        raise LazygenRuntimeError(
            "lazygen: cannot resize variables that require grad (resize_ a .detach()ed tensor, or "
            "make a new one)"
        )
    size = [int(s) for s in size]
    if list(self.shape) == size:
        return self
    if any(s < 0 for s in size):
        raise LazygenRuntimeError(
            f"lazygen: Trying to create tensor with negative dimension: {size}"
        )
    wanted = math.prod(size)
    with torch._C._AutoDispatchBelowAutograd():
        flat = self.reshape(-1)
        if wanted <= flat.numel():
            value = flat[:wanted].clone()
        else:
            value = torch.cat([flat, flat.new_zeros(wanted - flat.numel())])
        value = value.reshape(size)
        torch._sync(value)
        torch._functionalize_replace(self, torch._from_functional_tensor(value))
        torch._functionalize_commit_update(self)
    return self


def register() -> torch.library.Library:
    """Register the kernel (the caller keeps the library alive)."""
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("resize_", _resize_, "AutogradPrivateUse1")
    return lib
