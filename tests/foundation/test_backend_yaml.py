"""Backend op list validation: every problem located, all reported together."""

from __future__ import annotations

import textwrap
from importlib import metadata
from pathlib import Path

import pytest

from lazygen.diagnostics import LazygenError
from lazygen.loaders.backend_yaml import load_backend
from lazygen.loaders.native_yaml import load_catalogue
from lazygen.model.schema import OperatorName

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "pytorch_ts_op_list.yaml"
REPO_OP_LIST = Path(__file__).resolve().parents[2] / "yaml" / "builtin.yaml"


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


def errors(tmp_path, catalogue, text: str) -> list[str]:
    path = tmp_path / "backend.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(LazygenError) as info:
        load_backend(path, catalogue)
    return [str(d) for d in info.value.diagnostics]


@pytest.mark.skipif(not REFERENCE.exists(), reason="shared/reference is beside the repo in CI")
def test_reference_op_list_loads(catalogue):
    ops = load_backend(REFERENCE, catalogue)
    assert ops.counts() == {
        "full_codegen": 161,
        "ir_gen": 1,
        "supported": 24,
        "autograd": 2,
        "symint": 13,
        "non_native": 16,
    }
    assert ops.full_codegen[0].location.line > 1
    assert OperatorName("add", "Tensor") in {e.name for e in ops.full_codegen}


@pytest.mark.skipif(not REFERENCE.exists(), reason="shared/reference is beside the repo in CI")
def test_repo_op_list_covers_the_reference(catalogue):
    ours = load_backend(REPO_OP_LIST, catalogue)
    reference = load_backend(REFERENCE, catalogue)
    handled = {e.name for _, e in ours.entries()}
    missing = {e.name for _, e in reference.entries()} - handled
    assert not missing, sorted(map(str, missing))
    assert {str(e.func.name) for e in reference.non_native} <= {
        str(e.func.name) for e in ours.non_native
    }


CASES = [
    (
        "backend: Lazy\nful_codegen: []\n",
        ":2: error: unknown top-level key 'ful_codegen' (did you mean 'full_codegen'?)",
    ),
    ("backend: Lazy\nfull_codegen: abs\n", ":2: error: section 'full_codegen' must be a list"),
    ("backend: Lazy\nfull_codegen:\n  - abss\n", ":3: error: unknown operator 'abss'"),
    (
        "backend: Lazy\nfull_codegen:\n  - add.Tensr\n",
        ":3: error: operator add has no overload 'Tensr'",
    ),
    (
        "backend: Lazy\nfull_codegen:\n  - abs\n  - abs\n",
        ":4: error: abs is listed twice in 'full_codegen' (first at line 3)",
    ),
    (
        "backend: Lazy\nfull_codegen:\n  - abs\nsupported:\n  - abs\n",
        ":5: error: abs is listed in both 'full_codegen' and 'supported'",
    ),
    (
        "backend: Lazy\nfull_codegen:\n  - add\n",
        ":3: error: operator add has no default overload (name one: add.Scalar, add.Scalar_out, "
        "add.Tensor, add.out)",
    ),
    (
        "backend: Lazy\nfull_codegen:\n  - aten::mul.Tensor\n",
        "(write 'mul.Tensor': op lists name aten operators without their namespace)",
    ),
    (
        "backend: Lazy\nblacklist:\n  - abs\n",
        ":2: error: 'blacklist' is a key of torch-mlir's autogen_ltc_backend.yaml",
    ),
    (
        "backend: Lazy\nadditional_ops:\n  - abs\n",
        "list these operators under 'supported'",
    ),
    (
        "backend: Lazy\nfull_codegen:\n  - symeig\n",
        f"not in torch {metadata.version('torch').split('+')[0]}",
    ),
    (
        "backend: Lazy\nnon_native:\n  - func: foo(Tensor x) -> Tensor\n    cache_shape: false\n",
        ":3: error: 'cache_shape' is a key of torchgen's early (2022) non_native entries",
    ),
    (
        "backend: Lazy\nnon_native:\n  - func: n(Tensor x, std::vector<int64_t> s) -> Tensor\n",
        "std::vector<int64_t> -> int[])",
    ),
    (
        "backend: Lazy\nnon_native:\n  - func: foo(Tensor x -> Tensor\n",
        ":3: error: non_native schema does not parse",
    ),
    (
        "backend: Lazy\nnon_native:\n  - func: foo(Tensor x) -> Tensor\n    properties: [Lowr]\n",
        ":3: error: unknown property 'Lowr' on foo (did you mean 'Lower'?)",
    ),
    (
        "backend: Lazy\nnon_native:\n  - func: foo(Tensor x) -> Tensor\n    opkind: 'x\"; import os'\n",
        ":3: error: opkind",
    ),
    ("backend: 'x\"; import os'\n", ":1: error: backend name"),
    (
        "backend: Lazy\nfull_codegen:\n  - [abs]\n",
        ":3: error: entry in 'full_codegen' is not an operator name",
    ),
    (
        "backend: Lazy\nfull_codegen:\n  - abs\n    - relu\n",
        ":3: error: 'abs - relu' is not an operator name",
    ),
    ("backend: Lazy\nfull_codegen:\n  - abs\n - relu\n", "YAML syntax error"),
    ("", ":1: error: backend op list is empty"),
    ("- abs\n", ":1: error: backend op list must be a mapping"),
    ("full_codegen: [abs]\n", ":1: error: missing 'backend: <Name>'"),
    ("backend: Lazy\nbackend: Other\n", ":2:1: error: YAML syntax error: duplicate key 'backend'"),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_bad_op_lists(tmp_path, catalogue, text, expected):
    found = errors(tmp_path, catalogue, text)
    assert any(expected in e and "backend.yaml" in e for e in found), found


def test_all_problems_are_collected(tmp_path, catalogue):
    found = errors(
        tmp_path,
        catalogue,
        """\
        backend: Lazy
        full_codegen:
          - abss
          - add.Tensr
        supported: nope
        extra: 1
        """,
    )
    assert len(found) == 4


def test_bare_name_is_the_default_overload(tmp_path, catalogue):
    path = tmp_path / "ok.yaml"
    path.write_text(
        "backend: Lazy\ncpp_namespace: torch::lazy\nfull_codegen:\n  - relu\n  - max.dim\n"
    )
    ops = load_backend(path, catalogue)
    assert [str(e.name) for e in ops.full_codegen] == ["relu", "max.dim"]
    assert ops.cpp_namespace == "torch::lazy"


def load(tmp_path, catalogue, text: str, **options):
    path = tmp_path / "backend.yaml"
    path.write_text(textwrap.dedent(text))
    return load_backend(path, catalogue, **options)


def test_torchgen_cpp_keys_are_accepted_with_a_notice_each(tmp_path, catalogue):
    ops = load(
        tmp_path,
        catalogue,
        """\
        backend: XLA
        cpp_namespace: torch_xla
        class_name: XLANativeFunctions
        extra_headers: [a.h]
        use_out_as_primary: true
        device_guard: false
        full_codegen:
          - abs
        """,
    )
    notices = {d.location.line: d.message for d in ops.notices}
    assert sorted(notices) == [3, 4, 5, 6]
    assert all("accepted and ignored" in m for m in notices.values())
    assert "C++ #includes" in notices[4]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("backend: L\nuse_out_as_primary: 1\n", ":2: error: 'use_out_as_primary' must be true"),
        ("backend: L\nclass_name: 'a b'\n", ":2: error: class_name 'a b' is not an identifier"),
        ("backend: L\nextra_headers: {a: 1}\n", ":2: error: 'extra_headers' must be a header"),
    ],
)
def test_torchgen_keys_are_type_checked(tmp_path, catalogue, text, expected):
    assert any(expected in e for e in errors(tmp_path, catalogue, text))


def test_ir_gen_with_supported_is_a_generated_node_and_a_hand_written_kernel(tmp_path, catalogue):
    ops = load(
        tmp_path,
        catalogue,
        "backend: L\nir_gen:\n  - atan2\n  - selu\nsupported:\n  - atan2\nautograd:\n  - selu\n",
    )
    assert [str(e.name) for e in ops.ir_gen] == ["atan2", "selu"]
    assert [str(e.name) for e in ops.supported] == ["atan2"]


@pytest.mark.parametrize(
    "sections, hint",
    [
        (("full_codegen", "ir_gen"), "already generates its IR node"),
        (("supported", "autograd"), "autograd key"),
        (("full_codegen", "autograd"), "autograd key"),
    ],
)
def test_conflicting_sections_say_why(tmp_path, catalogue, sections, hint):
    first, second = sections
    found = errors(tmp_path, catalogue, f"backend: L\n{first}:\n  - abs\n{second}:\n  - abs\n")
    assert any(f"listed in both '{first}' and '{second}'" in e and hint in e for e in found)


def test_skip_unknown_ops_gives_one_notice(tmp_path, catalogue):
    text = "backend: L\nfull_codegen:\n  - abs\n  - symeig\n  - relu.nope\nsymint:\n  - symeig\n"
    found = errors(tmp_path, catalogue, text)
    assert len(found) == 2 and all("pass --skip-unknown-ops" in e for e in found), found
    ops = load(tmp_path, catalogue, text, skip_unknown=True)
    assert [str(e.name) for e in ops.full_codegen] == ["abs"]
    no_default = errors(tmp_path, catalogue, "backend: L\nfull_codegen:\n  - add\n")
    assert "--skip-unknown-ops" not in no_default[0]  # `add` is this torch's: name an overload
    symint, skipped = ops.notices
    assert "skipped 2 operator(s)" in skipped.message
    assert "symeig (line 4), relu.nope (line 5)" in skipped.message
    assert "symint entry symeig has no effect" in symint.message


def test_symint_entries_without_a_kernel_are_noted_not_refused(tmp_path, catalogue):
    """torchgen only looks `symint` names up among the kernels it generates; torch-mlir's
    list names `view` there, which none of its sections do."""
    text = "backend: L\nfull_codegen:\n  - abs\n  - view_copy\nsymint:\n  - view_copy\n  - view\n"
    text += "  - frobnicate\n"
    ops = load(tmp_path, catalogue, text)
    assert [str(e.name) for e in ops.symint] == ["view_copy"]
    view, frobnicate = sorted(ops.notices, key=lambda d: d.location.line)
    assert view.location.line == 7 and "symint entry view has no effect" in view.message
    assert "no kernel section" in view.message
    assert frobnicate.location.line == 8 and "unknown operator 'frobnicate'" in frobnicate.message
    twice = load(tmp_path, catalogue, text.replace("  - view\n", "  - view_copy\n"))
    assert [str(e.name) for e in twice.symint] == ["view_copy"]
    assert any("view_copy is listed twice in 'symint'" in d.message for d in twice.notices)


def test_any_identifier_opkind_is_accepted(tmp_path, catalogue):
    ops = load(
        tmp_path,
        catalogue,
        "backend: L\nnon_native:\n  - func: silu(Tensor x) -> Tensor\n    opkind: mybk_silu\n",
    )
    assert ops.non_native[0].opkind == "mybk_silu"
