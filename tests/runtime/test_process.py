"""Every process-wide effect is listed once, with an opt-out the documentation's settings
table shows (rendered from ``process.EFFECTS``: ``tests/docs/test_docs_build.py`` checks
the built page), and the opt-outs are honoured."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lazygen.runtime import process

ENVIRONMENT_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "environment.md"


def test_the_settings_page_renders_the_effects_table():
    assert "```{lazygen-env-table}" in ENVIRONMENT_PAGE.read_text()
    names = [e.name for e in process.EFFECTS]
    assert len(set(names)) == len(names)
    assert all(e.variable.startswith("LAZYGEN_") and e.what for e in process.EFFECTS)


@pytest.mark.parametrize("effect", [e.name for e in process.EFFECTS])
def test_enabled_unless_its_variable_is_zero(effect, monkeypatch):
    variable = next(e.variable for e in process.EFFECTS if e.name == effect)
    monkeypatch.delenv(variable, raising=False)
    assert process.enabled(effect)
    monkeypatch.setenv(variable, "0")
    assert not process.enabled(effect)


def test_opted_out_patches_leave_torch_alone():
    code = (
        "import torch, torch._tensor_str as s\n"
        "original_to, original_str = torch.nn.Module.to, s._str\n"
        "import lazygen.runtime as lr\n"
        "lr.init()\n"
        "assert torch.nn.Module.to is original_to and s._str is original_str\n"
        "assert not getattr(torch.autograd.graph._engine_run_backward, "
        "'_lazygen_delivers_errors', False)\n"
        "x = torch.ones(2, device=lr.device())\n"
        "assert (x + 1).sum().item() == 4.0\n"
    )
    env = {
        **os.environ,
        "LAZYGEN_PRINTING": "0",
        "LAZYGEN_TIED_PARAMETERS": "0",
        "LAZYGEN_BACKWARD_ERRORS": "0",
        "LAZYGEN_GC_FREEZE": "0",
    }
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300, env=env)
