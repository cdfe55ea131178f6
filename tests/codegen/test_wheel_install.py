"""A wheel built from the repository generates a backend when installed on its own.

The wheel is built from a copy of the sources (`pip wheel --no-deps --no-build-isolation`,
offline), installed into a fresh venv without pip, and its `lazygen` script runs in a
temporary directory: no editable install, no repository on `sys.path`. The fresh venv gets
torch, PyYAML, Jinja2 and black from the project venv through a `.pth` line naming that
site-packages directory (a path line: the editable install's own `.pth` hook there is not
run, so the repository's lazygen stays invisible). About 12 s here.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: What a build needs: packaging files, the package, the generated sources, their op list
#: and the templates.
SOURCES = ("setup.py", "pyproject.toml", "README.md", "lazygen", "generated", "templates", "yaml")
OP_LIST = "backend: Lazy\nfull_codegen:\n  - abs\n  - add.Tensor\n"


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def installed():
    """(venv python, venv scripts dir, scratch dir); everything is deleted afterwards."""
    with tempfile.TemporaryDirectory(prefix="lazygen-wheel-") as scratch:
        root = Path(scratch)
        src = root / "src"
        src.mkdir()
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
        for name in SOURCES:
            path = REPO / name
            if path.is_dir():
                shutil.copytree(path, src / name, ignore=ignore)
            else:
                shutil.copy2(path, src / name)
        python = sys.executable
        _run([python, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
              "-w", str(root / "dist"), str(src)], root)  # fmt: skip
        (wheel,) = (root / "dist").glob("lazygen-*.whl")
        venv = root / "venv"
        _run([python, "-m", "venv", "--without-pip", str(venv)], root)
        venv_python = venv / "bin" / "python"
        _run([python, "-m", "pip", "--python", str(venv_python), "install", "-q", "--no-deps",
              "--disable-pip-version-check", str(wheel)], root)  # fmt: skip
        purelib = _run(
            [str(venv_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            root,
        ).stdout.strip()
        project_site = sysconfig.get_paths()["purelib"]
        (Path(purelib) / "lazygen-test-deps.pth").write_text(project_site + "\n")
        work = root / "work"
        work.mkdir()
        yield venv_python, venv / "bin", work


def test_wheel_ships_templates_and_generates(installed):
    venv_python, scripts, work = installed
    probe = _run(
        [str(venv_python), "-c", "import lazygen, sys; print(lazygen.__file__); print(sys.path)"],
        work,
    ).stdout
    assert str(work.parent / "venv") in probe.splitlines()[0]
    assert str(REPO) not in probe.replace(str(Path(sysconfig.get_paths()["purelib"])), "")
    (work / "ops.yaml").write_text(OP_LIST)
    result = _run([str(scripts / "lazygen"), "gen", "ops.yaml", "-o", "mybackend"], work)
    assert "written" in result.stdout
    imported = _run(
        [
            str(venv_python),
            "-c",
            "from mybackend import registration; print(len(registration.KERNELS))",
        ],
        work,
    )
    assert imported.stdout.strip() == "2"


def test_wheel_ships_the_new_backend_templates(installed):
    """`lazygen new-backend` renders its project from templates shipped as package data."""
    venv_python, scripts, work = installed
    result = _run([str(scripts / "lazygen"), "new-backend", "acme", "-o", "acme"], work)
    assert "wrote 10 files" in result.stdout
    assert (work / "acme" / ".gitignore").is_file()
    assert (work / "acme" / "acme_backend" / "hand_written" / "__init__.py").is_file()
    assert (
        "class AcmeBackend(Backend)" in (work / "acme" / "acme_backend" / "backend.py").read_text()
    )
