"""Golden records: generate each tests/golden/<case>/ into a temp dir, compare with
`expected/`, then import the generated modules and exercise their classes.

Regenerate with `pytest tests/codegen --update-golden` (or LAZYGEN_UPDATE_GOLDEN=1).
"""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

from lazygen.pipeline import STAMP, GenConfig, run

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "backend.yaml").is_file())


def _config(case: Path, out: Path) -> GenConfig:
    return GenConfig(
        backend_yaml=case / "backend.yaml",
        output_dir=out,
        native_functions=case / "native_functions.yaml",
        tags=case / "tags.yaml",
        templates=case / "templates" if (case / "templates").is_dir() else None,
        hand_written=f"golden_{case.name}_hand_written",
    )


def _tree(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(root.glob("*.py"))}


@pytest.fixture(scope="module", params=CASES)
def generated(request, tmp_path_factory, update_golden):
    case = GOLDEN / request.param
    sys.path.insert(0, str(case))
    package = f"golden_{request.param}_generated"
    out = tmp_path_factory.mktemp(request.param) / package
    result = run(_config(case, out))  # raises LazygenError on any error
    assert result.status == "written"
    expected = case / "expected"
    if update_golden:
        shutil.rmtree(expected, ignore_errors=True)
        expected.mkdir()
        for name, text in _tree(out).items():
            (expected / name).write_text(text)
    yield case, out, package
    sys.path.remove(str(case))


def test_matches_expected_tree(generated):
    case, out, _ = generated
    assert (out / STAMP).is_file()
    actual, expected = _tree(out), _tree(case / "expected")
    assert sorted(actual) == sorted(expected)
    for name in expected:
        assert actual[name] == expected[name], f"{name} differs; run pytest --update-golden"


def test_output_is_black_fixed_point(generated):
    from lazygen.render.formatting import format_source

    _, out, _ = generated
    for name, text in _tree(out).items():
        assert format_source(text) == text, name


class _RecordingContext:
    """Stands in for LoweringContext: records the calls a node's lower() makes."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, method):
        def record(*args):
            self.calls.append((method, args))
            if method == "call":
                kind, positional, keywords, n = args
                return [f"{kind}#{i}" for i in range(n)]
            if method == "unpack_list":
                value, n = args
                return [f"{value}#{i}" for i in range(n)]
            return f"{method}{args}"

        return record


def test_generated_modules_import_and_instantiate(generated):
    pytest.importorskip("lazygen.runtime.ir")
    import torch

    from lazygen.runtime.ir import Node, Shape

    _, out, package = generated
    sys.path.insert(0, str(out.parent))
    try:
        registration = importlib.import_module(f"{package}.registration")
        kernels = importlib.import_module(f"{package}.kernels")
    finally:
        sys.path.remove(str(out.parent))
    assert registration.NODE_CLASSES
    for op_name, cls in registration.NODE_CLASSES.items():
        assert issubclass(cls, Node) and cls.op_name == op_name
        node = cls((), (), (Shape(torch.float32, (2,)),))
        assert node.op_kind and node.schema
    for fn in registration.KERNELS.values():
        assert callable(fn)
    assert hasattr(kernels, "add_tensor")


def test_lowering_calls(generated):
    pytest.importorskip("lazygen.runtime.ir")
    import torch

    from lazygen.runtime.ir import Shape, Value

    _, out, package = generated
    sys.path.insert(0, str(out.parent))
    try:
        ir = importlib.import_module(f"{package}.ir")
    finally:
        sys.path.remove(str(out.parent))
    shape = (Shape(torch.float32, (2,)),)
    base = ir.Selu((None,), (), shape)
    v = Value(base, 0)
    add = ir.AddTensor((v, v, v), (), shape)
    ctx = _RecordingContext()
    assert add.lower(ctx) == ["aten::add.Tensor#0"]
    assert [c[0] for c in ctx.calls] == ["tensor", "tensor", "scalar", "call"]
    positional, keywords = ctx.calls[-1][1][1:3]
    assert len(positional) == 2 and list(keywords) == ["alpha"]  # keyword-only by name
    split = ir.SplitCopyTensor((v, v), (0,), shape * 3)
    ctx = _RecordingContext()
    outputs = split.lower(ctx)
    assert ctx.calls[-1][0] == "unpack_list" and ctx.calls[-1][1][1] == 3
    assert len(outputs) == 3
    gen = Value(base, 0)  # stands in for the generator's GeneratorData value
    bern = ir.BernoulliP((v, gen), (0.5,), shape)
    ctx = _RecordingContext()
    bern.lower(ctx)
    # The Generator? argument is an operand: the graph's generator input, last.
    assert [c[0] for c in ctx.calls] == ["tensor", "constant", "generator", "call"]
    assert ctx.calls[2][1] == (gen,)


def test_shape_compute_nodes_and_create_fn(generated):
    """ShapeCompute/ShapeCache nodes built without shapes ask the hand-written
    `compute_shape_<node>`; given shapes win; CreateFn's `create` builds the node."""
    pytest.importorskip("lazygen.runtime.ir")
    import torch

    from lazygen.runtime.ir import Shape, Value

    case, out, package = generated
    if case.name != "basic":
        pytest.skip("the basic case has the ShapeCompute / CreateFn nodes")
    sys.path.insert(0, str(out.parent))
    try:
        nn = importlib.import_module(f"{package}.non_native_ir")
    finally:
        sys.path.remove(str(out.parent))
    source = nn.Scalar((), (1.5, torch.float64))
    assert source.shapes == (Shape(torch.float64, ()),)  # a list, kept as a tuple
    given = (Shape(torch.float32, (3,)),)
    assert nn.Scalar((), (1.5, torch.float64), given).shapes == given
    cast = nn.Cast(
        (Value(nn.Expand((Value(source, 0),), ((2, 3), False)), 0),), (torch.int32, None)
    )
    assert cast.shapes == (Shape(torch.int32, (2, 3)),)  # a tuple
    hash(cast)  # shapes are part of the node's hash
    made = nn.Expand.create((Value(source, 0),), ((4,), False), given)
    assert isinstance(made, nn.Expand) and made.shapes == given


def test_shape_function_returning_something_else_is_named(generated, monkeypatch):
    """A hand-written node shape function that returns neither a list nor a tuple of
    shapes fails at the node's construction, naming the function."""
    import torch

    case, out, package = generated
    if case.name != "basic":
        pytest.skip("the basic case has the ShapeCompute nodes")
    sys.path.insert(0, str(out.parent))
    try:
        nn = importlib.import_module(f"{package}.non_native_ir")
    finally:
        sys.path.remove(str(out.parent))
    from lazygen.runtime.ir import Shape

    def compute_shape_scalar(value, type):
        return Shape(type, ())  # one Shape, not a list of them

    monkeypatch.setattr(nn.hand_shapes, "compute_shape_scalar", compute_shape_scalar)
    with pytest.raises(TypeError, match=r"compute_shape_scalar returned Shape .*list or tuple"):
        nn.Scalar((), (1.5, torch.float64))
