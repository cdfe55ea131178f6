"""Property-based: generated schemas round-trip; mutated schemas parse or fail cleanly."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lazygen.diagnostics import SchemaParseError
from lazygen.model.schema import FunctionSchema

BASES = [
    "Tensor",
    "Scalar",
    "ScalarType",
    "SymInt",
    "int",
    "float",
    "bool",
    "str",
    "Layout",
    "Device",
    "MemoryFormat",
    "Generator",
]
DEFAULTS = {
    "int": ["0", "-1", "100"],
    "float": ["1.0", "1e-05"],
    "bool": ["True", "False"],
    "str": ['"mean"', "'fro'"],
    "Scalar": ["1", "0.5"],
    "SymInt": ["0"],
}
identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


@st.composite
def types(draw):
    base = draw(st.sampled_from(BASES))
    text = base
    if draw(st.booleans()) and base in ("Tensor", "int", "SymInt", "float", "bool", "Scalar"):
        size = draw(st.sampled_from(["", "", "2", "3"]))
        text = f"{text}?[{size}]" if base == "Tensor" and draw(st.booleans()) else f"{text}[{size}]"
    if draw(st.booleans()):
        text += "?"
    return base, text


@st.composite
def arguments(draw, name):
    base, text = draw(types())
    annotation = ""
    if base == "Tensor" and "?" not in text and draw(st.booleans()):
        annotation = draw(st.sampled_from(["(a)", "(a!)", "(b -> *)"]))
    if annotation:
        text = "Tensor" + annotation + text[len("Tensor") :]
    default = ""
    if text.endswith("?") and draw(st.booleans()):
        default = "=None"
    elif text == base and base in DEFAULTS and draw(st.booleans()):
        default = "=" + draw(st.sampled_from(DEFAULTS[base]))
    return f"{text} {name}{default}"


@st.composite
def schemas(draw):
    names = draw(st.lists(identifiers, min_size=0, max_size=6, unique=True))
    args = [draw(arguments(n)) for n in names]
    if args and draw(st.booleans()):
        args.insert(draw(st.integers(0, len(args) - 1)), "*")
    op = draw(identifiers)
    overload = draw(st.one_of(st.just(""), identifiers.map(lambda s: "." + s)))
    returns = draw(
        st.sampled_from(
            [
                "Tensor",
                "()",
                "(Tensor, Tensor)",
                "Tensor[]",
                "(Tensor values, Tensor indices)",
                "Tensor(a)",
                "bool",
            ]
        )
    )
    return f"{op}{overload}({', '.join(args)}) -> {returns}"


@settings(max_examples=300, deadline=None)
@given(schemas())
def test_generated_schemas_round_trip(text):
    assert str(FunctionSchema.parse(text)) == text


@settings(max_examples=300, deadline=None)
@given(schemas(), st.data())
def test_mutated_schemas_parse_or_raise_parse_error(text, data):
    position = data.draw(st.integers(0, len(text)))
    junk = data.draw(
        st.sampled_from(
            ["(", ")", ",", "*", "?", "[", "]", "!", " ", "=", "->", "x", '"', "''", "|", ".", ""]
        )
    )
    cut = data.draw(st.integers(0, 3))
    mutated = text[:position] + junk + text[position + cut :]
    try:
        parsed = FunctionSchema.parse(mutated)
    except SchemaParseError:
        return
    assert str(parsed) == mutated
