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


def test_ops_takes_the_flag_its_unknown_operator_error_offers(tmp_path, capsys):
    path = tmp_path / "old.yaml"
    path.write_text("backend: XLA\nsupported:\n  - topk\n  - symeig\n")
    assert main(["ops", "--backend", str(path)]) == 2
    assert "pass --skip-unknown-ops" in capsys.readouterr().err
    assert main(["ops", "--backend", str(path), "--skip-unknown-ops"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("supported     topk(")
    assert "warning: skipped 1 operator(s)" in captured.err and "symeig (line 4)" in captured.err


def test_validate_finds_the_hand_written_package_in_the_working_directory(tmp_path):
    """As the `lazygen` script: `sys.path[0]` is the script's folder, not the working
    directory, yet `--hand-written pkg` finds `./pkg` as `python -m lazygen` would. The
    summary counts the node's ShapeCompute shape function."""
    scripts = tmp_path / "bin"
    scripts.mkdir()
    script = scripts / "lazygen"
    script.write_text("import sys\nfrom lazygen.cli import main\nsys.exit(main())\n")
    work = tmp_path / "work"
    (work / "mypkg").mkdir(parents=True)
    (work / "mypkg" / "__init__.py").write_text("")
    (work / "mypkg" / "shape_functions.py").write_text(
        "from lazygen.runtime.ir import Shape\n\n\n"
        "def compute_shape_my_scale(input, factor):\n"
        "    return (Shape(input.node.shapes[input.index].dtype, ()),)\n"
    )
    (work / "mine.yaml").write_text(
        "backend: Mine\nfull_codegen:\n  - relu\nnon_native:\n"
        "  - func: my_scale(Tensor input, float factor) -> Tensor\n"
        "    opkind: aten::mul\n    properties: [ShapeCompute]\n"
    )
    result = subprocess.run(
        [sys.executable, str(script), "validate", "mine.yaml", "--hand-written", "mypkg"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "backend Mine is valid" in result.stdout
    assert "shape_functions 1" in result.stdout
    (work / "mypkg" / "shape_functions.py").write_text("")  # now the package is checked
    result = subprocess.run(
        [sys.executable, str(script), "validate", "mine.yaml", "--hand-written", "mypkg"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "compute_shape_my_scale" in result.stderr


def test_output_into_a_closed_pipe_ends_quietly():
    """`lazygen ops | head -2`: the reader closes the pipe after two lines; the command
    raised BrokenPipeError with a traceback (a newcomer's first browse of the catalogue)."""
    cli = subprocess.Popen(
        [sys.executable, "-m", "lazygen.cli", "ops"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    first = cli.stdout.readline()  # the catalogue has started; stop reading, as head does
    cli.stdout.close()
    stderr = cli.stderr.read().decode()
    assert cli.wait(timeout=120) == 0, stderr
    assert first.startswith(b"__and__") and stderr == "", stderr
