"""Ops that a tensor subclass's ``__torch_dispatch__`` runs on lazy tensors it wraps
(DTensor's local tensors are lazy on the lazy device; ``privateuse1/subclass_reentry.py``).
torch runs such a handler with every dispatch key above Python excluded, functionalization
among them, so the ops reached the device's backend fallback and ran eagerly, one graph cut
each (``mul`` as ``mul.out``, ``zeros_like`` as ``zero_``), and composite view kernels
crashed the process. They are sent through functionalization again."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

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


def test_linear_on_3d_tensors_under_a_subclass_handler_in_a_child():
    """``linear`` of 3-D lazy tensors under a subclass handler (as DTensor runs tensor
    parallelism's ColwiseParallel): torch's composite view kernels (``t``,
    ``_unsafe_view``) ran on the functional wrapper and made tensors aliasing its
    data-less storage; reading the result crashed the process. Run in a child so that a
    regression fails this test instead of killing the session."""
    code = textwrap.dedent("""
        import sys, torch
        sys.path.insert(0, sys.argv[1])
        import lazygen.runtime as lr
        from test_subclass_dispatch import Wrapper
        lr.init()
        x, w = torch.randn(2, 3, 4), torch.randn(8, 4)
        lazy = torch.nn.functional.linear(Wrapper(x.to("lazygen")), Wrapper(w.to("lazygen")))
        assert torch.allclose(lazy.inner.cpu(), torch.nn.functional.linear(x, w), atol=1e-6)
        print("ok")
        """)
    env = dict(os.environ, LAZYGEN_GC_FREEZE="0")
    done = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-3000:]


def test_fake_tensors_of_the_device_keep_torchs_view_kernels():
    """The device-key view kernels run torch's own for tensors that are not lazy (fake
    tensors of the device, which DTensor's sharding propagation and Dynamo make): FakeTensor
    construction detaches at the device key, which must stay torch's kernel."""
    with FakeTensorMode():
        fake = torch.empty(2, 3, device=lr.device())
        views = [fake.t(), fake.transpose(0, 1), fake.unsqueeze(0), fake[0], fake.expand(4, 2, 3)]
    assert [tuple(v.shape) for v in views] == [(3, 2), (3, 2), (1, 2, 3), (3,), (4, 2, 3)]
    assert all(isinstance(v, FakeTensor) and v.device == fake.device for v in views)
