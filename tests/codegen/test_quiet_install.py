"""A fresh install of lazygen's wheel is quiet: every package lazygen imports is declared
(numpy was not, and torch warned "Failed to initialize NumPy" on every ``lazygen``
command), and ``lazygen --help`` and the README's first example print no warning.

The wheel is built from a copy of the sources and installed by pip, with its declared
dependencies resolved from the package index, into a fresh venv. torch itself (~200 MB)
is not downloaded again: the venv sees this environment's torch and torch's own
requirements, and nothing else of it, through a folder of links named by a ``.pth`` file,
so pip finds torch installed and installs the rest. A static check beside it compares
every import in ``lazygen/`` with the declared requirements. The install is slow (pip
resolves and downloads): CI runs it."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("setup.py", "pyproject.toml", "README.md", "lazygen", "generated", "templates", "yaml")
#: Import name -> the distribution that provides it, for lazygen's third-party imports.
PROVIDERS = {
    "torch": "torch",
    "yaml": "pyyaml",
    "jinja2": "jinja2",
    "black": "black",
    "numpy": "numpy",
    "jax": "jax",
    "jaxlib": "jaxlib",
    "setuptools": "setuptools",
}
#: Imported only where their users have them: the jax backend (the ``jax`` extra) and the
#: build hook (a setup.py, run by a build with setuptools).
OPTIONAL = {"jax": "jax", "jaxlib": "jax", "setuptools": "build-system"}


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    text = (REPO / "pyproject.toml").read_text()
    block = re.search(r"^dependencies = \[(.*?)^\]", text, re.M | re.S)[1]
    names = {re.match(r"[\w.-]+", d)[0].lower() for d in re.findall(r'"([^"]+)"', block)}
    extras = {
        name: {re.match(r"[\w.-]+", d)[0].lower() for d in re.findall(r'"([^"]+)"', body)}
        for name, body in re.findall(r"^(\w+) = \[(.*?)\]", text, re.M | re.S)
    }
    return names, extras


def _imports() -> set[str]:
    found = set()
    for path in (REPO / "lazygen").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
    return {n for n in found if n not in sys.stdlib_module_names and n != "lazygen"}


def test_every_package_lazygen_imports_is_declared():
    required, extras = _declared()
    imported = _imports()
    assert imported <= set(PROVIDERS), f"map these imports to their packages: {imported}"
    for name in imported:
        if name in OPTIONAL:
            where = OPTIONAL[name]
            assert where == "build-system" or PROVIDERS[name] in extras[where], name
        else:
            assert PROVIDERS[name] in required, f"{name} is imported but not a dependency"
    # torch warns at import without numpy, and `lazygen conformance` imports torch's OpInfo
    # database, which needs numpy and expecttest.
    assert {"numpy", "expecttest"} <= required


def _torch_alone(folder: Path) -> None:
    """Links to torch's distribution and its requirements' (recursively), nothing else."""
    folder.mkdir()
    todo, seen = ["torch"], set()
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        dist = metadata.distribution(name)
        for requirement in dist.requires or []:
            if ";" in requirement and "extra ==" in requirement:
                continue
            todo.append(re.match(r"[\w.-]+", requirement)[0])
        root = Path(dist.locate_file(""))
        for top in {Path(str(f)).parts[0] for f in dist.files or []}:
            source = root / top
            if source.exists() and not (folder / top).exists() and top not in ("..", "bin"):
                (folder / top).symlink_to(source)


def _run(args, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=900, **kwargs)
    assert done.returncode == 0, f"{args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.mark.slow
def test_a_fresh_install_prints_no_warning(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".lazygen-stamp.json")
    for name in SOURCES:
        path = REPO / name
        copy = shutil.copytree if path.is_dir() else shutil.copy2
        copy(path, src / name, **({"ignore": ignore} if path.is_dir() else {}))
    python = sys.executable
    _run([python, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "-w", str(tmp_path / "dist"), str(src)], tmp_path)  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("lazygen-*.whl")
    venv = tmp_path / "venv"
    _run([python, "-m", "venv", str(venv)], tmp_path)
    _torch_alone(tmp_path / "torch-alone")
    purelib = _run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        tmp_path,
    ).stdout.strip()
    Path(purelib, "torch-alone.pth").write_text(str(tmp_path / "torch-alone") + "\n")
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], tmp_path)
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "OMP_NUM_THREADS": "1"}
    work = tmp_path / "work"
    work.mkdir()
    helped = _run([str(venv / "bin" / "lazygen"), "--help"], work, env=env)
    assert helped.stderr == "" and "usage: lazygen" in helped.stdout
    readme = (REPO / "README.md").read_text()
    example = re.search(r"## Train on the lazy device\n\n```python\n(.*?)```", readme, re.S)[1]
    (work / "example.py").write_text(example)
    trained = _run([str(venv / "bin" / "python"), "example.py"], work, env=env)
    assert trained.stderr == "", trained.stderr
    assert "4 " in trained.stdout and "Ops run eagerly (not in the op list): 0" in trained.stdout
    packages = _run([str(venv / "bin" / "python"), "-m", "pip", "list"], work, env=env).stdout
    assert "numpy" in packages and sysconfig.get_paths()["purelib"] not in packages
