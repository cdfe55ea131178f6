"""The fast path's shape-cache key inlines ``rt.shape_key`` for an argument's usual type
(``render.views._shape_key_expr``): every inlined expression must give what the call gives,
for every kind of value the argument may hold, or two calls that need different shapes
would share a cache entry."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from lazygen.lazy.arguments import ArgKind, LazyArgument
from lazygen.model.types import parse_type
from lazygen.render.views import _shape_key_expr
from lazygen.runtime.tracing.output_shapes import shape_key

VALUES = (0, 1, -3, 2**40, True, False, 0.0, -0.0, 1.5, math.nan, 2j, None, "mean", (1, 2))
CASES = [
    ("int", ArgKind.attribute, None),
    ("SymInt", ArgKind.symint, None),
    ("Scalar", ArgKind.scalar, None),
    ("Scalar", ArgKind.scalar, "1"),
    ("bool", ArgKind.attribute, None),
    ("int[]", ArgKind.attribute, None),
]


@pytest.mark.parametrize("value_dependent", [False, True])
@pytest.mark.parametrize("schema_type, kind, default", CASES)
def test_inlined_key_is_shape_keys_result(schema_type, kind, default, value_dependent):
    argument = LazyArgument("x", parse_type(schema_type), kind, False, default, 0)
    expression = _shape_key_expr(argument, value_dependent)
    rt = SimpleNamespace(shape_key=shape_key)
    for value in VALUES:
        got = eval(expression, {"rt": rt, "x": value})  # noqa: S307 - generated text
        expected = shape_key(value, value_dependent)
        assert type(got) is type(expected) and repr(got) == repr(expected), (value, expression)


def test_the_usual_types_skip_the_call():
    scalar = LazyArgument("alpha", parse_type("Scalar"), ArgKind.scalar, True, "1", 0)
    other = LazyArgument("other", parse_type("Scalar"), ArgKind.scalar, False, None, 0)
    dim = LazyArgument("dim", parse_type("int"), ArgKind.attribute, False, None, 0)
    assert _shape_key_expr(scalar, False).startswith("alpha if type(alpha) is int else")
    assert _shape_key_expr(other, False).startswith("float if type(other) is float else")
    assert _shape_key_expr(dim, False).startswith("dim if type(dim) is int else")
