"""The `lazygen` CLI: exit codes and clean messages (never a traceback) for user mistakes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lazygen import __version__
from lazygen.cli import main


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lazygen.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0 and __version__ in result.stdout


def test_validate_summary(tmp_path, capsys):
    path = tmp_path / "b.yaml"
    path.write_text("backend: Lazy\nfull_codegen:\n  - relu\n  - abs\nsupported:\n  - clone\n")
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "backend Lazy is valid" in out and "full_codegen      2" in out


@pytest.mark.parametrize(
    "content, message",
    [
        ("backend: Lazy\nfull_codegen:\n  - relux\n", "b.yaml:3: error: unknown operator 'relux'"),
        ("backend: Lazy\nfull_codegen: [\n", "b.yaml:3:1: error: YAML syntax error"),
    ],
)
def test_validate_errors_exit_2_without_traceback(tmp_path, content, message):
    path = tmp_path / "b.yaml"
    path.write_text(content)
    result = run_cli("validate", str(path))
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_missing_paths_exit_2(tmp_path):
    result = run_cli("validate", str(tmp_path / "none.yaml"))
    assert result.returncode == 2 and "backend op list not found" in result.stderr
    result = run_cli("ops", "--native-functions", str(tmp_path / "nf.yaml"))
    assert result.returncode == 2 and "native_functions.yaml not found" in result.stderr
    assert "Traceback" not in result.stderr


def test_ops_grep(capsys):
    assert main(["ops", "--grep", r"^relu\("]) == 0
    assert capsys.readouterr().out.strip() == "relu(Tensor self) -> Tensor"
    assert main(["ops", "--grep", "("]) == 2


def test_ops_for_a_backend(tmp_path, capsys):
    path = tmp_path / "b.yaml"
    path.write_text("backend: Lazy\nfull_codegen:\n  - topk\n")
    assert main(["ops", "--backend", str(path)]) == 0
    assert capsys.readouterr().out.startswith("full_codegen  topk(Tensor self, SymInt k")
