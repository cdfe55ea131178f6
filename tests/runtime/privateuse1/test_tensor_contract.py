"""Tensor-level parts of the device contract: ``resize_``, DLPack, storages, ``out=`` views,
named factories (issue #41, items 5, 6, 7, 10)."""

import warnings

import pytest
import torch

from lazygen.runtime.errors import LazygenRuntimeError


def test_resize_shrinks_sizes_and_numel_together():
    """Item 5: ``x.resize_(50)`` left ``numel()`` at 100 with ``shape == (50,)``."""
    x = torch.empty(100, device="lazygen")
    x.resize_(50)
    assert x.shape == (50,) and x.numel() == 50 and x.cpu().numel() == 50
    y = torch.arange(10.0, device="lazygen")
    y.resize_(2, 2)
    assert y.numel() == 4 and y.cpu().tolist() == [[0.0, 1.0], [2.0, 3.0]]


def test_resize_grows_keeping_the_values():
    x = torch.arange(4.0, device="lazygen")
    x.resize_(2, 3)
    assert x.shape == (2, 3) and x.numel() == 6
    assert x.cpu().flatten()[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    x.resize_as_(torch.ones(5))
    assert x.shape == (5,) and x.numel() == 5


def test_resize_keeps_views_of_the_old_storage():
    """As in eager, a shrunk tensor and a view taken before share the storage."""
    x = torch.arange(8.0, device="lazygen")
    v = x[:4]
    x.resize_(2)
    v.add_(1)
    assert x.numel() == 2 and x.cpu().tolist() == [1.0, 2.0]
    assert v.cpu().tolist() == [1.0, 2.0, 3.0, 4.0]
    rows = torch.arange(16.0, device="lazygen").view(4, 4)
    row = rows[1]
    row.resize_(8)
    assert row.numel() == 8 and row.cpu().tolist() == list(range(4, 12))


def test_resize_of_a_tensor_requiring_grad_is_refused():
    x = torch.ones(3, device="lazygen", requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        x.resize_(2)


def test_out_into_a_fresh_tensor_resizes_it():
    out = torch.empty(0, device="lazygen")
    torch.abs(-torch.ones(3, device="lazygen"), out=out)
    assert out.shape == (3,) and out.numel() == 3 and out.cpu().tolist() == [1.0, 1.0, 1.0]


def test_dlpack_export_is_a_clear_error():
    """Item 6: the round trip gave a tensor whose ``.cpu()`` recursed without end."""
    x = torch.ones(3, device="lazygen")
    for export in (
        lambda: torch.utils.dlpack.to_dlpack(x),
        lambda: torch.from_dlpack(x),
        lambda: x.__dlpack__(),
        lambda: x.__dlpack_device__(),
    ):
        with pytest.raises(LazygenRuntimeError, match=r"DLPack.*t\.cpu\(\)"):
            export()
    copy = torch.from_dlpack(torch.utils.dlpack.to_dlpack(x.cpu())).to("lazygen")
    assert copy.cpu().tolist() == [1.0, 1.0, 1.0]
    assert torch.from_dlpack(torch.arange(2.0)).tolist() == [0.0, 1.0]  # others untouched


def test_storage_methods_of_the_device():
    """Item 7: ``t.storage().is_lazygen`` did not exist."""
    x = torch.ones(3, device="lazygen")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # TypedStorage is deprecated
        assert x.storage().is_lazygen
    assert x.untyped_storage().is_lazygen
    assert not torch.ones(1).untyped_storage().is_lazygen
    assert x.untyped_storage().device == torch.device("lazygen", 0)
    assert x.is_lazygen and x.lazygen().device.type == "lazygen"


def test_out_into_a_strided_view_of_the_wrong_shape_raises_at_the_call():
    """Item 10: the error came only when the graph ran. Eager resizes such a view in place
    (with a warning); a view of a lazy tensor cannot be, so the call raises saying what to
    do (a documented difference, docs/device-contract.md)."""
    x = torch.randn(4, 4, device="lazygen")
    o = torch.zeros(4, 12, device="lazygen")
    with pytest.raises(LazygenRuntimeError, match="out= tensor of the result's shape"):
        torch.abs(x, out=o[:, 0:6:3])
    fine = torch.zeros(4, 12, device="lazygen")
    torch.abs(x[:, :2], out=fine[:, 0:6:3])  # the right shape works
    assert torch.equal(fine.cpu()[:, 0:6:3], x[:, :2].cpu().abs())


def test_named_factories_fail_as_eager_does():
    """Item 10: ``torch.empty(..., names=...)`` raised TypeError; so does eager's in torch 2.13,
    whose Python API no longer takes ``names=``."""
    with pytest.raises(TypeError) as eager:
        torch.empty(2, 3, names=("N", "C"))
    with pytest.raises(TypeError) as lazy:
        torch.empty(2, 3, device="lazygen", names=("N", "C"))
    assert str(lazy.value) == str(eager.value)
