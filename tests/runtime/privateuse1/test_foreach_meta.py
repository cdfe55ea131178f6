"""The one-pass meta check of in-place foreach ops (``privateuse1/foreach_meta``).

It must settle only the cases whose element meta checks cannot fail, and hand everything
else to the composite kernel, so the lazy device raises what eager raises.
"""

from __future__ import annotations

import pytest
import torch

from lazygen.runtime.privateuse1 import foreach_meta

aten = torch.ops.aten


def _lazy(*tensors):
    return [t.to("lazygen") for t in tensors]


class _Recording:
    """Counts the calls of ``op`` that reached the composite kernel (a ``redispatch``)."""

    def __init__(self, op):
        self.op = op
        self.redispatched = 0


def _kernel(op, monkeypatch):
    """The meta kernel of ``op``, whose redispatches to the composite are recorded, not run:
    ``OpOverload.redispatch`` is patched for ``op`` only (the kernel names its op through
    ``op_registry``, which takes a real overload, not a stand-in)."""
    positions = foreach_meta._classify(op)
    recording = _Recording(op)
    real = torch._ops.OpOverload.redispatch

    def redispatch(self, keyset, *args, **kwargs):
        if self is not op:
            return real(self, keyset, *args, **kwargs)
        recording.redispatched += 1
        return None

    monkeypatch.setattr(torch._ops.OpOverload, "redispatch", redispatch)
    return foreach_meta._meta_kernel(op, *positions), recording


def _meta(*shapes, dtype=torch.float32):
    return [torch.empty(s, dtype=dtype, device="meta") for s in shapes]


def test_adam_ops_are_covered():
    covered = {f"{op._schema.name}.{op._overloadname}" for op, _ in foreach_meta.overloads()}
    for name in (
        "aten::_foreach_addcdiv_.ScalarList",
        "aten::_foreach_addcmul_.Scalar",
        "aten::_foreach_lerp_.Scalar",
        "aten::_foreach_mul_.Scalar",
        "aten::_foreach_add_.List",
    ):
        assert name in covered
    # A lone tensor of scalars cannot be checked without reading it: not covered.
    assert "aten::_foreach_addcdiv_.Tensor" not in covered


@pytest.mark.parametrize(
    ("case", "settled"),
    [
        ("same shapes and dtype", True),
        ("broadcast other", False),
        ("mixed dtypes", False),
        ("integer tensors", False),
        ("complex scalar", False),
        ("empty lists", False),
        ("short other list", False),
    ],
)
def test_only_checks_that_cannot_fail_are_settled(case, settled, monkeypatch):
    kernel, op = _kernel(aten._foreach_add_.List, monkeypatch)
    selves, others, alpha = _meta((2, 3), (4,)), _meta((2, 3), (4,)), 1
    if case == "broadcast other":
        others = _meta((2, 3), (2, 4))
    elif case == "mixed dtypes":
        others = [others[0], others[1].to(torch.float16)]
    elif case == "integer tensors":
        selves, others = _meta((2,), dtype=torch.int64), _meta((2,), dtype=torch.int64)
    elif case == "complex scalar":
        alpha = 1j
    elif case == "empty lists":
        selves, others = [], []
    elif case == "short other list":
        others = others[:1]
    assert kernel(selves, others, alpha=alpha) is None
    assert op.redispatched == (0 if settled else 1)


def test_scalar_lists_must_match_the_tensor_lists(monkeypatch):
    kernel, op = _kernel(aten._foreach_addcdiv_.ScalarList, monkeypatch)
    a, b, c = _meta((3,)), _meta((3,)), _meta((3,))
    kernel(a, b, c, [0.5])
    assert op.redispatched == 0
    kernel(a, b, c, [0.5, 0.5])
    assert op.redispatched == 1


def test_meta_errors_are_unchanged():
    """What the composite kernel raised before on meta tensors, it still raises."""
    with pytest.raises(RuntimeError):
        torch._foreach_add_(_meta((3,)), _meta((2, 3)))
    with pytest.raises(RuntimeError):
        torch._foreach_lerp_(_meta((2,)), _meta((2,), dtype=torch.float16), 0.5)


def test_lazy_inplace_foreach_refuses_to_broadcast_self_like_eager():
    selves = _lazy(torch.zeros(3))
    with pytest.raises(RuntimeError):
        torch._foreach_add_([torch.zeros(3)], [torch.ones(2, 3)])
    with pytest.raises(RuntimeError):
        torch._foreach_add_(selves, _lazy(torch.ones(2, 3)))
    assert selves[0].shape == (3,)


def test_lazy_adam_style_updates_match_eager():
    eager = [torch.randn(4, 3), torch.randn(5)]
    grads = [torch.randn(4, 3), torch.randn(5)]
    lazy, lazy_grads = _lazy(*eager), _lazy(*grads)
    for params, g in ((eager, grads), (lazy, lazy_grads)):
        torch._foreach_lerp_(params, g, 0.1)
        torch._foreach_addcmul_(params, g, g, value=0.01)
        torch._foreach_addcdiv_(params, g, [t.abs() + 1 for t in g], [0.5, 0.25])
        torch._foreach_add_(params, [t.half().float() for t in g], alpha=-0.5)
    for got, want in zip(lazy, eager, strict=True):
        torch.testing.assert_close(got.cpu(), want)
