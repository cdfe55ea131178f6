"""Lazy tensors as ``torch.compile`` inputs (``privateuse1/compile_inputs.py``): Dynamo fakes
them as plain tensors of the lazy device, as torch fakes XLA's, so a model moved to the lazy
device compiles (torch 2.13's meta converter failed on its parameters with a bare
``AssertionError: True != False``); a view, which torch refuses to fake, gets lazygen's
error naming what to pass instead."""

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
def test_a_model_on_the_lazy_device_compiles(backend):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    x = torch.randn(3, 4)
    expected = model(x)
    compiled = torch.compile(model.to("lazygen"), backend=backend)
    out = compiled(x.to("lazygen"))
    assert out.device.type == "lazygen"
    torch.testing.assert_close(out.cpu(), expected)
    out.sum().backward()  # the parameters are leaves that require grad, as on the CPU
    assert model.weight.grad is not None and model.weight.grad.device.type == "lazygen"


def test_a_view_of_a_lazy_tensor_as_an_input_says_what_to_pass():
    base = torch.randn(4, 4).to("lazygen")
    compiled = torch.compile(lambda t: t * 2, backend="eager")
    with pytest.raises(CompileInputError) as caught:
        compiled(base[1:])
    assert ".clone()" in str(caught.value)
    assert isinstance(caught.value, lr.LazygenRuntimeError)


def test_cpu_models_still_compile():
    model = torch.nn.Linear(4, 2)
    x = torch.randn(3, 4)
    compiled = torch.compile(model, backend="lazygen")
    torch.testing.assert_close(compiled(x), model(x))


def test_dynamo_leaves_every_installed_kernel_alone():
    # A compiled step's uncompiled parts (``loss.backward()``'s ``ones_like``) call lazy
    # kernels; Dynamo compiled the built-in generated kernels, whose source folder is not
    # inside the lazygen package in a checkout, in five pieces guarded at every step.
    import sys

    from torch._dynamo import trace_rules

    from lazygen.runtime import dispatch

    model = torch.nn.Linear(4, 2).to("lazygen")
    x = torch.randn(3, 4).to("lazygen")

    def step():
        loss = model(x).sum()
        loss.backward()
        return loss

    torch.compile(step, backend="eager")().cpu()
    modules = dispatch.kernel_modules()
    assert "lazygen.runtime.builtin.generated.kernels" in modules
    for name in modules:
        assert trace_rules.check_file(sys.modules[name].__file__).skipped, name
