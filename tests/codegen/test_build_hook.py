"""Build the example backend with `pip wheel --no-build-isolation` (offline), import the
generated modules from the wheel, and train with it installed into a fresh venv."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.wheels import build_wheel, fresh_venv, install_wheel

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_backend"


def test_wheel_contains_generated_backend(tmp_path, monkeypatch):
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("generated", "build", "*.egg-info"))
    wheel = build_wheel(src, tmp_path / "dist")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    monkeypatch.syspath_prepend(str(site))
    for name in [m for m in sys.modules if m.startswith("tiny_backend")]:
        del sys.modules[name]
    package = importlib.import_module("tiny_backend.generated")
    assert package.MODULES  # from the example's template override
    assert Path(package.__file__).is_relative_to(site)
    registration = importlib.import_module("tiny_backend.generated.registration")
    import torch

    assert torch.ops.aten.add.Tensor in registration.KERNELS
    assert set(registration.NODE_CLASSES) == {
        "add.Tensor",
        "addmm",
        "fused_silu",  # the non-native op with the backend's own opkind
        "mm",
        "mul.Tensor",
        "relu",
        "sum.dim_IntList",
        "t_copy",
        "threshold_backward",
        "topk",
        "view_copy",
    }
    assert torch.ops.aten.silu.default in registration.KERNELS  # the `supported` kernel

    # An unchanged rebuild skips generation: the stamp is current and files keep their mtime.
    generated = src / "tiny_backend" / "generated" / "kernels.py"
    before = generated.stat().st_mtime_ns
    shutil.rmtree(tmp_path / "dist")
    build_wheel(src, tmp_path / "dist")
    assert generated.stat().st_mtime_ns == before


def test_a_build_names_the_setup_py_keyword_of_a_suggested_switch(tmp_path, monkeypatch):
    """An op list written for another torch fails the build with the loader's message,
    which suggests `--skip-unknown-ops`: a command-line flag that a `pip install` cannot
    take. The build says which `lazygen_cmdclass` keyword it is (a newcomer's stumble)."""
    from setuptools import Distribution

    from lazygen.build_hook import lazygen_cmdclass

    (tmp_path / "old.yaml").write_text("backend: Old\nfull_codegen:\n  - relu\n  - symeig\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # run() puts the project on it
    command = lazygen_cmdclass(backend_yaml="old.yaml", output_dir="out")["lazygen_gen"]
    gen = command(Distribution())
    gen.initialize_options()
    gen.finalize_options()
    with pytest.raises(SystemExit) as failed:
        gen.run()
    message = str(failed.value)
    assert "old.yaml:4: error: unknown operator 'symeig'" in message
    assert 'lazygen_cmdclass(...) in setup.py: skip_unknown_ops="yes"' in message
    assert not (tmp_path / "out").exists()  # nothing half-written


@pytest.mark.slow
def test_example_backend_trains_from_an_installed_wheel(tmp_path):
    """The out-of-tree backend (own device name, op list, supported kernel, non-native op,
    template override, its own interpreter instead of TorchScript), built into a wheel and
    installed into a fresh venv, trains equal to eager: lazygen finds it by entry point."""
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("generated", "build", "*.egg-info"))
    wheel = build_wheel(src, tmp_path / "dist")
    python = fresh_venv(tmp_path / "venv")
    install_wheel(python, wheel)
    script = shutil.copy(EXAMPLE / "train.py", tmp_path / "train.py")
    result = subprocess.run(
        [str(python), str(script), "--steps", "4"],
        cwd=tmp_path,  # neither the repository nor the example's sources on sys.path
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "backend: tiny, device: tiny:0" in result.stdout
    assert "lazy::silu" in result.stdout and "lazy::addmm" in result.stdout
    assert (
        f"{tmp_path}/venv/"
        in subprocess.run(
            [str(python), "-c", "import tiny_backend; print(tiny_backend.__file__)"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )  # the installed wheel's package, not the example's sources
