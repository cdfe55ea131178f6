"""`ops.batch_norm`: the running statistics' update is the runtime's, around whichever
`native_batch_norm` kernel a backend's tables bring (the third-party lists' case is in
tests/codegen/test_real_op_lists.py, one backend per process)."""

from __future__ import annotations

import torch

import lazygen.runtime as lr
from lazygen.runtime import dispatch
from lazygen.runtime.ops import batch_norm


def test_the_installed_kernel_is_wrapped_by_the_runtime():
    kernel = dispatch.installed().kernels[torch.ops.aten.native_batch_norm.default]
    assert kernel.__module__ == batch_norm.__name__


def _two_batch_norms(device):
    torch.manual_seed(0)
    x = torch.randn(4, 3, 5, 5)
    mean, var = torch.zeros(3).to(device), torch.ones(3).to(device)
    for scale in (1.0, 2.0):  # both update the same statistics, in one step
        torch.nn.functional.batch_norm(x.to(device) * scale, mean, var, training=True)
    return mean, var


def test_two_updates_of_shared_statistics_in_one_step():
    lazy = _two_batch_norms(lr.device())
    lr.mark_step()
    for got, want in zip(lazy, _two_batch_norms("cpu"), strict=True):
        torch.testing.assert_close(got.cpu(), want)
