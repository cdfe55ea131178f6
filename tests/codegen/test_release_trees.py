"""Generated code kept per torch release (`lazygen.release_trees`): the installed torch's
tree is written and checked exactly, the others through their provenance; the package's
``__init__`` makes it the installed torch's tree at import."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from lazygen import release_trees
from lazygen.cli import main
from lazygen.diagnostics import LazygenError
from lazygen.torch_releases import PRIMARY, SUPPORTED, release_of, tree_name

REPO = Path(__file__).resolve().parents[2]
INSTALLED = release_of(torch.__version__)
OTHERS = [r for r in SUPPORTED if r != INSTALLED]


@pytest.fixture()
def per_release(config):
    return replace(
        config, output_dir=config.output_dir.parent / "generated", per_torch_release=True
    )


def _fake_tree(root: Path, release: tuple[int, int], beside: dict[str, str]) -> Path:
    """Another release's tree, as its torch would have written it (a copy of this one)."""
    tree = root / tree_name(release)
    shutil.copytree(root / tree_name(INSTALLED), tree)
    text = (tree / "provenance.py").read_text().split("BESIDE")[0]
    (tree / "provenance.py").write_text(text + f"BESIDE = {beside!r}\n")
    return tree


def test_writes_the_installed_trees_and_the_selector(per_release):
    result = release_trees.run(per_release)
    root = per_release.output_dir
    assert result.status == "written"
    assert (root / tree_name(INSTALLED) / "kernels.py").is_file()
    assert "torch_compat.generated_tree" in (root / "__init__.py").read_text()
    assert not list(root.glob("kernels.py"))
    missing = [str(w) for w in result.warnings]
    assert all(f"no generated tree for torch {r[0]}.{r[1]}" in "".join(missing) for r in OTHERS)
    assert release_trees.run(per_release).status == "skipped"


def test_check_fails_until_every_supported_release_has_a_tree(per_release):
    release_trees.run(per_release)
    root = per_release.output_dir
    assert release_trees.run(per_release, check=True).status == "stale"  # no tree for the others
    primary_digest = release_trees.tree_digest(root / tree_name(PRIMARY))
    for release in OTHERS:
        beside = {} if release == PRIMARY else {tree_name(PRIMARY): primary_digest}
        _fake_tree(root, release, beside)
    # Regenerated beside them (a tree other than the primary records the primary's digest).
    release_trees.run(per_release)
    assert release_trees.run(per_release, check=True).status == "current"


@pytest.mark.skipif(
    INSTALLED != PRIMARY, reason="the primary release's environment checks the others"
)
def test_a_tree_generated_beside_another_primary_tree_is_stale(per_release):
    release_trees.run(per_release)
    root = per_release.output_dir
    for release in OTHERS:
        _fake_tree(root, release, {tree_name(PRIMARY): "sha256:an-older-primary-tree"})
    result = release_trees.run(per_release, check=True)
    assert result.status == "stale"
    text = "\n".join(str(w) for w in result.warnings)
    assert f"generated beside another {tree_name(PRIMARY)}/" in text
    assert "run `lazygen gen` in an environment with torch" in text


def test_a_tree_for_an_unsupported_release_is_reported(per_release):
    release_trees.run(per_release)
    (per_release.output_dir / "torch1_9").mkdir()
    result = release_trees.run(per_release, check=True)
    assert any("does not support" in str(w) and "torch1_9" in str(w) for w in result.warnings)


def test_an_unsupported_torch_cannot_generate_a_tree(per_release, monkeypatch):
    monkeypatch.setattr(release_trees, "installed_torch_version", lambda: "2.12.0")
    with pytest.raises(LazygenError) as caught:
        release_trees.run(per_release)
    assert (
        "supports torch 2.13, 2.14 (torch>=2.13,<2.15); this environment has torch 2.12.0"
        in str(caught.value.diagnostics[0])
    )


def test_the_cli_lays_out_per_release_by_flag_then_by_what_is_there(per_release, capsys):
    args = [str(per_release.backend_yaml), "-o", str(per_release.output_dir)]
    args += ["--native-functions", str(per_release.native_functions)]
    args += ["--tags", str(per_release.tags), "--hand-written", per_release.hand_written]
    assert main(["gen", *args, "--per-torch-release"]) == 0
    assert (per_release.output_dir / tree_name(INSTALLED) / "ir.py").is_file()
    code = main(["gen", *args, "--check"])  # the layout is found: no flag needed
    out = capsys.readouterr()
    assert code == (1 if OTHERS else 0), out
    assert "no generated tree for torch" in out.err


def test_the_package_is_the_installed_torchs_tree(per_release, tmp_path):
    """Imported under its own name, the package's modules come from the installed tree."""
    package = tmp_path / "site" / "mine"
    per_release = replace(per_release, output_dir=package / "generated")
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    release_trees.run(per_release)
    code = (
        "import mine.generated.registration as r, mine.generated as g\n"
        "print(r.__file__); print(r.__name__)\n"
    )
    paths = [str(tmp_path / "site"), str(REPO / "tests" / "golden" / "basic")]
    env = {"PYTHONPATH": ":".join(paths), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    file, name = out.stdout.split()
    assert Path(file).parent.name == tree_name(INSTALLED) and name == "mine.generated.registration"


def test_lazygens_own_trees_cover_every_supported_release():
    root = REPO / "generated" / "builtin"
    assert sorted(p.name for p in root.glob("torch*_*")) == sorted(map(tree_name, SUPPORTED))
    for release in SUPPORTED:
        if release != PRIMARY:
            beside = release_trees.recorded_beside(root / tree_name(release))
            assert beside == {
                tree_name(PRIMARY): release_trees.tree_digest(root / tree_name(PRIMARY))
            }
