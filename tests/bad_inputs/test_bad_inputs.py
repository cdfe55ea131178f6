"""Bad-input corpus: every case in cases/ must fail cleanly and leave the output untouched.

Each case file names its input files, extra `lazygen gen` arguments and the expected
message. For every case the test asserts the four promises made to users:

1. a one-line error naming the file (and line, where there is one) and what to do;
2. exit code 2;
3. no traceback;
4. the existing output directory byte-for-byte unchanged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import yaml
from lazygen.loaders.native_yaml import NativeSources

HERE = Path(__file__).resolve().parent
CASES = sorted((HERE / "cases").glob("*.yaml"))
BASE_BACKEND = "backend: Lazy\nfull_codegen:\n  - abs\n  - relu\n"


def gen(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    # the case's own packages first, then the caller's path (a worktree under test)
    path = os.pathsep.join(p for p in (str(cwd), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run(
        [sys.executable, "-m", "lazygen.cli", "gen", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def valid_output(tmp_path_factory) -> Path:
    """A correct generated tree the bad cases must leave alone."""
    root = tmp_path_factory.mktemp("base")
    (root / "base.yaml").write_text(BASE_BACKEND)
    result = gen(root, "base.yaml", "-o", str(root / "out"))
    assert result.returncode == 0, result.stderr
    return root / "out"


def snapshot(path: Path) -> dict[str, bytes]:
    if path.is_file():
        return {"": path.read_bytes()}
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


def make_immutable(path: Path, on: bool) -> None:
    """An unwritable directory, even for root (who ignores permission bits)."""
    if os.geteuid() != 0:
        path.chmod(0o555 if on else 0o755)
        return
    result = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True)
    if result.returncode != 0 and on:
        pytest.skip(f"cannot make a directory unwritable as root here: {result.stderr!r}")


def test_corpus_is_complete():
    assert len(CASES) >= 24


@pytest.mark.parametrize("case_path", CASES, ids=[c.stem for c in CASES])
def test_bad_input(case_path: Path, tmp_path: Path, valid_output: Path):
    case = yaml.safe_load(case_path.read_text())
    for name, content in case["files"].items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    out = tmp_path / "out"
    setup = case.get("setup")
    if setup == "output_is_file":
        out.write_text("not a directory\n")
    else:
        shutil.copytree(valid_output, out)
    defaults = NativeSources.default()
    substitutions = {
        "dir": str(tmp_path),
        "native_functions": str(defaults.native_functions),
        "tags": str(defaults.tags),
    }
    args = [a.format(**substitutions) for a in case.get("args", [])]
    before = snapshot(out)
    if setup == "readonly_output":
        (tmp_path / "backend.yaml").write_text(case["files"]["backend.yaml"])
        make_immutable(out, True)
    try:
        result = gen(tmp_path, "backend.yaml", "-o", str(out), *args)
    finally:
        if setup == "readonly_output":
            make_immutable(out, False)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.returncode == 2, output
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert errors, output
    assert any(case["expect"] in line for line in errors), (case["expect"], output)
    for line in errors:
        assert "(" in line and line.rstrip().endswith(")"), f"error without a hint: {line}"
    assert snapshot(out) == before, "the existing output was modified"
