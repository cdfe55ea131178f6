"""The one Jinja environment, used by `lazygen gen`, the build hook and the tests alike."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lazygen.lazy.defaults import double_quoted
from lazygen.render import layout

if TYPE_CHECKING:
    import jinja2

_PACKAGE = Path(__file__).resolve().parents[1]


def _builtin_templates() -> Path:
    """`templates/` sits at the top of a checkout, beside `generated/` and `yaml/`, and is
    installed inside the package as `lazygen/templates/` (setup.py maps it, as it maps
    `generated/`), so a wheel renders exactly what a checkout does. An editable install
    leaves the package in the checkout: the top-level folder is then the one found."""
    installed = _PACKAGE / "templates"
    return installed if installed.is_dir() else _PACKAGE.parent / "templates"


#: The directory of the built-in templates.
BUILTIN_TEMPLATES = _builtin_templates()


def _py_repr(value: object) -> str:
    """A Python literal; strings double-quoted as black prints them."""
    return double_quoted(value) if isinstance(value, str) else repr(value)


FILTERS = {
    "py": _py_repr,
    # Black's layout of statements (`lazygen.render.layout`).
    "signature": layout.signature,
    "args": layout.args,
    "tuple_display": layout.tuple_display,
    "list_display": layout.list_display,
    "dict_display": layout.dict_display,
    "layout": layout.layout,
    "assign": layout.assign,
    "unpack": layout.unpack,
}


def build_environment(override_dir: Path | None = None) -> jinja2.Environment:
    """Templates in `override_dir` (if given) shadow the built-in ones of the same name."""
    import jinja2  # here, so the input hash (which lists templates) need not import it

    loaders: list[jinja2.BaseLoader] = []
    if override_dir is not None:
        loaders.append(jinja2.FileSystemLoader(str(override_dir)))
    loaders.append(jinja2.FileSystemLoader(str(BUILTIN_TEMPLATES)))
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters.update(FILTERS)
    return env


def template_files(override_dir: Path | None = None) -> list[Path]:
    """Every template file that can affect the output (for the input hash)."""
    files = sorted(BUILTIN_TEMPLATES.glob("*.jinja"))
    if override_dir is not None:
        files += sorted(Path(override_dir).glob("*.jinja"))
    return files
