"""`lazygen gen`: check mode, stamp skip, write-if-changed, ownership, hand-written checks."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from lazygen.cli import main
from lazygen.pipeline import STAMP, GenConfig, generate, run
from lazygen.render.writer import MARKER, plan_changes

REPO = Path(__file__).resolve().parents[2]
CASE = REPO / "tests" / "golden" / "basic"  # the case the `config` fixture generates


def test_repo_generated_is_current(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert main(["gen", "--check"]) == 0, capsys.readouterr().out


def test_write_then_skip_then_check(config):
    assert run(config).status == "written"
    assert run(config).status == "skipped"
    assert run(config, check=True).status == "skipped"
    (config.output_dir / STAMP).unlink()
    assert run(config, check=True).status == "current"


def test_check_reports_stale_with_diff(config, monkeypatch, capsys):
    run(config)
    target = config.output_dir / "kernels.py"
    target.write_text(target.read_text().replace("rt.count", "rt.bump", 1))
    result = run(config, check=True)
    assert result.status == "stale" and "rt.bump" in result.diff
    assert target.read_text().count("rt.bump") == 1  # --check never writes


def test_only_changed_files_written_and_stale_owned_removed(config):
    run(config)
    out = config.output_dir
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.py")}
    (out / "old_generated.py").write_text(f"# {MARKER} gone.py.jinja\n")
    (out / "mine.py").write_text("# hand-written, not ours\n")
    (out / STAMP).unlink()
    result = run(config)
    assert [c.action for c in result.changes] == ["remove"]
    assert not (out / "old_generated.py").exists() and (out / "mine.py").exists()
    after = {p.name: p.stat().st_mtime_ns for p in out.glob("*.py") if p.name != "mine.py"}
    assert after == before


def test_deterministic(config, tmp_path):
    first = generate(config).files
    second = generate(replace(config, output_dir=tmp_path / "elsewhere")).files
    assert first == second
    assert all(str(tmp_path) not in text for text in first.values())


def test_missing_shape_function_names_signature(config, tmp_path, monkeypatch):
    pkg = tmp_path / "hw_missing"
    shutil.copytree(CASE / "golden_basic_hand_written", pkg)
    (pkg / "shape_functions.py").write_text(
        "def compute_shape_glu_jvp(glu, x, dx, dim=1):\n    return []\n\n"
        "def compute_shape_topk(self):\n    return []\n"
    )
    (pkg / "kernels.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = generate(replace(config, hand_written="hw_missing"))
    messages = [str(d) for d in result.errors]
    assert any(
        "def compute_shape_index_tensor(self, indices) -> list[Shape]:" in m for m in messages
    )
    assert any("compute_shape_glu_jvp" in m and "does not match" in m for m in messages)
    assert any("clone" in m and "missing" in m for m in messages)
    assert any("compute_shape_topk" in d.message for d in result.warnings)
    for name in list(sys.modules):
        if name.startswith("hw_missing"):
            del sys.modules[name]


def test_cli_reports_user_errors_without_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("backend: X\nfull_codegen:\n  - not_an_op_anywhere\n")
    code = main(["gen", str(bad), "-o", str(tmp_path / "o"), "--no-check-hand-written"])
    err = capsys.readouterr().err
    assert code == 2 and "bad.yaml:3" in err and "Traceback" not in err


def test_template_override_dir_is_searched_first(config, tmp_path):
    override = tmp_path / "templates"
    override.mkdir()
    (override / "__init__.py.jinja").write_text(
        '{% import "_macros.jinja" as m %}\n{{ m.header(model.header) }}\nOVERRIDDEN = True\n'
    )
    files = generate(replace(config, templates=override)).files
    assert "OVERRIDDEN = True" in files["__init__.py"]


def test_plan_changes_ignores_unowned(tmp_path):
    (tmp_path / "x.py").write_text("print(1)\n")
    assert plan_changes(tmp_path, {}) == []
    assert os.path.exists(tmp_path / "x.py")


def test_a_view_in_full_codegen_is_left_out_with_a_warning(tmp_path):
    """torchgen generates a view's kernel; lazygen functionalizes views (the backend sees
    `view_copy`), so it leaves the view out, says so at its line, and generates the rest."""
    op_list = tmp_path / "views.yaml"
    op_list.write_text("backend: Lazy\nfull_codegen:\n  - abs\n  - view\n  - alias\n")
    result = generate(GenConfig(op_list, tmp_path / "out"))
    assert not result.errors
    view, alias = sorted(result.warnings, key=lambda w: w.location.line)
    assert (view.location.line, alias.location.line) == (4, 5)
    assert view.message.startswith("view is a view: left out") and "view_copy" in view.hint
    assert "alias_copy" in alias.hint
    assert "aten.view.default" not in result.files["registration.py"]
    assert "aten.abs.default: kernels.abs" in result.files["registration.py"]


def test_an_unchecked_package_is_reached_as_a_deferred_one(tmp_path):
    """Not imported at generation, the package may lack pieces: the registration leaves out
    what is missing when the backend imports instead of failing there."""
    op_list = tmp_path / "unchecked.yaml"
    op_list.write_text("backend: Lazy\nsupported:\n  - gelu\n")
    result = generate(GenConfig(op_list, tmp_path / "out", check_hand_written=False))
    registration = result.files["registration.py"]
    assert (
        'hand_written = deferred_module("lazygen.runtime.builtin.hand_written.kernels")'
        in registration
    )
    assert "KERNELS = present(" in registration
