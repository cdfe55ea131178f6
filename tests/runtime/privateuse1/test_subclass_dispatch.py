"""Ops that a tensor subclass's ``__torch_dispatch__`` runs on lazy tensors it wraps
(DTensor's local tensors are lazy on the lazy device). torch runs such a handler with every
dispatch key above Python excluded, functionalization among them, so the ops reached the
device's backend fallback and ran eagerly, one graph cut each (``mul`` as ``mul.out``,
``zeros_like`` as ``zero_``). The fallback sends them through functionalization again."""

from __future__ import annotations

import torch

import lazygen.runtime as lr


class Wrapper(torch.Tensor):
    """A minimal wrapper subclass that runs every op on the tensor it holds."""

    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(
            cls, inner.shape, dtype=inner.dtype, device=inner.device
        )

    def __init__(self, inner):
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(value):
            return value.inner if isinstance(value, Wrapper) else value

        args = torch.utils._pytree.tree_map(unwrap, args)
        kwargs = torch.utils._pytree.tree_map(unwrap, kwargs or {})
        out = func(*args, **kwargs)
        if func._schema.is_mutable:  # in place: the wrapper still holds the same tensor
            return None if out is None else args[0]
        return torch.utils._pytree.tree_map(
            lambda v: Wrapper(v) if isinstance(v, torch.Tensor) else v, out
        )


def test_ops_under_a_subclass_handler_are_traced_not_run_eagerly(fresh_metrics):
    data = torch.randn(4, 4)
    x = data.to(lr.device())
    wrapped = Wrapper(x)
    product = wrapped * 2 + 1
    zeros = torch.zeros_like(wrapped)
    wrapped.mul_(3)
    torch._foreach_add_([wrapped], 1.0)
    assert torch._is_functional_tensor(product.inner)
    assert product.inner.cpu().equal(data * 2 + 1)
    assert zeros.inner.cpu().equal(torch.zeros(4, 4))
    assert x.cpu().equal(data * 3 + 1)
    report = lr.metrics.fallback_report()
    assert report.fallbacks == (), str(report)
