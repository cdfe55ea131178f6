"""`lazygen.runtime.deferred`: how a backend generated with --defer-hand-written reaches
its hand-written modules, so that it imports and runs while pieces are missing."""

from __future__ import annotations

import sys
import textwrap

import pytest

from lazygen.runtime.deferred import (
    MissingHandWritten,
    MissingHandWrittenError,
    deferred_module,
    present,
)
from lazygen.runtime.errors import LazygenRuntimeError


@pytest.fixture()
def package(tmp_path, monkeypatch):
    """`deferred_pkg` with a `kernels` module defining `relu` only, and a broken module."""
    root = tmp_path / "deferred_pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "kernels.py").write_text("def relu(self):\n    return 'written'\n")
    (root / "broken.py").write_text(textwrap.dedent("""
            import deferred_pkg_dependency_that_is_not_there
            """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "deferred_pkg"
    for name in [n for n in sys.modules if n.startswith("deferred_pkg")]:
        del sys.modules[name]


def test_written_pieces_are_the_module_s_own(package):
    kernels = deferred_module(f"{package}.kernels")
    assert kernels.relu(None) == "written"


def test_a_missing_piece_raises_what_to_do_when_called(package):
    stub = deferred_module(f"{package}.kernels").gelu
    assert isinstance(stub, MissingHandWritten)
    with pytest.raises(MissingHandWrittenError) as info:
        stub(1, approximate="tanh")
    message = str(info.value)
    assert f"{package}.kernels.gelu is not written" in message
    assert "--defer-hand-written" in message and "lazygen gen" in message
    assert isinstance(info.value, LazygenRuntimeError)


@pytest.mark.parametrize("module", ["shape_functions", "lowerings"])
def test_a_module_or_package_that_does_not_exist_is_empty(package, module):
    assert isinstance(deferred_module(f"{package}.{module}").x, MissingHandWritten)
    absent = deferred_module(f"no_such_package_here.{module}")
    assert isinstance(absent.lower_x, MissingHandWritten)


def test_a_broken_module_raises_its_own_error(package):
    with pytest.raises(ModuleNotFoundError, match="deferred_pkg_dependency_that_is_not_there"):
        deferred_module(f"{package}.broken").anything  # noqa: B018 - the read is the test


def test_present_leaves_unwritten_kernels_out(package):
    kernels = deferred_module(f"{package}.kernels")
    table = present({"relu": kernels.relu, "gelu": kernels.gelu, "abs": abs})
    assert list(table) == ["relu", "abs"]


def test_protocol_probes_are_not_pieces(package):
    kernels = deferred_module(f"{package}.kernels")
    assert not hasattr(kernels, "__wrapped__")
    # ... but kernels of dunder ops are (torch_xla's `__ilshift__.Scalar`)
    assert isinstance(kernels.__ilshift___scalar, MissingHandWritten)
