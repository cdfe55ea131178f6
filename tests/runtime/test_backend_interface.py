"""Helpers of ``lazygen.runtime.backend_interface`` that backends build on."""

from __future__ import annotations

import pytest
import torch

from lazygen.runtime.dispatch_modes import without_autograd


@pytest.mark.parametrize("enabled", [True, False])
def test_without_autograd_records_nothing_and_restores_the_mode_even_on_error(enabled):
    w = torch.ones(2, requires_grad=True)
    with torch.set_grad_enabled(enabled):
        with without_autograd():
            assert not torch.is_grad_enabled()
            assert (w * 2).grad_fn is None
        assert torch.is_grad_enabled() is enabled
        with pytest.raises(ValueError), without_autograd():
            raise ValueError("a failed run")
        assert torch.is_grad_enabled() is enabled


def test_kernel_tables_from_a_module_that_is_not_a_registration_module_is_an_error():
    """A newcomer's typo in the module name raised a bare ModuleNotFoundError; a module
    that is not a generated registration module gave empty tables, so every op ran eagerly
    without a word. Both now name the mistake; a registration module still loads."""
    import lazygen.runtime as lr
    from lazygen.runtime import KernelTables

    with pytest.raises(
        lr.LazygenRuntimeError,
        match=r"no module .lazygen\.runtime\.builtin\.generated\.registraton.",
    ):
        KernelTables.from_module("lazygen.runtime.builtin.generated.registraton")
    with pytest.raises(lr.LazygenRuntimeError, match="holds no KERNELS nor NODE_CLASSES"):
        KernelTables.from_module("lazygen.runtime.lowering_context")
    tables = KernelTables.from_module("lazygen.runtime.builtin.generated.registration")
    assert torch.ops.aten.addmm.default in tables.kernels and "addmm" in tables.node_classes


def test_kernel_tables_that_are_not_kernel_tables_name_the_backend():
    import lazygen.runtime as lr
    from lazygen.runtime.backend_interface import kernel_tables_of
    from lazygen.runtime.backends.torchscript.backend import TorchScriptBackend

    class Forgot(TorchScriptBackend):
        name = "forgot"

        def kernel_tables(self):
            return None  # `return` forgotten

    with pytest.raises(lr.LazygenRuntimeError, match="backend 'forgot': kernel_tables"):
        kernel_tables_of(Forgot())
    assert kernel_tables_of(TorchScriptBackend()).kernels
