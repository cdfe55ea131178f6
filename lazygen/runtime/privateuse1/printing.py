"""``repr``/``print`` of lazy tensors reads like any device: ``tensor([...], device='lazygen:0')``.

Without this torch prints the functional wrapper (``_to_functional_tensor(LazyTensor(...))``).
"""

from __future__ import annotations

import torch
import torch._tensor_str as tensor_str

from ..state import settings
from . import patches


def _lazy_str(self, *, tensor_contents=None):
    with torch.no_grad():
        host = self.detach().to("cpu")
    text = _original_str()(host, tensor_contents=tensor_contents)
    suffixes = [f"device='{self.device}'"]
    if self.grad_fn is not None:
        name = type(self.grad_fn).__name__
        suffixes.append(f"grad_fn=<{name}>")
    elif self.requires_grad:
        suffixes.append("requires_grad=True")
    return text[:-1] + "".join(", " + s for s in suffixes) + ")"


def _str(self, *, tensor_contents=None):
    if (
        self.device.type == settings.device_type
        and not torch._C._functorch.is_functorch_wrapped_tensor(self)
    ):
        return _lazy_str(self, tensor_contents=tensor_contents)
    if torch._is_functional_tensor(self) and not torch._C._functorch.is_functorch_wrapped_tensor(
        self
    ):
        # A result a lazy op put on another device (`ones_like(x, device="cpu")`) still
        # carries functionalization's wrapper; print what it wraps, as any CPU tensor.
        torch._sync(self)
        plain = torch._from_functional_tensor(self)
        return _original_str()(plain, tensor_contents=tensor_contents)
    return _original_str()(self, tensor_contents=tensor_contents)


def _original_str():
    return patches.original(tensor_str, "_str")


def install() -> None:
    patches.replace(tensor_str, "_str", _str)
