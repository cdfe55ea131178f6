"""Schema default values (`int[2] stride=1`, `int reduction=Mean`) as Python source text.

Generated kernels use the schema's defaults as Python defaults. Lists become tuples (no
mutable defaults, and attributes are tuples anyway); a fixed-size list given one value is
expanded, as ATen does. A `float` default written as an integer (`float p=2`) becomes a
Python float: the dispatcher leaves defaults out of the arguments it passes, so the
kernel's default is what reaches the node, and TorchScript has no overload taking an int
where the schema says float. Unknown default spellings are reported, never guessed.
"""

from __future__ import annotations

import ast
import re

from lazygen.model.types import BaseTy, ListType, OptionalType, Type

#: Named constants that appear as schema defaults.
_NAMED = {
    "None": "None",
    "True": "True",
    "False": "False",
    "Mean": "1",  # at::Reduction::Mean
    "Sum": "2",
    "contiguous_format": "torch.contiguous_format",
    "preserve_format": "torch.preserve_format",
    "channels_last": "torch.channels_last",
    "strided": "torch.strided",
    "long": "torch.int64",
    "int": "torch.int32",
    "float": "torch.float32",
    "double": "torch.float64",
    "bool": "torch.bool",
}


class UnsupportedDefault(ValueError):
    """A default the generator does not know how to write in Python."""


def python_default(t: Type, text: str) -> str:
    """The Python expression for default `text` of an argument of type `t`."""
    if text in _NAMED:
        return _NAMED[text]
    inner = t.elem if isinstance(t, OptionalType) else t
    if isinstance(inner, ListType):
        return _list_default(inner, text)
    if inner.base().name is BaseTy.str:
        return double_quoted(_literal(text))
    return repr(_typed(inner, _literal(text)))


def _typed(t: Type, value):
    """`value` as the Python type an argument of type `t` has (`float p=2` -> 2.0)."""
    if t.base().name is BaseTy.float and type(value) is int:
        return float(value)
    return value


def double_quoted(value: str) -> str:
    """A string literal as black prints it: `repr`, then black's quote normalisation
    (double quotes unless they need more escapes than single quotes)."""
    text = repr(value)
    if text.startswith('"'):
        return text  # repr chose double quotes: the value has ' and no "
    body = text[1:-1]
    new_body = _sub_twice(_ESCAPED_SINGLE, r"\1\2'", body)
    new_body = _sub_twice(_UNESCAPED_DOUBLE, r'\1\\"', new_body)
    if new_body.count("\\") > body.count("\\"):
        return text
    return f'"{new_body}"'


_ESCAPED_SINGLE = re.compile(r"([^\\]|^)\\((?:\\\\)*)'")
_UNESCAPED_DOUBLE = re.compile(r'(([^\\]|^)(\\\\)*)"')


def _sub_twice(regex: re.Pattern[str], replacement: str, text: str) -> str:
    """`regex.sub` applied twice: matches may overlap (black's `sub_twice`)."""
    return regex.sub(replacement, regex.sub(replacement, text))


def _list_default(t: ListType, text: str) -> str:
    if text.startswith("["):
        items = _literal(text)
        if not isinstance(items, list):
            raise UnsupportedDefault(f"list default {text!r}")
        return repr(tuple(_typed(t.elem, v) for v in items))
    value = _typed(t.elem, _literal(text))
    if t.size is None:
        raise UnsupportedDefault(f"scalar default {text!r} for unsized list {t}")
    return repr((value,) * t.size)


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise UnsupportedDefault(f"default {text!r}") from None
