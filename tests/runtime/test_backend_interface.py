"""Helpers of ``lazygen.runtime.backend_interface`` that backends build on."""

from __future__ import annotations

import pytest
import torch

from lazygen.runtime.backend_interface import without_autograd


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
