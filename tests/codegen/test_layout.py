"""The built-in templates lay code out as black does, so `lazygen gen` never runs black on
them; the layout macros are checked against black itself at the line-length boundary."""

from __future__ import annotations

from pathlib import Path

import pytest

from lazygen.gen import GenConfig, generate
from lazygen.lazy.defaults import double_quoted
from lazygen.render import formatting
from lazygen.render.environment import build_environment
from lazygen.render.formatting import format_source

REPO = Path(__file__).resolve().parents[2]


def _render(source: str, **values) -> str:
    env = build_environment()
    return env.from_string('{% import "_macros.jinja" as m %}' + source).render(**values)


def _check(code: str) -> None:
    assert format_source(code) == code, code


@pytest.mark.parametrize("width", range(80, 112, 3))
def test_statement_matches_black(width):
    names = [f"a{i}" * (width // 40 + 1) for i in range(width // 8)]
    nested = {"head": "[", "parts": names, "tail": "]", "display": True}
    for prefix, group, suffix in [
        ("return ctx.call", {"head": "(", "parts": ['"aten::x"', nested, "1"], "tail": ")"}, ""),
        ("value = rt.f", {"head": "(", "parts": names, "tail": ")"}, ""),
        ("operands = ", {"head": "(", "parts": names, "tail": ")", "display": True}, ""),
        (
            "single = ",
            {"head": "(", "parts": ["y" * (width - 20)], "tail": ")", "display": True},
            "",
        ),
        (
            "keys = ",
            {"head": "{", "parts": [f'"{n}": {n}' for n in names], "tail": "}", "display": True},
            "",
        ),
    ]:
        body = _render(
            "def f():\n{{ m.statement('    ', prefix, group, suffix) }}\n",
            prefix=prefix,
            group=group,
            suffix=suffix,
        )
        _check(body)


@pytest.mark.parametrize("width", range(88, 112, 2))
def test_signature_unpack_and_assign_match_black(width):
    params = [f"p{i}" * 3 for i in range(width // 7)] + ["*", "flag=None", "size=(1, 2)"]
    names = [f"n{i}" * 4 for i in range(width // 11)]
    text = _render(
        "{{ m.statement('', 'def g', {'head': '(', 'parts': params, 'tail': ')'}, ':') }}\n"
        "{{ m.unpack('    ', names, 'self.operands') }}\n"
        "{{ m.assign('    ', 'schema', value) }}\n"
        "    return 1\n",
        params=params,
        names=names,
        value=double_quoted("s" * (width - 15)),
    )
    _check(text)


@pytest.mark.parametrize("width", [99, 100, 101, 120])
def test_long_dotted_dict_entry_is_left_as_black_leaves_it(width):
    key = "aten." + "k" * (width - 30) + ".default"
    value = "kernels." + "v" * (width - len(key) - 15)
    line = f"    {key}: {value},"
    assert len(line) == width
    code = f"KERNELS = {{\n{line}\n}}\n"
    _check(code)
    assert not formatting._needs_black(code)


def test_ts_backend_needs_no_black():
    generated = generate(GenConfig(REPO / "yaml" / "ts_backend.yaml", Path("unused")))
    for name, text in generated.files.items():
        _check(text)
        blocks = formatting._TOP_LEVEL.split(text)
        assert not any(formatting._needs_black(b) for b in blocks), name
