"""``torch.autograd.profiler.profile(use_device=<lazy device>)`` without torch's broken path.

With ``use_device`` naming a PrivateUse1 device and ``use_kineto=False`` (the default),
torch's legacy profiler asks the device's native profiler stubs
(``torch::profiler::impl::registerPrivateUse1Methods``), which a Python device cannot
register: every op printed a C++ "PrivateUse1 used in profiler but not enabled" warning and
the table reported times of about -1e17 us. Through Kineto (what ``torch.profiler.profile``
uses) the same device works. ``install()`` wraps the profiler's ``__init__`` so that, for the
lazy device only, it profiles through Kineto; the device's graphs appear as the ranges
``runtime.execution.profiling`` records.
"""

from __future__ import annotations

import functools

import torch.autograd.profiler

from .. import state
from . import patches


def _kineto_for_lazy(original):
    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        use_device = kwargs.get("use_device")
        if use_device is not None and state.is_lazy_device(use_device):
            kwargs["use_kineto"] = True
        original(self, *args, **kwargs)

    return __init__


def install() -> None:
    """Wrap ``torch.autograd.profiler.profile.__init__`` (once per process)."""
    patches.wrap(torch.autograd.profiler.profile, "__init__", _kineto_for_lazy)
