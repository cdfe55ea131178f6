"""``histc`` of integer lazy tensors: CUDA's semantics, built from lazy ops (CPU kernels, which
lazy graphs run on, have no integer ``histc``), checked against a float64 reference; float
``histc`` keeps the op list's kernel."""

from __future__ import annotations

import math

import pytest
import torch

import lazygen.runtime as lr

LAZY = "lazygen"
INTEGER = "lazy::histc.integer"


def _reference(values: torch.Tensor, bins: int, low, high) -> torch.Tensor:
    """CUDA's integer ``histc`` computed element by element in float64 (exact for these
    magnitudes): int64 bounds, the data's range when they are equal, widened when it is
    one value, out-of-range elements dropped, the last bin including ``high``."""
    data = [int(v) for v in values.flatten().tolist()]
    low, high = math.trunc(low), math.trunc(high)
    if low == high and data:
        low, high = min(data), max(data)
    if low == high:
        low, high = low - 1, high + 1
    counts = [0] * bins
    for v in data:
        if low <= v <= high:
            b = math.floor(float(v - low) * float(bins) / float(high - low))
            counts[min(b, bins - 1)] += 1
    return torch.tensor(counts, dtype=torch.float64)


def _count(name: str) -> int:
    return lr.metrics.counter_value(name) or 0


def _lazy_histc(values: torch.Tensor, **options) -> torch.Tensor:
    lr.metrics.reset()
    result = torch.histc(values.to(LAZY), **options).cpu()
    assert _count(INTEGER) == 1
    report = lr.metrics.fallback_report()
    # Nothing ran eagerly; the only host read is the ``.cpu()`` above (the range stays lazy).
    assert not report.fallbacks, str(report)
    assert [entry.op for entry in report.host_reads] == ["aten::_to_copy"], str(report)
    return result


def _check(values: torch.Tensor, **options):
    bins = options.get("bins", 100)
    want = _reference(values, bins, options.get("min", 0), options.get("max", 0))
    got = _lazy_histc(values, **options)
    assert got.dtype == values.dtype  # CUDA: the input's dtype for integer inputs
    assert got.shape == (bins,)
    torch.testing.assert_close(got.to(torch.float64), want, rtol=0, atol=0)


DTYPES = [torch.int8, torch.int32, torch.int64, torch.uint8, torch.int16]


@pytest.mark.parametrize("dtype", DTYPES)
def test_explicit_range_drops_out_of_range_and_keeps_max_in_the_last_bin(dtype):
    low = 0 if dtype == torch.uint8 else -20
    values = torch.randint(low, 100, (7, 9), generator=torch.Generator().manual_seed(1))
    values = torch.cat([values.flatten(), torch.tensor([3, 50])]).to(dtype)  # min and max
    _check(values, bins=7, min=3, max=50)


@pytest.mark.parametrize("dtype", DTYPES)
def test_min_equal_to_max_uses_the_data_range(dtype):
    values = torch.tensor([5, 9, 12, 5, 30, 17, 29, 30], dtype=dtype)
    _check(values, bins=4)  # min == max == 0: the default
    _check(values, bins=6, min=8, max=8)  # any equal pair


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64])
def test_one_valued_data_widens_the_range(dtype):
    _check(torch.full((5,), 7, dtype=dtype), bins=3)
    _check(torch.full((5,), 7, dtype=dtype), bins=4)


def test_empty_input_counts_nothing():
    _check(torch.zeros(0, dtype=torch.int32), bins=5)
    _check(torch.zeros(0, dtype=torch.int32), bins=5, min=1, max=9)


def test_float_bounds_truncate_toward_zero_for_integer_inputs():
    values = torch.arange(-4, 12, dtype=torch.int32)
    _check(values, bins=5, min=-2.7, max=9.9)  # as [-2, 9]


def test_int64_values_beyond_float32_precision_bin_exactly():
    base = 2**40
    values = torch.tensor([base, base + 1, base + 2, base + 3, base + 7], dtype=torch.int64)
    _check(values, bins=8, min=base, max=base + 7)


def test_mixtral_expert_counts():
    """transformers' call: int32 expert ids, one bin per expert."""
    experts = torch.randint(0, 8, (12, 2), generator=torch.Generator().manual_seed(0))
    _check(experts.int(), bins=8, min=0, max=7)


@pytest.mark.parametrize(
    "options", [dict(bins=7, min=3, max=50), dict(bins=4), dict(bins=5, min=9, max=9)]
)
def test_reference_agrees_with_float64_histc_of_pytorch(options):
    """The reference's range and bin rules are PyTorch's own (its float64 kernel applies
    the same ones; integer bounds make the two agree)."""
    values = torch.randint(-20, 100, (60,), generator=torch.Generator().manual_seed(3))
    values = torch.cat([values, torch.tensor([3, 50, 9])])
    want = torch.histc(values.double(), **options)
    got = _reference(values, options["bins"], options.get("min", 0), options.get("max", 0))
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_bad_arguments_raise_like_cuda():
    values = torch.tensor([1, 2, 3], dtype=torch.int32).to(LAZY)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        torch.histc(values, bins=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(values, bins=3, min=5, max=1)


def test_float_histc_keeps_the_op_list_kernel():
    values = torch.randn(40, generator=torch.Generator().manual_seed(2))
    lr.metrics.reset()
    got = torch.histc(values.to(LAZY), bins=6, min=-1.0, max=1.5).cpu()
    assert _count("lazy::histc") == 1 and _count(INTEGER) == 0
    torch.testing.assert_close(got, torch.histc(values, bins=6, min=-1.0, max=1.5), rtol=0, atol=0)
