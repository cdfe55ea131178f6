"""Fuzzing the backend op list: mutated files load or fail with a located LazygenError."""

from __future__ import annotations

import copy
import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import yaml
from lazygen.diagnostics import LazygenError
from lazygen.loaders.backend_yaml import load_backend
from lazygen.loaders.native_yaml import load_catalogue

VALID = {
    "backend": "Lazy",
    "cpp_namespace": "torch::lazy",
    "full_codegen": ["abs", "add.Tensor", "max.dim", "view_copy", "cat"],
    "ir_gen": ["selu"],
    "supported": ["clone", "empty.memory_format"],
    "autograd": ["max_pool3d"],
    "symint": ["view_copy", "empty.memory_format"],
    "non_native": [
        {
            "func": "cast(Tensor input, ScalarType dtype) -> Tensor",
            "opkind": "ltc_cast",
            "properties": ["ShapeCompute"],
        },
        {"func": "view(Tensor input, int[] output_size) -> Tensor"},
    ],
}
JUNK = st.one_of(
    st.none(),
    st.integers(),
    st.booleans(),
    st.text(max_size=12),
    st.lists(st.text(max_size=8), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


@functools.cache
def catalogue():
    return load_catalogue()


@st.composite
def mutated(draw):
    doc = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 4))):
        action = draw(
            st.sampled_from(
                [
                    "delete_key",
                    "rename_key",
                    "retype",
                    "dup_entry",
                    "delete_entry",
                    "rename_entry",
                    "junk_entry",
                ]
            )
        )
        key = draw(st.sampled_from(sorted(doc))) if doc else None
        if key is None:
            break
        value = doc[key]
        if action == "delete_key":
            del doc[key]
        elif action == "rename_key":
            doc[key + draw(st.sampled_from(["_", "s", "x"]))] = doc.pop(key)
        elif action == "retype":
            doc[key] = draw(JUNK)
        elif isinstance(value, list) and value:
            index = draw(st.integers(0, len(value) - 1))
            if action == "dup_entry":
                value.append(copy.deepcopy(value[index]))
            elif action == "delete_entry":
                value.pop(index)
            elif action == "rename_entry" and isinstance(value[index], str):
                value[index] = value[index] + draw(st.sampled_from(["x", ".foo", "_", ""]))
            elif action == "junk_entry":
                value[index] = draw(JUNK)
    return yaml.safe_dump(doc, sort_keys=draw(st.booleans()))


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=mutated())
def test_mutated_op_lists_load_or_fail_with_location(tmp_path, text):
    path = tmp_path / "backend.yaml"
    path.write_text(text)
    try:
        load_backend(path, catalogue())
    except LazygenError as exc:
        assert exc.diagnostics
        for diagnostic in exc.diagnostics:
            assert diagnostic.location is not None and diagnostic.location.file == str(path)
            assert diagnostic.hint, str(diagnostic)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_byte_mutations_of_an_op_list_never_crash(tmp_path, data):
    text = yaml.safe_dump(VALID)
    position = data.draw(st.integers(0, len(text)))
    insert = data.draw(
        st.sampled_from(
            [
                "\t",
                ":",
                "- ",
                "\n",
                "[",
                "{",
                "'",
                "*a",
                "&a ",
                "!!python/object:os.system ",
                "",
                "  ",
            ]
        )
    )
    cut = data.draw(st.integers(0, 4))
    path = tmp_path / "backend.yaml"
    path.write_text(text[:position] + insert + text[position + cut :])
    try:
        load_backend(path, catalogue())
    except LazygenError as exc:
        assert all(d.location is not None for d in exc.diagnostics)


def test_unsafe_yaml_tags_are_refused(tmp_path):
    path = tmp_path / "backend.yaml"
    path.write_text("backend: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(LazygenError) as info:
        load_backend(path, catalogue())
    assert "backend.yaml:1:" in str(info.value)
