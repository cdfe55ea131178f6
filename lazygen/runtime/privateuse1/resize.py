"""``Tensor.resize_`` of a lazy tensor.

torch's functionalization kernel for ``resize_`` (shared by every functional tensor, CPU
ones under ``torch.func.functionalize`` too) makes a shrunk tensor a view of its old
storage but leaves the wrapper's element count stale: after ``x = torch.empty(100,
device="lazygen"); x.resize_(50)``, ``x.shape`` was ``(50,)`` and ``x.numel()`` 100, so
every later op sized by ``numel()`` went wrong silently.

This kernel, registered for ``resize_`` at the lazy device's autograd key (which only lazy
tensors reach, ahead of functionalization), runs torch's kernel (so a shrunk tensor stays a
view of its storage, and views of the old storage keep seeing it, as in eager) and, where the
count came out stale, makes the tensor's value its own synced value again, which refreshes
its sizes and element count together. Lazy tensors have contiguous strides, so the
``memory_format`` argument changes nothing (a documented difference).
"""

from __future__ import annotations

import math

import torch

from ..errors import LazygenRuntimeError

_RESIZE = torch.ops.aten.resize_.default


def _resize_(self: torch.Tensor, size, memory_format=None) -> torch.Tensor:
    if self.requires_grad:
        raise LazygenRuntimeError(
            "lazygen: cannot resize variables that require grad (resize_ a .detach()ed "
            "tensor, or make a new one)"
        )
    with torch._C._AutoDispatchBelowAutograd():
        _RESIZE(self, size, memory_format=memory_format)  # torch's functionalization
        if self.numel() != math.prod(self.shape):  # shrunk: the element count is stale
            # Make the tensor's value its own (synced) value again: torch refreshes every
            # piece of metadata on a replace, and the commit writes the same elements back
            # through the view torch made, so views of the old storage stay views of it.
            torch._sync(self)
            value = torch._from_functional_tensor(self).clone()
            torch._functionalize_replace(self, value)
            torch._functionalize_commit_update(self)
    return self


def register() -> torch.library.Library:
    """Register the kernel (the caller keeps the library alive)."""
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("resize_", _resize_, "AutogradPrivateUse1")
    return lib
