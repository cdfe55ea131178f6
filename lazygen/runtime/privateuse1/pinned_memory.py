"""``pin_memory()`` of CPU tensors while the lazy device is torch's accelerator.

torch pins host memory with the current accelerator's pinned allocator, which a Python
PrivateUse1 backend cannot provide (``torch._C._acc.PrivateUse1Hooks`` has no such hook):
after ``init()`` every ``pin_memory()`` of a CPU tensor, and so ``DataLoader(...,
pin_memory=True)``, raised a NotImplementedError about ``PrivateUse1HooksInterface``.
Pinning only speeds up DMA copies to a device; a copy to the lazy device reads ordinary
host memory, so ``_pin_memory`` for the lazy device (or no device named) returns an
unpinned contiguous copy, and ``is_pinned()`` stays truthfully False. Pinning for another
device type keeps torch's own kernel. A process-wide effect (``pinned_memory`` in
``process.EFFECTS``; ``LAZYGEN_PINNED_MEMORY=0`` leaves torch's kernel alone)."""

from __future__ import annotations

import torch

from ..state import settings

_COMPOSITE = torch._C.DispatchKey.CompositeExplicitAutograd
_PIN = torch.ops.aten._pin_memory.default


def _pin_memory(self, device=None):
    if device is not None and torch.device(device).type != settings.device_type:
        return _PIN._op_dk(_COMPOSITE, self, device)
    return self.clone(memory_format=torch.contiguous_format)


def register() -> torch.library.Library:
    library = torch.library.Library("aten", "IMPL")
    library.impl("_pin_memory", _pin_memory, "CPU")
    return library
