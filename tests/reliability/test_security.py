"""Security: identifiers are validated before they reach generated code, output stays
inside the output directory, and YAML is only ever loaded with safe loaders."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lazygen.diagnostics import LazygenError
from lazygen.pipeline import GenConfig, run
from lazygen.render.writer import (
    FileChange,
    UnsafeOutputName,
    apply_changes,
    check_name,
    plan_changes,
)

REPO = Path(__file__).resolve().parents[2]


def gen_errors(tmp_path: Path, backend: str) -> list[str]:
    path = tmp_path / "backend.yaml"
    path.write_text(backend)
    with pytest.raises(LazygenError) as info:
        run(GenConfig(path, tmp_path / "out"))
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    return [str(d) for d in info.value.diagnostics]


@pytest.mark.parametrize(
    "backend, expected",
    [
        (
            "backend: Lazy\nfull_codegen:\n  - 'abs\"; import os'\n",
            "backend.yaml:3: error: 'abs\"; import os' is not an operator name",
        ),
        (
            "backend: Lazy\nfull_codegen:\n  - abs\nnon_native:\n  - func: \"x(Tensor a) -> Tensor\"\n    opkind: 'a; import os'\n",
            "backend.yaml:5: error: opkind",
        ),
        (
            "backend: 'Lazy; import os'\nfull_codegen:\n  - abs\n",
            "backend.yaml:1: error: backend name",
        ),
        (
            "backend: Lazy\nnon_native:\n  - func: 'x(Tensor a, int b=__import__(\"os\").getpid()) -> Tensor'\n",
            "backend.yaml:3: error: default '__import__(\"os\").getpid()'",
        ),
        (
            "backend: Lazy\nnon_native:\n  - func: 'x(Tensor a, int b) -> Tensor'\n    properties: ['Lower; import os']\n",
            "backend.yaml:3: error: unknown property",
        ),
        (
            "backend: Lazy\nnon_native:\n  - func: 'x\"(Tensor a) -> Tensor'\n",
            "backend.yaml:3: error: non_native schema does not parse",
        ),
    ],
)
def test_injected_identifiers_are_rejected_with_location(tmp_path, backend, expected):
    errors = gen_errors(tmp_path, backend)
    assert any(expected in e for e in errors), errors


@pytest.mark.parametrize("name", ["../evil.py", "/etc/evil.py", "..", "sub/dir.py", "a\\b.py", ""])
def test_output_names_stay_inside_the_output_directory(tmp_path, name):
    with pytest.raises(UnsafeOutputName):
        check_name(name)
    with pytest.raises(UnsafeOutputName):
        plan_changes(tmp_path, {name: "x = 1\n"})
    with pytest.raises(UnsafeOutputName):
        apply_changes(tmp_path, [FileChange(name, None, "x = 1\n")])
    assert not (tmp_path.parent / "evil.py").exists()


def test_yaml_is_only_loaded_with_safe_loaders():
    unsafe = re.compile(
        r"yaml\.(unsafe_load|full_load|load_all)\(|Loader=yaml\.(Loader|FullLoader|UnsafeLoader)|yaml\.load\((?![^)]*Safe)"
    )
    offenders = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sorted((REPO / "lazygen").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if unsafe.search(line)
    ]
    assert not offenders, offenders
