"""Sphinx directives that render reference tables from lazygen's own code at build time.

* ``lazygen-env-table``: every environment variable, from ``lazygen.runtime.environment
  .VARIABLES`` (settings) and ``lazygen.runtime.process.EFFECTS`` (opt-outs of lazygen's
  changes to the process), as one table;
* ``lazygen-cli``: the ``lazygen`` command and each sub-command's ``--help``, from the
  argparse parser ``lazygen.cli.build_parser`` builds.

Generated, not written, so a renamed option or a new variable reaches the site with no
edit; the strict build fails if the code they read cannot be imported.
"""

from __future__ import annotations

import argparse
import os

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from lazygen.cli import build_parser
from lazygen.runtime import environment, process


def _inline(markdown: str) -> nodes.paragraph:
    """A paragraph of ``markdown``'s text, its `code` spans as literals (no other markup)."""
    paragraph = nodes.paragraph()
    for i, part in enumerate(markdown.split("`")):
        if part:
            paragraph += nodes.literal(text=part) if i % 2 else nodes.Text(part)
    return paragraph


def environment_rows() -> list[tuple[str, str, str, str]]:
    """(variable, default, effect, Python API) for every variable lazygen reads."""
    rows = [(v.name, v.default, v.effect, v.api) for v in environment.VARIABLES]
    for effect in process.EFFECTS:
        rows.append(
            (
                effect.variable,
                "1",
                f"`0` turns off the process effect `{effect.name}`: {effect.what} "
                f"(applied by {effect.applied_by})",
                "",
            )
        )
    return rows


class EnvironmentTable(SphinxDirective):
    """The table of environment variables (no arguments), built as docutils nodes: the
    page is MyST markdown, so generated reStructuredText would not be parsed as such."""

    HEADER = ("variable", "default", "effect", "same at run time")
    WIDTHS = (22, 12, 48, 18)

    def run(self) -> list[nodes.Node]:
        table = nodes.table(classes=["lazygen-env-table"])
        group = nodes.tgroup(cols=len(self.HEADER))
        table += group
        for width in self.WIDTHS:
            group += nodes.colspec(colwidth=width)
        head, body = nodes.thead(), nodes.tbody()
        head += self._row(self.HEADER, code_first=False)
        for row in environment_rows():
            body += self._row(row, code_first=True)
        group += head
        group += body
        return [table]

    @staticmethod
    def _row(cells, code_first: bool) -> nodes.row:
        row = nodes.row()
        for i, text in enumerate(cells):
            entry = nodes.entry()
            entry += _inline(f"`{text}`" if code_first and i == 0 else text)
            row += entry
        return row


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


class CommandLine(SphinxDirective):
    """``lazygen --help`` and every sub-command's help, as literal blocks (no arguments)."""

    def run(self) -> list[nodes.Node]:
        os.environ["COLUMNS"] = "90"  # argparse wraps to the terminal width
        parser = build_parser()
        result: list[nodes.Node] = [nodes.literal_block(text=parser.format_help().strip())]
        for name, sub in _subparsers(parser).items():
            section = nodes.section(ids=[f"lazygen-{name}"], names=[f"lazygen {name}"])
            section += nodes.title(text=f"lazygen {name}")
            section += nodes.literal_block(text=sub.format_help().strip())
            self.state.document.note_implicit_target(section)
            result.append(section)
        return result


def setup(app: Sphinx) -> dict[str, object]:
    """Register the directives (Sphinx's extension entry point)."""
    app.add_directive("lazygen-env-table", EnvironmentTable)
    app.add_directive("lazygen-cli", CommandLine)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
