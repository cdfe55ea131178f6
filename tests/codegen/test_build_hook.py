"""Build the example backend with `pip wheel --no-build-isolation` (offline) and import the
generated modules from the wheel."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_backend"


def _build(src: Path, dist: Path) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-build-isolation",
            "--no-deps",
            "--no-index",
            "-q",
            "-w",
            str(dist),
            ".",
        ],
        cwd=src,
        check=True,
    )
    (wheel,) = dist.glob("*.whl")
    return wheel


def test_wheel_contains_generated_backend(tmp_path, monkeypatch):
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("generated", "build", "*.egg-info"))
    wheel = _build(src, tmp_path / "dist")
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
        "mul.Tensor",
        "relu",
        "sum.dim_IntList",
        "topk",
    }

    # An unchanged rebuild skips generation: the stamp is current and files keep their mtime.
    generated = src / "tiny_backend" / "generated" / "kernels.py"
    before = generated.stat().st_mtime_ns
    shutil.rmtree(tmp_path / "dist")
    _build(src, tmp_path / "dist")
    assert generated.stat().st_mtime_ns == before
