"""Tied parameters stay tied across ``.to(<lazy device>)``, as on CUDA (issue #12)."""

import weakref

import pytest
import torch

import lazygen.runtime as lr

D = "lazygen"


def _tied():
    torch.manual_seed(0)
    model = torch.nn.Module()
    model.a = torch.nn.Linear(3, 3)
    model.b = torch.nn.Linear(3, 3)
    model.b.weight = model.a.weight
    return model


@pytest.mark.parametrize(
    "move", [lambda m: m.to(D), lambda m: m.to(device=D), lambda m: m.lazygen()]
)
def test_shared_parameter_stays_one_parameter(move):
    """Was: each module got its own new Parameter (CPU and lazy tensors are not shallow-copy
    compatible, so Module._apply could not assign .data)."""
    model = _tied()
    weight = model.a.weight
    move(model)
    assert model.a.weight is model.b.weight is weight
    assert isinstance(weight, torch.nn.Parameter) and weight.device.type == D
    assert len(list(model.parameters())) == 3
    assert not torch.__future__.get_swap_module_params_on_conversion()  # restored


def test_tied_training_equals_eager():
    eager, lazy = _tied(), _tied().to(D)
    x = torch.randn(4, 3)
    for model, inputs in ((eager, x), (lazy, x.to(D))):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(2):
            optimizer.zero_grad()
            model.b(model.a(inputs)).pow(2).sum().backward()
            optimizer.step()
            lr.mark_step()
    assert lazy.a.weight is lazy.b.weight
    torch.testing.assert_close(lazy.a.weight.cpu(), eager.a.weight.detach())


def test_other_conversions_are_unchanged():
    model = _tied().to(torch.float64)
    assert model.a.weight is model.b.weight and model.a.weight.dtype == torch.float64


def test_when_torch_cannot_swap_a_warning_names_the_untied_parameters():
    model = _tied()
    keep = weakref.ref(model.a.weight)  # swap_tensors refuses tensors with weak references
    with pytest.warns(UserWarning, match=r"a\.weight = b\.weight.*Tie them again"):
        model.to(D)
    assert keep is not None and model.a.weight.device.type == D
    assert model.b.weight.device.type == D


def test_a_moved_parameter_is_not_a_view():
    """Was: the moved parameter was functionalization's view (a ``detach``) of the moved
    tensor, so each in-place update replayed that view through traced ops."""
    model = torch.nn.Linear(3, 3)
    weight = model.weight
    model.to(D)
    assert model.weight is weight and isinstance(weight, torch.nn.Parameter)
    assert weight.requires_grad
    assert not torch._C._functionalization.get_view_meta_sequence(weight)
    expected = weight.detach().cpu() * 2
    with torch.no_grad():
        weight.mul_(2)
    torch.testing.assert_close(weight.detach().cpu(), expected)
