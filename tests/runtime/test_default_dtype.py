"""Results whose dtype comes from ``torch.get_default_dtype()`` follow it when it changes in
the middle of a run: the shape cache's entries hold for one default dtype (``ShapeCache``),
and a key cannot see it (``int / int``, a factory with a float fill and no dtype)."""

import pytest
import torch

import lazygen.runtime as lr

OPS = {
    "true division of ints": lambda d: torch.tensor([3, 4], device=d)
    / torch.tensor([2, 2], device=d),
    "full with a float fill": lambda d: torch.full((2,), 1.5, device=d),
    "ones": lambda d: torch.ones(3, device=d),
    "arange with a float step": lambda d: torch.arange(0, 1, 0.25, device=d),
    "int tensor times a float": lambda d: torch.arange(3, device=d) * 0.5,
    "sigmoid of an int tensor": lambda d: torch.arange(3, device=d).sigmoid(),
}


@pytest.fixture
def default_float64():
    previous = torch.get_default_dtype()
    yield lambda: torch.set_default_dtype(torch.float64)
    torch.set_default_dtype(previous)


@pytest.mark.parametrize("name", sorted(OPS))
def test_a_result_follows_the_default_dtype_set_after_the_op_was_cached(name, default_float64):
    make = OPS[name]
    first = make("lazygen")  # the op's shapes are cached under float32
    assert first.dtype == make("cpu").dtype == torch.float32
    default_float64()
    again = make("lazygen")
    expected = make("cpu")
    assert expected.dtype == torch.float64
    assert again.dtype == expected.dtype
    lr.mark_step()
    assert again.cpu().dtype == expected.dtype
    torch.testing.assert_close(again.cpu(), expected)
    assert first.cpu().dtype == torch.float32  # recorded before the change: stays as it was
