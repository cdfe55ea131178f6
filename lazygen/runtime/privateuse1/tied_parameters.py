"""Tied parameters stay tied when a module moves to the lazy device, as on CUDA.

``Module._apply`` keeps a parameter object (so a parameter shared by two modules stays
shared) only if it can assign ``param.data = converted``, which torch allows between
"shallow-copy compatible" tensors: CPU and CUDA are, a CPU tensor and a lazy tensor (a
functional wrapper) are not, so every module got its own new Parameter and tied weights
came apart. torch's other way to keep the object is ``swap_tensors``, used when
``torch.__future__.get_swap_module_params_on_conversion()`` is set; ``install()`` wraps
``Module.to`` and ``Module.<device name>()`` to set it for conversions to the lazy device
only (and restore it after). Where swapping is refused (a parameter with weak references,
or held elsewhere), the conversion is finished the old way and a warning names the
parameters that came apart and how to tie them again.
"""

from __future__ import annotations

import functools
import warnings

import torch

from ..state import settings
from ..tracing.tensor import new_lazy
from . import patches


def install() -> None:
    module = torch.nn.Module
    patches.wrap(module, "to", lambda original: _keeping_ties(original, _targets_lazy_to))
    patches.wrap(module, settings.device_type, lambda original: _keeping_ties(original, _always))


def _targets_lazy_to(*args, **kwargs) -> bool:
    try:
        device = torch._C._nn._parse_to(*args, **kwargs)[0]
    except (TypeError, RuntimeError):
        return False
    return device is not None and device.type == settings.device_type


def _always(*args, **kwargs) -> bool:
    return True


def _keeping_ties(convert, targets_lazy):
    @functools.wraps(convert)
    def wrapper(self, *args, **kwargs):
        if not targets_lazy(*args, **kwargs):
            return convert(self, *args, **kwargs)
        moved = [p for p in self.parameters() if p.device.type != settings.device_type]
        result = _converted(self, convert, args, kwargs)
        for p in moved:
            _own_storage(p)
        return result

    return wrapper


def _converted(module: torch.nn.Module, convert, args, kwargs):
    if torch.__future__.get_swap_module_params_on_conversion():
        return convert(module, *args, **kwargs)
    groups = _tied_groups(module)
    torch.__future__.set_swap_module_params_on_conversion(True)
    try:
        return convert(module, *args, **kwargs)
    except RuntimeError as error:
        if "Couldn't swap" not in str(error):
            raise
    finally:
        torch.__future__.set_swap_module_params_on_conversion(False)
    result = convert(module, *args, **kwargs)  # the rest, as torch does without swapping
    _warn_untied(module, groups)
    return result


def _own_storage(param: torch.Tensor) -> None:
    """Make a parameter just moved to the lazy device a functional tensor of its own.

    ``nn.Parameter`` wraps a ``detach()`` of its data, which functionalization records as a
    view of the moved tensor: every in-place update of the parameter (an optimizer's step,
    a compiled step's write) then regenerated it by replaying that ``detach`` through two
    traced ops, ~35 us per parameter per step (1 ms of a small encoder's step). Nothing
    holds the moved tensor or a view of it yet, so the parameter object takes the contents
    of a plain functional tensor of the same value (``swap_tensors``), keeping its class,
    attributes and gradient; views made of it later follow its updates as before. Where
    torch refuses the swap (weak references to the parameter), it stays as it was."""
    if param.device.type != settings.device_type or not torch._is_functional_tensor(param):
        return
    if not torch._C._functionalization.get_view_meta_sequence(param):
        return
    torch._functionalize_sync(param)
    lazy = torch._from_functional_tensor(param)
    own = torch._to_functional_tensor(new_lazy(lazy._value, lazy._device))
    own.requires_grad_(param.requires_grad)
    cls, grad = type(param), param.grad
    try:
        torch.utils.swap_tensors(param, own)
    except RuntimeError:
        return
    param.__class__ = cls
    param.__dict__ = own.__dict__  # the parameter's own attributes, swapped out with it
    if grad is not None:
        param.grad = grad


def _tied_groups(module: torch.nn.Module) -> list[list[str]]:
    names: dict[int, list[str]] = {}
    for name, param in module.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), []).append(name)
    return [group for group in names.values() if len(group) > 1]


def _warn_untied(module: torch.nn.Module, groups: list[list[str]]) -> None:
    params = dict(module.named_parameters(remove_duplicate=False))
    untied = [g for g in groups if len({id(params[name]) for name in g}) > 1]
    if untied:
        listed = "; ".join(" = ".join(group) for group in untied)
        warnings.warn(
            f"lazygen: moving the module to {settings.device_type} untied shared parameters "
            f"({listed}) because torch could not swap them in place (weak references or "
            "other holders). Tie them again after .to(), e.g. "
            "`model.b.weight = model.a.weight`",
            stacklevel=3,
        )
