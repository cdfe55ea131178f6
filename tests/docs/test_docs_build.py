"""The documentation site builds strictly: any Sphinx warning (a broken link or reference,
a docstring that does not parse, a missing page) fails the test, as in CI.

Generated reference pages are checked for what they are generated from: every public name
of ``lazygen.runtime.__all__`` (bar the sub-modules, documented by their own sections) and
every environment variable of ``environment.VARIABLES`` and ``process.EFFECTS`` appears.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import lazygen.runtime as lr
from lazygen.runtime import environment, process

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("sphinx", reason="the docs extra is not installed (pip install -e .[docs])")
pytest.importorskip(
    "myst_parser", reason="the docs extra is not installed (pip install -e .[docs])"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html",
         "-d", str(out / ".doctrees"), str(ROOT / "docs"), str(out)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, (
        "the docs build failed (fix every warning; run `python -m sphinx -W --keep-going -n "
        f"-b html docs docs/_build/html` to see them):\n{result.stderr[-6000:]}"
    )
    return out


def test_the_site_builds_strictly(site):
    assert (site / "index.html").is_file()
    for page in ("tutorials/lazy-device", "guides/diagnostics", "guides/checkpoints",
                 "reference/runtime", "reference/cli", "architecture", "benchmarks"):  # fmt: skip
        assert (site / f"{page}.html").is_file(), page


def test_the_api_reference_names_every_public_function(site):
    text = (site / "reference" / "runtime.html").read_text()
    modules = {"config", "debug", "devices", "distributed", "ir_cache", "metrics", "state"}
    missing = [n for n in lr.__all__ if n not in modules and f"lazygen.runtime.{n}" not in text]
    backend_page = (site / "reference" / "backend.html").read_text()
    missing = [n for n in missing if f"lazygen.runtime.{n}" not in backend_page]
    assert not missing, f"add these to docs/reference/runtime.md: {missing}"
    for name in ("counter_value", "counter_names", "metric_data", "fallback_report", "report"):
        assert f"lazygen.runtime.metrics.{name}" in text, name


def test_the_environment_table_lists_every_variable(site):
    text = (site / "reference" / "environment.html").read_text()
    assert 'class="lazygen-env-table' in text  # a table, not its source as text
    table = text[text.index('class="lazygen-env-table') :]
    names = [v.name for v in environment.VARIABLES] + [e.variable for e in process.EFFECTS]
    assert [n for n in names if f'<span class="pre">{n}</span>' not in table] == []


def test_the_cli_page_shows_every_command(site):
    from lazygen.cli import COMMANDS

    text = (site / "reference" / "cli.html").read_text()
    assert [c for c in COMMANDS if f"lazygen {c}" not in text] == []


def test_readme_links_resolve():
    """The README is not part of the site (Sphinx does not check it): its relative links
    must name files of the repository, and its anchors headings of the page."""
    readme = (ROOT / "README.md").read_text()
    broken = []
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme):
        if "://" not in target and not (ROOT / target).exists():
            broken.append(target)
    assert not broken, broken
    assert len(readme.splitlines()) <= 150, "the README stays short: move details to docs/"
