"""The built-in templates lay code out as black does, so `lazygen gen` never runs black on
them; `lazygen.render.layout` is checked against black itself at the line-length boundary."""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

import pytest

from lazygen.lazy.defaults import double_quoted
from lazygen.pipeline import GenConfig, generate
from lazygen.render import formatting
from lazygen.render.environment import build_environment
from lazygen.render.formatting import format_source
from lazygen.render.layout import (
    args,
    assign,
    dict_display,
    flat,
    layout,
    list_display,
    signature,
    tuple_display,
    unpack,
)

REPO = Path(__file__).resolve().parents[2]


def _check(code: str) -> None:
    assert format_source(code) == code, code


@pytest.mark.parametrize("width", range(80, 112, 3))
def test_layout_matches_black(width):
    names = [f"a{i}" * (width // 40 + 1) for i in range(width // 8)]
    for prefix, group, suffix in [
        ("return ctx.call", args(['"aten::x"', list_display(names), "1"]), ""),
        ("value = rt.f", args(names), ""),
        ("operands = ", tuple_display(names), ""),
        ("single = ", tuple_display(["y" * (width - 20)]), ""),
        ("keys = ", dict_display(f'"{n}": {n}' for n in names), ""),
        ("nested = rt.g", args([tuple_display(names), dict_display(names[:2]), "x=1"]), ""),
        ("empty = rt.h", args([]), ""),
        ("alone = ", tuple_display(["z"]), ""),
    ]:
        _check("def f():\n" + layout(group, "    ", prefix, suffix) + "\n")


@pytest.mark.parametrize("width", range(88, 112, 2))
def test_signature_unpack_and_assign_match_black(width):
    params = [f"p{i}" * 3 for i in range(width // 7)] + ["*", "flag=None", "size=(1, 2)"]
    names = [f"n{i}" * 4 for i in range(width // 11)]
    text = (
        layout(args(params), "", "def g", ":")
        + "\n"
        + unpack("self.operands", "    ", names)
        + "\n"
        + assign(double_quoted("s" * (width - 15)), "    ", "schema")
        + "\n    return 1\n"
    )
    _check(text)


@pytest.mark.parametrize("count", [2, 8, 14, 30])
def test_unpack_of_many_names_puts_them_one_a_line(count):
    names = [f"operand_{i}" for i in range(count)]
    text = "def f(self):\n" + unpack("self.operands", "    ", names) + "\n"
    _check(text)


def test_assign_leaves_a_value_too_long_for_any_line():
    value = double_quoted("s" * 120)
    assert assign(value, "    ", "schema") == f"    schema = {value}"


def test_flat_and_one_element_tuples():
    assert flat(tuple_display(["a"])) == "(a,)"
    assert flat(tuple_display([])) == "()"
    assert flat(args(["a"])) == "(a)"
    assert flat(args([list_display(["x", "y"]), dict_display(['"k": v'])])) == '([x, y], {"k": v})'
    assert layout("short", "  ", "x = ", ";") == "  x = short;"
    assert layout(args(["y" * 200]), "", "f") == "f(\n    " + "y" * 200 + ",\n)"


def test_signature_marks_keyword_only_once():
    p = namedtuple("p", "name keyword_only default")
    params = [p("a", False, None), p("b", True, "1"), p("c", True, None)]
    assert signature(params) == ("a", "*", "b=1", "c")
    assert signature([]) == ()


def test_layout_filters_render_from_templates():
    env = build_environment()
    text = env.from_string(
        '{{ names | args | layout("    ", "x = f") }}|{{ ["a"] | tuple_display | layout("", "t = ") }}'
    ).render(names=["a", "b"])
    assert text == "    x = f(a, b)|t = (a,)"


@pytest.mark.parametrize("width", [99, 100, 101, 120])
def test_long_dotted_dict_entry_is_left_as_black_leaves_it(width):
    key = "aten." + "k" * (width - 30) + ".default"
    value = "kernels." + "v" * (width - len(key) - 15)
    line = f"    {key}: {value},"
    assert len(line) == width
    code = f"KERNELS = {{\n{line}\n}}\n"
    _check(code)
    assert not formatting._needs_black(code)


def test_builtin_op_list_needs_no_black():
    generated = generate(GenConfig(REPO / "yaml" / "builtin.yaml", Path("unused")))
    for name, text in generated.files.items():
        _check(text)
        blocks = formatting._TOP_LEVEL.split(text)
        assert not any(formatting._needs_black(b) for b in blocks), name
