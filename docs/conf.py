"""Sphinx configuration of lazygen's documentation site.

The site is MyST markdown (the pages stay readable as plain files on a code host) plus
reference pages generated from the code at build time: autodoc for the Python API, and
the local ``lazygen_docs`` extension for the environment-variable table and the CLI, so
that a renamed setting or option shows up without editing a page. The build is strict
(``-W --keep-going -n``), run by ``tests/docs/test_docs_build.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "lazygen"
author = "the lazygen developers"
copyright = "the lazygen developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "lazygen_docs",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "**/.ipynb_checkpoints"]

# MyST: headings get anchors (``page.md#a-heading`` links), ``:::`` fences for notes.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence", "deflist"]

# The API as written: members in source order, signatures without the long type unions.
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# Nitpicky mode checks every cross-reference; names of other projects (torch, the standard
# library's typing helpers) cannot resolve offline (no intersphinx inventories), so they
# are the only ones let through.
nitpicky = True
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(torch|typing|collections|types|enum|pathlib|argparse|numpy|jax|os|setuptools|importlib)(\..*)?",
    ),
    (r"py:.*", r"(Any|Callable|Iterable|Iterator|Sequence|Mapping|Path|Tensor|Self|Distribution)"),
    (r"py:.*", r"(int|float|str|bool|bytes|None|dict|list|tuple|set|frozenset|object|type)"),
    (r"py:.*", r"(Exception|RuntimeError|ValueError|TypeError|Warning|UserWarning)"),
    (r"py:.*", r"(optional|callable)"),
]

html_theme = "alabaster"
html_title = "lazygen"
html_static_path: list[str] = []
