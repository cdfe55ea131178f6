"""Build a backend project into a wheel and install it into a fresh venv, offline.

Shared by the tests of the example backend (`codegen/test_build_hook.py`) and of
`lazygen new-backend`'s projects (`codegen/test_new_backend.py`): the wheel is built with
`pip wheel --no-build-isolation` (the build hook imports this environment's lazygen and
torch) and installed for real into a venv that sees this environment's packages through a
`.pth` file, so no editable install or source folder stands in for it.
"""

from __future__ import annotations

import site
import subprocess
import sys
import sysconfig
from pathlib import Path


def build_wheel(src: Path, dist: Path) -> Path:
    """`pip wheel` of the project in `src` into `dist`; the wheel's path."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
         "--no-index", "-q", "-w", str(dist), "."],
        cwd=src,
        check=True,
    )  # fmt: skip
    (wheel,) = dist.glob("*.whl")
    return wheel


def fresh_venv(root: Path) -> Path:
    """A new venv that sees this environment's packages (torch, lazygen) through a .pth
    file, so that a wheel is installed into it for real, offline and fast; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = sorted({sysconfig.get_paths()["purelib"], *site.getsitepackages()})
    # `import` lines of a .pth run at start-up: addsitedir also runs the .pth files there
    # (lazygen's own editable install is one).
    lines = [f"import site; site.addsitedir({directory!r})" for directory in ours]
    Path(purelib, "_lazygen_test_parent.pth").write_text("\n".join(lines) + "\n")
    return python


def install_wheel(python: Path, wheel: Path) -> None:
    """Install `wheel` into the venv of `python` (no dependencies, offline)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-index", str(wheel)],
        check=True,
    )  # fmt: skip
