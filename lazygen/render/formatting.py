"""Black formatting of generated modules, with the pinned black's Python API.

Templates lay code out the way black would, so black only has real work on top-level
blocks that contain a line longer than the limit. `format_module` therefore splits a module
into top-level blocks and runs `black.format_str` on the blocks that need it (most of the
cost of black is parsing, so this is several times faster than formatting whole files).
The result is checked by the test-suite to be a fixed point of black on the whole file,
so the output is exactly what `black` would print.
"""

from __future__ import annotations

import re

LINE_LENGTH = 100
_TOP_LEVEL = re.compile(r"\n\n\n(?=\S)")
#: Long lines black leaves alone: a lone string literal (docstrings), or one assigned to a
#: name (`schema = "..."`) when it would not fit on its own line in parentheses either;
#: black cannot split a string without its preview style.
_UNSPLITTABLE = re.compile(r'^(\s*)(\w+ = )?("""[^"]*"""|"[^"\\]*")$')
#: A dict entry of dotted names (`aten.x.default: kernels.x,` in registration.py): with no
#: brackets in it, black's stable style has nowhere to split it and leaves it long.
_DOTTED_ENTRY = re.compile(r"^\s*[\w.]+: [\w.]+,$")


class FormatError(ValueError):
    """A template produced text that is not valid Python."""


def _mode():
    import black

    return black.Mode(line_length=LINE_LENGTH, target_versions={black.TargetVersion.PY310})


def format_source(text: str) -> str:
    """Black on a whole text."""
    import black

    try:
        return black.format_str(text, mode=_mode())
    except black.parsing.InvalidInput as exc:
        raise FormatError(str(exc).splitlines()[0]) from None


def _unsplittable(line: str) -> bool:
    if _DOTTED_ENTRY.match(line):
        return True
    match = _UNSPLITTABLE.match(line)
    if match is None:
        return False
    indent, assigned, string = match.groups()
    return not assigned or len(indent) + 4 + len(string) > LINE_LENGTH


def _needs_black(block: str) -> bool:
    return any(len(line) > LINE_LENGTH and not _unsplittable(line) for line in block.split("\n"))


def format_module(text: str) -> str:
    """Black-format a generated module block by block (see the module docstring)."""
    blocks = _TOP_LEVEL.split(text)
    out = []
    for block in blocks:
        if _needs_black(block):
            block = format_source(block.strip("\n") + "\n").rstrip("\n")
        out.append(block.strip("\n"))
    return "\n\n\n".join(out) + "\n"


def format_all(sources: dict[str, str]) -> dict[str, str]:
    return {name: format_module(sources[name]) for name in sorted(sources)}
