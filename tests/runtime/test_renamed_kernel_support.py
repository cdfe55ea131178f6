"""``kernel_support.eager`` was renamed ``eager_fallback`` (one name for the eager
fallback); code generated before the rename still runs, warning to regenerate."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime import kernel_support as rt


def test_the_old_name_runs_the_fallback_and_says_to_regenerate():
    lr.init()
    x = torch.arange(4.0).to("lazygen")
    with pytest.warns(DeprecationWarning, match="goes away in lazygen 0.2.0.*regenerate"):
        got = rt.eager(torch.ops.aten.ones_like.default, (x,), {"device": "cpu"})
    assert got.device.type == "cpu"
    assert torch.equal(got, torch.ones(4))


def test_generated_code_uses_the_new_name():
    from lazygen.runtime.builtin.generated import kernels

    source = Path(kernels.__file__).read_text()
    assert "rt.eager_fallback(" in source
    assert "rt.eager(" not in source


def test_every_renamed_name_is_still_there_without_a_module_getattr():
    """Each old name is a function of its own: a module ``__getattr__`` would make Python
    stop specialising every ``rt.<name>`` load of generated kernels (4-5% of a traced op,
    measured in the same run against the version without it)."""
    from lazygen import renamed

    for old in renamed.KERNEL_SUPPORT_NAMES:
        assert callable(vars(rt).get(old)), old
    assert "__getattr__" not in vars(rt)
