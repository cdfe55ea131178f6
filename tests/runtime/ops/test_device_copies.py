"""The device kernels of ``ops/device_copies.py`` refuse what eager refuses.

Lazy tensors keep contiguous strides, so these kernels ignore memory formats and strides;
the tensor-API sweep (``tests/reliability/test_tensor_api_sweep.py``) found that they also
accepted arguments eager rejects: ``channels_last`` of a 3-d tensor, negative strides and
stride lists of the wrong length. ``pin_memory()`` of a lazy tensor went through the eager
fallback and failed with torch's message about ``PrivateUse1HooksInterface``."""

from __future__ import annotations

import pytest
import torch

D = "lazygen"
RANK = "required rank 4 tensor to use channels_last format"


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(2, 3, 4, device=D).contiguous(memory_format=torch.channels_last),
        lambda: torch.randn(2, 3, 4, device=D).to(memory_format=torch.channels_last),
        lambda: torch.randn(2, 3, 4, device=D).clone(memory_format=torch.channels_last),
        lambda: torch.randn(2, 3, 4).to(D, memory_format=torch.channels_last),
        lambda: torch.empty(2, 3, 4, device=D, memory_format=torch.channels_last),
        lambda: torch.empty_like(torch.ones(2, 3, 4, device=D), memory_format=torch.channels_last),
    ],
    ids=["contiguous", "to", "clone", "to_device", "empty", "empty_like"],
)
def test_channels_last_of_a_3d_tensor_is_refused_as_in_eager(make):
    with pytest.raises(RuntimeError, match=RANK):
        make()


def test_channels_last_3d_needs_five_dims():
    with pytest.raises(RuntimeError, match="required rank 5"):
        torch.empty(2, 3, 4, 5, device=D, memory_format=torch.channels_last_3d)


def test_memory_formats_of_the_right_rank_still_work():
    x = torch.randn(2, 3, 4, 5)
    lazy = x.to(D).contiguous(memory_format=torch.channels_last)
    assert torch.equal(lazy.cpu(), x)
    y = torch.randn(2, 3, 2, 4, 5)
    assert torch.equal(y.to(D, memory_format=torch.channels_last_3d).cpu(), y)


def test_negative_strides_are_refused_as_in_eager():
    with pytest.raises(RuntimeError, match=r"overflowed with sizes=\[2\] and strides=\[-1\]"):
        torch.empty_strided((2,), (-1,), device=D)
    with pytest.raises(RuntimeError, match="overflowed"):
        torch.ones(3, device=D).new_empty_strided((2, 2), (2, -1))
    # Eager allows a negative stride where it addresses one element only, or no element.
    assert torch.empty_strided((1,), (-1,), device=D).shape == (1,)
    assert torch.empty_strided((0, 2), (-1, 1), device=D).shape == (0, 2)


def test_a_stride_per_dimension():
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        torch.empty_strided((2, 3), (1,), device=D)


def test_pinning_a_lazy_tensor_is_a_clear_error():
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        torch.randn(3, device=D).pin_memory()
