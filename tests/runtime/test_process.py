"""Every process-wide effect is listed once, with an opt-out the README documents, and the
opt-outs are honoured."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lazygen.runtime import process

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_lists_every_effect_with_its_opt_out():
    text = README.read_text()
    rows = re.findall(r"^\| `(\w+)` \|.*\| `(LAZYGEN_\w+)=0` \|$", text, re.M)
    assert rows == [(e.name, e.variable) for e in process.EFFECTS]


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
