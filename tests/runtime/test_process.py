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
        "assert not getattr(torch.autograd.graph._engine_run_backward, "
        "'_lazygen_on_calling_thread', False)\n"
        "x = torch.ones(2, device=lr.device())\n"
        "assert (x + 1).sum().item() == 4.0\n"
    )
    env = {
        **os.environ,
        "LAZYGEN_PRINTING": "0",
        "LAZYGEN_TIED_PARAMETERS": "0",
        "LAZYGEN_BACKWARD_ERRORS": "0",
        "LAZYGEN_BACKWARD_THREAD": "0",
        "LAZYGEN_GC_FREEZE": "0",
    }
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300, env=env)


_INIT_IMPORTS = """
import sys, torch
before = set(sys.modules)
import lazygen.runtime as lr
lr.init()
print(' '.join(sorted(m for m in ('torch._dynamo', 'torch.distributed.tensor', 'sympy')
                      if m in sys.modules and m not in before)))
import torch._dynamo.device_interface as device_interface
print(device_interface.get_interface_for_device('lazygen').__name__)
"""


@pytest.mark.parametrize("deferred", ["1", "0"])
def test_init_leaves_torchs_slow_imports_to_the_program(deferred):
    """``init()`` imports neither ``torch._dynamo`` nor ``torch.distributed.tensor`` nor
    sympy (~1.5 s together; torch imports them at a program's first op and optimizer step),
    and Dynamo still gets the lazy device's interface once it is imported. With
    ``LAZYGEN_DEFERRED_IMPORTS=0``, ``init()`` imports ``torch._dynamo`` itself."""
    env = {**os.environ, "LAZYGEN_DEFERRED_IMPORTS": deferred}
    out = subprocess.run(
        [sys.executable, "-c", _INIT_IMPORTS], capture_output=True, text=True, env=env,
        timeout=300, check=True,
    ).stdout.splitlines()  # fmt: skip
    imported = out[0].split()
    assert imported == [] if deferred == "1" else "torch._dynamo" in imported
    assert out[1] == "LazyDeviceInterface"


def _fake_module(tmp_path, monkeypatch, name: str, body: str = "VALUE = 1\n") -> None:
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_when_imported_runs_after_the_modules_code(tmp_path, monkeypatch):
    _fake_module(tmp_path, monkeypatch, "lazygen_probe_later")
    seen = []
    process.when_imported("lazygen_probe_later", lambda module: seen.append(module.VALUE))
    assert seen == []
    import lazygen_probe_later

    assert seen == [1] and lazygen_probe_later.__loader__.get_filename().endswith(".py")
    process.when_imported("lazygen_probe_later", lambda module: seen.append(2))
    assert seen == [1, 2]  # already imported: at once


def test_a_failing_callback_warns_and_the_import_goes_on(tmp_path, monkeypatch):
    _fake_module(tmp_path, monkeypatch, "lazygen_probe_failing")

    def broken(module):
        raise KeyError("nope")

    process.when_imported("lazygen_probe_failing", broken)
    with pytest.warns(RuntimeWarning, match="lazygen_probe_failing failed .KeyError"):
        import lazygen_probe_failing
    assert lazygen_probe_failing.VALUE == 1
