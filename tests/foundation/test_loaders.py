"""Loaders: located errors for bad native_functions/tags files, and the default catalogue."""

from __future__ import annotations

import textwrap

import pytest

from lazygen.diagnostics import LazygenError
from lazygen.loaders.native_yaml import NativeSources, load_catalogue
from lazygen.model.schema import OperatorName

TAGS = "- tag: pointwise\n  desc: x\n- tag: core\n  desc: y\n"


def write(tmp_path, native: str, tags: str = TAGS) -> NativeSources:
    (tmp_path / "native_functions.yaml").write_text(textwrap.dedent(native))
    (tmp_path / "tags.yaml").write_text(tags)
    return NativeSources(tmp_path / "native_functions.yaml", tmp_path / "tags.yaml")


def errors_of(sources) -> list[str]:
    with pytest.raises(LazygenError) as info:
        load_catalogue(sources)
    return [str(d) for d in info.value.diagnostics]


def test_default_catalogue_has_autogen_variants():
    catalogue = load_catalogue()
    zero = catalogue[OperatorName("zero")]
    assert zero.generated and str(zero.func) == "zero(Tensor self) -> Tensor"
    assert OperatorName("add", "Tensor") in catalogue
    assert len(catalogue.overloads("add")) >= 4
    group = catalogue.group_of(catalogue[OperatorName("add", "Tensor")])
    assert str(group.inplace.name) == "add_.Tensor" and str(group.out.name) == "add.out"


def test_entries_keep_their_line(tmp_path):
    sources = write(
        tmp_path,
        """\
        - func: foo(Tensor self) -> Tensor
          tags: pointwise

        - func: bar(Tensor self) -> Tensor
        """,
    )
    catalogue = load_catalogue(sources)
    assert catalogue[OperatorName("bar")].location.line == 4
    assert catalogue[OperatorName("foo")].tags == frozenset({"pointwise"})


@pytest.mark.parametrize(
    "native, expected",
    [
        (
            "- func: foo(Tensor self) -> Tensor\n  func: bar() -> Tensor\n",
            ":2:3: error: YAML syntax error: duplicate key 'func'",
        ),
        (
            "- func: foo(Tensor self) -> Tensor\n- just a string\n",
            ":2: error: entry is not a mapping",
        ),
        ("- func: foo(Tensor self) -> Tensor\n  tags: shiny\n", ":1: error: unknown tag(s) shiny"),
        ("- func: foo(Tensor self -> Tensor\n", ":1: error: schema does not parse"),
        ("- func: foo(Tensor self) -> Tensor\n  colour: red\n", ":1: error: unknown key(s) colour"),
        (
            "- func: foo(Tensor self) -> Tensor\n- func: foo(Tensor self) -> Tensor\n",
            ":2: error: operator foo declared twice",
        ),
        ("- func: [unclosed\n", "error: YAML syntax error"),
        (
            "- func: foo(Tensor self) -> Tensor\n\t- func: bar() -> Tensor\n",
            ":2:1: error: tab character",
        ),
    ],
)
def test_bad_native_functions_give_located_errors(tmp_path, native, expected):
    errors = errors_of(write(tmp_path, native))
    assert any(expected in e and "native_functions.yaml" in e for e in errors), errors


def test_all_problems_are_reported_together(tmp_path):
    errors = errors_of(write(tmp_path, "- func: a(Tensor self) -> Tensor\n  tags: x\n- 3\n"))
    assert len(errors) == 2


def test_missing_files(tmp_path):
    missing = NativeSources(tmp_path / "nope.yaml", tmp_path / "tags.yaml")
    assert "native_functions.yaml not found" in errors_of(missing)[0]
    (tmp_path / "nf.yaml").write_text("- func: a() -> Tensor\n")
    no_tags = NativeSources(tmp_path / "nf.yaml", tmp_path / "missing-tags.yaml")
    assert "tags.yaml not found" in errors_of(no_tags)[0]


def test_bad_tags_file(tmp_path):
    errors = errors_of(write(tmp_path, "- func: a() -> Tensor\n", tags="- nottag: 1\n"))
    assert "tags.yaml:1: error: entry is not a tag (write '- tag: <name>')" in errors[0]
