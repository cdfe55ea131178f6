"""`lazygen validate` runs every check `lazygen gen` runs, short of writing: on every case of
the bad-input corpus and on the fixture op lists, both print the same diagnostics and exit
with the same code. (Cases about the output directory itself fail only when writing, so
`validate` passes them.)

Runs in-process (`lazygen.cli.main`) so torch is imported once for the whole corpus.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import yaml
from lazygen.cli import main
from lazygen.loaders.native_yaml import NativeSources

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CASES = sorted((HERE / "cases").glob("*.yaml"))
FIXTURES = REPO / "tests" / "fixtures" / "op_lists"
#: Problems of the output directory: only writing meets them.
WRITE_ONLY_SETUPS = {"output_is_file", "readonly_output"}


def _diagnostics(capsys, argv: list[str]) -> tuple[int, list[str]]:
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if " error: " in line or " warning: " in line]
    return code, [line for line in lines if not line.startswith(("created ", "updated "))]


def _forget(packages: set[str]) -> None:
    """Drop a case's hand-written package, so the next case imports its own."""
    for name in list(sys.modules):
        if name.split(".")[0] in packages:
            del sys.modules[name]


@pytest.mark.parametrize("case_path", CASES, ids=[c.stem for c in CASES])
def test_validate_agrees_with_gen(case_path: Path, tmp_path, monkeypatch, capsys):
    case = yaml.safe_load(case_path.read_text())
    for name, content in case["files"].items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    defaults = NativeSources.default()
    substitutions = {
        "dir": str(tmp_path),
        "native_functions": str(defaults.native_functions),
        "tags": str(defaults.tags),
    }
    args = [a.format(**substitutions) for a in case.get("args", [])]
    packages = {Path(n).parts[0] for n in case["files"] if "/" in n}
    try:
        v_code, v_lines = _diagnostics(capsys, ["validate", "backend.yaml", *args])
        _forget(packages)
        if case.get("setup") in WRITE_ONLY_SETUPS:
            assert v_code == 0, v_lines
            return
        g_code, g_lines = _diagnostics(
            capsys, ["gen", "backend.yaml", "-o", str(tmp_path / "out"), *args]
        )
    finally:
        _forget(packages)
    assert v_code == g_code == 2
    assert v_lines == g_lines
    assert not (tmp_path / "out").exists()


FIXTURE_LISTS = [
    (REPO / "yaml" / "builtin.yaml", []),
    # lazygen's own TS package builds these non-native nodes with their shapes (its op list
    # says ShapePrecompute); PyTorch's list says ShapeCompute/ShapeCache, which would need
    # compute_shape_<node> functions the package does not have.
    (FIXTURES / "pytorch_ts_native_functions.yaml", ["--defer-hand-written"]),
    (FIXTURES / "xla_native_functions.yaml", ["--defer-hand-written"]),
    (FIXTURES / "xla_native_functions_2022.yaml", ["--defer-hand-written", "--skip-unknown-ops"]),
    (FIXTURES / "torch_mlir_generated_native_functions.yaml", ["--defer-hand-written"]),
]


@pytest.mark.slow
@pytest.mark.parametrize("op_list, args", FIXTURE_LISTS, ids=[p.stem for p, _ in FIXTURE_LISTS])
def test_validate_agrees_with_gen_on_fixture_lists(op_list, args, tmp_path, capsys):
    v_code, v_lines = _diagnostics(capsys, ["validate", str(op_list), *args])
    g_code, g_lines = _diagnostics(
        capsys, ["gen", str(op_list), "-o", str(tmp_path / "out"), "-q", *args]
    )
    assert v_code == g_code == 0
    assert v_lines == g_lines
    assert not any(" error: " in line for line in v_lines)
