"""A model moved to the lazy device, then compiled, raises lazygen's error naming the way
out (``privateuse1/compile_inputs.py``): torch 2.13's Dynamo failed on its parameters with
a bare ``AssertionError: True != False`` from ``meta_utils``."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo

import lazygen.runtime as lr
from lazygen.runtime.privateuse1.compile_inputs import CompileInputError


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("backend", ["lazygen", "eager"])
def test_a_model_on_the_lazy_device_under_torch_compile_says_what_to_do(backend):
    model = torch.nn.Linear(4, 2).to("lazygen")
    compiled = torch.compile(model, backend=backend)
    with pytest.raises(CompileInputError) as caught:
        compiled(torch.randn(3, 4, device="lazygen"))
    message = str(caught.value)
    assert 'torch.compile(model, backend="lazygen")' in message
    assert "without torch.compile" in message
    assert isinstance(caught.value, lr.LazygenRuntimeError)
    assert isinstance(caught.value.__cause__, AssertionError)  # torch's, kept as the cause


def test_lazy_inputs_without_grad_and_cpu_models_still_compile():
    model = torch.nn.Linear(4, 2)
    x = torch.randn(3, 4)
    compiled = torch.compile(model, backend="lazygen")
    torch.testing.assert_close(compiled(x), model(x))
    double = torch.compile(lambda t: t * 2, backend="eager")
    assert torch.equal(double(torch.ones(2, device="lazygen")).cpu(), torch.full((2,), 2.0))
