"""``repr``/``print`` of lazy tensors reads like any device: ``tensor([...], device='lazygen:0')``.

Without this torch prints the functional wrapper (``_to_functional_tensor(LazyTensor(...))``).
"""

from __future__ import annotations

import torch
import torch._tensor_str as tensor_str

from .. import state
from ..state import settings

_original_str = None


def _lazy_str(self, *, tensor_contents=None):
    with torch.no_grad():
        host = self.detach().to("cpu")
    text = _original_str(host, tensor_contents=tensor_contents)
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
        return _original_str(torch._from_functional_tensor(self), tensor_contents=tensor_contents)
    return _original_str(self, tensor_contents=tensor_contents)


def install() -> None:
    global _original_str
    if _original_str is None:
        _original_str = tensor_str._str
        tensor_str._str = _str


state.once_per_process(
    __name__,
    ("_original_str",),
    "torch's functions as they were before lazygen wrapped them: torch holds the wrappers for the process",
)
