"""Hand-written packages: import failures, signatures, hints, deferral; opkinds and
node properties that decide what must be written by hand."""

from __future__ import annotations

import inspect
import sys
import textwrap
from pathlib import Path

import pytest

from lazygen.lazy.hand_written import check_hand_written
from lazygen.lazy.meta import TorchFacts, has_torchscript_builtin
from lazygen.lazy.plan import Param, build_plan
from lazygen.lazy.signatures import kernel_mismatch
from lazygen.loaders.backend_yaml import load_backend
from lazygen.loaders.native_yaml import NativeSources, load_catalogue
from lazygen.pipeline import GenConfig, generate

SILU = (Param("self", False, None),)
ADD = (Param("self", False, None), Param("other", False, None), Param("alpha", True, "1"))


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


def _sig(source: str) -> inspect.Signature:
    namespace: dict = {}
    exec(source, namespace)  # noqa: S102 - test helper defining one function
    return inspect.signature(namespace["f"])


@pytest.mark.parametrize(
    "source, params, problem",
    [
        ("def f(self): pass", SILU, None),
        ("def f(x): pass", SILU, "parameter 1 is named 'x', the schema calls it 'self'"),
        ("def f(*args, **kwargs): pass", ADD, None),
        ("def f(self, other, *, alpha=1): pass", ADD, None),
        ("def f(self, other, alpha=1): pass", ADD, None),
        ("def f(self, other, *, alpha): pass", ADD, "'alpha' needs a default"),
        ("def f(self, other): pass", ADD, "has no parameter 'alpha'"),
        ("def f(self, other, *, alpha=1, beta): pass", ADD, "parameter 'beta' the schema"),
        ("def f(self, /): pass", SILU, None),
        ("def f(): pass", SILU, "takes 0 positional parameter(s), the schema has 1"),
    ],
)
def test_kernel_signature_rules(source, params, problem):
    found = kernel_mismatch(_sig(source), params)
    assert (found is None) if problem is None else (problem in found), found


def _package(root: Path, name: str, **modules: str) -> None:
    pkg = root / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for module, text in modules.items():
        (pkg / f"{module}.py").write_text(textwrap.dedent(text))


@pytest.fixture()
def plan_for(tmp_path, catalogue, monkeypatch):
    """Plan an op list text; hand-written packages written under tmp_path are importable."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)

    def plan(text: str):
        path = tmp_path / "backend.yaml"
        path.write_text(textwrap.dedent(text))
        result, errors, warnings = build_plan(
            load_backend(path, catalogue), catalogue, TorchFacts()
        )
        assert not errors, errors
        return result, warnings

    yield plan
    for name in set(sys.modules) - before:
        if name.startswith("hw_"):
            del sys.modules[name]


def test_import_failure_is_reported_at_its_line_not_as_missing_kernels(tmp_path, plan_for):
    _package(
        tmp_path, "hw_broken", kernels="def clone(self, *, memory_format=None):\n    pass\n1 / 0\n"
    )
    plan, _ = plan_for("backend: L\nsupported:\n  - clone\n")
    errors, _ = check_hand_written(plan, "hw_broken")
    (error,) = errors
    assert error.location.file.endswith("hw_broken/kernels.py") and error.location.line == 3
    assert "ZeroDivisionError" in error.message and "missing" not in error.message


def test_system_exit_at_import_is_reported_too(tmp_path, plan_for):
    _package(tmp_path, "hw_exit", kernels="import sys\nsys.exit(3)\n")
    plan, _ = plan_for("backend: L\nsupported:\n  - clone\n")
    (error,) = check_hand_written(plan, "hw_exit")[0]
    assert "SystemExit" in error.message and error.location.line == 2


def test_missing_package_is_one_error_deferred_to_a_warning(plan_for):
    plan, _ = plan_for("backend: L\nsupported:\n  - clone\n")
    (error,) = check_hand_written(plan, "hw_nowhere")[0]
    assert "cannot be found" in error.message
    errors, warnings = check_hand_written(plan, "hw_nowhere", defer=True)
    assert not errors and len(warnings) == 1


def test_missing_pieces_name_the_users_package_and_the_def_to_write(tmp_path, plan_for):
    _package(tmp_path, "hw_empty", kernels="")
    plan, _ = plan_for("backend: L\nsupported:\n  - add.Tensor\n")
    (error,) = check_hand_written(plan, "hw_empty")[0]
    assert error.location.line == 3
    assert "def add_tensor(self, other, *, alpha=1)" in error.hint
    assert "hw_empty.kernels" in error.hint
    errors, warnings = check_hand_written(plan, "hw_empty", defer=True)
    assert not errors and warnings[0].message == error.message


def test_builtin_package_is_never_offered_as_the_place_to_edit(plan_for):
    plan, _ = plan_for("backend: L\nsupported:\n  - silu\n")
    errors, warnings = check_hand_written(plan, "lazygen.runtime.builtin.hand_written")
    (error,) = errors
    assert "your own package" in error.hint and "--hand-written" in error.hint
    assert ".py" not in error.hint and not warnings


def test_wrong_kernel_signature_is_located_at_the_def(tmp_path, plan_for):
    _package(tmp_path, "hw_sig", kernels="\n\ndef silu(x):\n    return x\n")
    plan, _ = plan_for("backend: L\nsupported:\n  - silu\n")
    (error,) = check_hand_written(plan, "hw_sig")[0]
    assert error.location.file.endswith("hw_sig/kernels.py") and error.location.line == 3
    assert "named 'x'" in error.message and "def silu(self)" in error.hint


def test_lowering_signature_is_checked(tmp_path, plan_for):
    _package(tmp_path, "hw_low", lowerings="def lower_silu(n, c):\n    return []\n")
    plan, _ = plan_for(
        "backend: L\nnon_native:\n  - func: silu(Tensor input) -> Tensor\n    opkind: mybk_silu\n"
        "    properties: [ShapePrecompute]\n"
    )
    (error,) = check_hand_written(plan, "hw_low")[0]
    assert "takes (n, c), it must take (node, ctx)" in error.message


def test_opkind_without_namespace_needs_a_hand_written_lowering(tmp_path, plan_for):
    assert has_torchscript_builtin("mybk_silu", ("Tensor",)) is False  # was a RuntimeError
    plan, _ = plan_for(
        "backend: L\nnon_native:\n  - func: silu(Tensor input) -> Tensor\n    opkind: mybk_silu\n"
        "    properties: [ShapePrecompute]\n"
    )
    (lowering,) = plan.lowerings
    assert lowering.name == "lower_silu" and lowering.location.line == 3
    _package(tmp_path, "hw_nolow", lowerings="")
    (error,) = check_hand_written(plan, "hw_nolow")[0]
    assert "TorchScript has no builtin 'mybk_silu'" in error.hint
    assert "def lower_silu(node, ctx)" in error.hint


def test_create_fn_properties_are_honoured(tmp_path, monkeypatch):
    (tmp_path / "backend.yaml").write_text(textwrap.dedent("""\
            backend: L
            non_native:
              - func: made(Tensor input) -> Tensor
                opkind: aten::relu
                properties: [CreateFn, ShapePrecompute]
              - func: custom(Tensor input) -> Tensor
                opkind: aten::relu
                properties: [CreateFnDeclOnly, ShapePrecompute]
            """))
    _package(tmp_path, "hw_create", lowerings="")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        result = generate(
            GenConfig(tmp_path / "backend.yaml", tmp_path / "out", hand_written="hw_create"),
            torch_child=False,
        )
    finally:
        sys.modules.pop("hw_create", None)
        sys.modules.pop("hw_create.lowerings", None)
    text = result.files["non_native_ir.py"]
    assert "create = classmethod(make_node)" in text
    assert "create = classmethod(hand_written.create_custom)" in text
    (error,) = result.errors
    assert "create function create_custom for custom is missing" in error.message
    assert "def create_custom(cls, operands, attrs, shapes)" in error.hint


def test_skip_unknown_ops_of_the_running_torch(tmp_path):
    native = tmp_path / "native_functions.yaml"
    native.write_text(
        "- func: frobnicate(Tensor self) -> Tensor\n  variants: function\n"
        "- func: abs(Tensor self) -> Tensor\n"
    )
    (tmp_path / "backend.yaml").write_text("backend: L\nfull_codegen:\n  - frobnicate\n  - abs\n")
    config = GenConfig(
        tmp_path / "backend.yaml",
        tmp_path / "out",
        native_functions=native,
        tags=NativeSources.default().tags,
        check_hand_written=False,
        skip_unknown_ops=True,
    )
    result = generate(config, torch_child=False)
    assert result.counts["kernels"] == 1
    (warning,) = [w for w in result.warnings if "skipped" in w.message]
    assert "frobnicate (line 3)" in warning.message


def test_shape_compute_and_shape_cache_need_a_node_shape_function(tmp_path, plan_for):
    plan, _ = plan_for("""\
        backend: L
        non_native:
          - func: silu(Tensor input, int dim) -> Tensor
            opkind: aten::silu
            properties: [ShapeCompute]
          - func: gelu(Tensor input) -> Tensor
            opkind: aten::gelu
        """)
    assert [(h.name, h.params) for h in plan.node_shape_functions] == [
        ("compute_shape_gelu", ("input",)),
        ("compute_shape_silu", ("input", "dim")),
    ]
    _package(tmp_path, "hw_shapes", shape_functions="def compute_shape_silu(input, d):\n    pass\n")
    errors = [e for e in check_hand_written(plan, "hw_shapes")[0] if "shape" in e.message]
    errors.sort(key=lambda e: e.message)
    assert "compute_shape_gelu for gelu is missing" in errors[0].message
    assert "ShapeCache on gelu" in errors[0].hint
    assert "takes (input, d), it must take (input, dim)" in errors[1].message


def test_package_init_that_raises_is_one_located_error(tmp_path, plan_for):
    _package(tmp_path, "hw_init", kernels="def clone(self, *, memory_format=None):\n    pass\n")
    (tmp_path / "hw_init" / "__init__.py").write_text("import no_such_dependency_xyz\n")
    plan, _ = plan_for("backend: L\nsupported:\n  - clone\n")
    (error,) = check_hand_written(plan, "hw_init", defer=True)[0]
    assert error.location.file.endswith("hw_init/__init__.py") and error.location.line == 1
    assert "ModuleNotFoundError: No module named 'no_such_dependency_xyz'" in error.message
