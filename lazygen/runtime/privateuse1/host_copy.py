"""``other.copy_(lazy)``: copying a lazy tensor into a tensor of another device.

Functionalization refuses it (an internal assert: "mutating a non-functional tensor with a
functional tensor"), yet C++ code does it as it would from CUDA: DDP's construction
(``_verify_params_across_processes``) copies a broadcast lazy tensor into a CPU one. The
autograd kernel of ``copy_`` for the lazy device runs first, so one registered there turns
that case into ``other.copy_(lazy.to(other.device))``; every other ``copy_`` is handed on
to torch's own autograd kernel, redispatched as for a CPU tensor: the lazy device's key
(PrivateUse1) must leave the key set, or the dispatcher would come back here, and
functionalization below sees the tensors' own keys again.
"""

from __future__ import annotations

import torch

from ..state import settings

_K = torch._C.DispatchKey
_KEYS = torch._C.DispatchKeySet
#: Keys below autograd that ``copy_`` of a lazy tensor passes through (beside autograd,
#: entered as AutogradCPU: the same kernel, without the lazy device's backend bit).
_BELOW_AUTOGRAD = (_K.ADInplaceOrView, _K.Functionalize, _K.Python, _K.PythonTLSSnapshot)


def copy_(keyset, self, src, non_blocking=False):
    if self.device.type != settings.device_type and src.device.type == settings.device_type:
        return self.copy_(src.to(self.device), non_blocking)
    onward = _KEYS(_K.AutogradCPU)
    for key in _BELOW_AUTOGRAD:
        if keyset.has(key):
            onward = onward | _KEYS(key)
    return torch.ops.aten.copy_.default.redispatch(onward, self, src, non_blocking)


def register() -> torch.library.Library:
    library = torch.library.Library("aten", "IMPL")
    library.impl("copy_", copy_, "AutogradPrivateUse1", with_keyset=True)
    return library
