"""``supported`` kernels: the op list names them; lazygen generates only their registration."""

from __future__ import annotations

from lazygen.runtime import kernel_support as rt
from lazygen.runtime.ir import Shape


def silu(self):
    """``aten::silu`` traced as the backend's own fused op (``tiny::silu``)."""
    rt.count("lazy::silu")
    device = rt.device_of(self)
    shapes = (Shape(self.dtype, tuple(self.shape)),)
    node = rt.make_node(rt.node_class("fused_silu"), (rt.tensor(self, device),), (), shapes)
    return rt.wrap(node, device)
