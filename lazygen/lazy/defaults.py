"""Schema default values (`int[2] stride=1`, `int reduction=Mean`) as Python source text.

Generated kernels use the schema's defaults as Python defaults. Lists become tuples (no
mutable defaults, and attributes are tuples anyway); a fixed-size list given one value is
expanded, as ATen does. Unknown default spellings are reported, never guessed.
"""

from __future__ import annotations

import ast

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
    return repr(_literal(text))


def double_quoted(value: str) -> str:
    """A string literal as black prints it (double quotes unless that needs escapes)."""
    text = repr(value)
    if text.startswith("'") and '"' not in value:
        text = '"' + text[1:-1].replace("\\'", "'") + '"'
    return text


def _list_default(t: ListType, text: str) -> str:
    if text.startswith("["):
        items = _literal(text)
        if not isinstance(items, list):
            raise UnsupportedDefault(f"list default {text!r}")
        return repr(tuple(items))
    value = _literal(text)
    if t.size is None:
        raise UnsupportedDefault(f"scalar default {text!r} for unsized list {t}")
    return repr((value,) * t.size)


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise UnsupportedDefault(f"default {text!r}") from None
