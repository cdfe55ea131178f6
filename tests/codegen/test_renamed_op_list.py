"""The built-in op list was renamed `builtin` everywhere (file, generated package,
hand-written package): an old command line or module name fails naming the new one."""

from __future__ import annotations

import pytest

from lazygen.cli import main
from lazygen.runtime import KernelTables, LazygenRuntimeError


@pytest.mark.parametrize("command", ["gen", "validate"])
def test_old_op_list_path_names_the_new_one(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    code = main([command, "yaml/ts_backend.yaml"])
    err = capsys.readouterr().err
    assert code == 2
    assert "ts_backend.yaml was renamed builtin.yaml" in err
    assert "known until lazygen 0.2.0" in err
    assert "use yaml/builtin.yaml" in err


def test_ops_backend_with_the_old_path_names_the_new_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["ops", "--backend", "yaml/ts_backend.yaml"])
    assert code == 2
    assert "use yaml/builtin.yaml" in capsys.readouterr().err


def test_an_existing_file_with_the_old_name_is_read(tmp_path, capsys):
    """Only a missing file gets the rename error: a user's own list may be so named."""
    own = tmp_path / "ts_backend.yaml"
    own.write_text("backend: Mine\nfull_codegen:\n  - abs\n")
    code = main(["validate", str(own), "--no-check-hand-written"])
    assert code == 0, capsys.readouterr().err


def test_old_hand_written_package_names_the_new_one(capsys):
    code = main(["validate", "--hand-written", "lazygen.runtime.builtin"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--hand-written lazygen.runtime.builtin.hand_written" in err


def test_old_generated_module_names_the_new_one():
    with pytest.raises(LazygenRuntimeError, match=r"lazygen\.runtime\.builtin\.generated"):
        KernelTables.from_module("lazygen.generated.ts_backend.registration")


def test_tables_from_an_imported_registration():
    from lazygen.runtime.builtin.generated import registration

    tables = KernelTables.from_module(registration)
    assert tables.kernels == registration.KERNELS
    with pytest.raises(LazygenRuntimeError, match="no KERNELS nor NODE_CLASSES"):
        KernelTables.from_module(pytest)
