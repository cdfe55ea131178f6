"""``lazygen.runtime.torch_compat``: an unsupported torch is refused at import with one
error naming the supported range; a package generated per release finds its tree."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lazygen.runtime import torch_compat

#: Imports the runtime under a torch that reports another version.
UNDER = """
import sys, torch
torch.__version__ = sys.argv[1]
import lazygen.runtime
"""


@pytest.mark.parametrize("version", ["2.12.0", "2.15.0"])
def test_importing_the_runtime_on_an_unsupported_torch_is_one_clear_error(version):
    run = subprocess.run(
        [sys.executable, "-c", UNDER, version], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last == (
        "lazygen.runtime.torch_compat.UnsupportedTorchError: lazygen supports torch 2.13, "
        f"2.14 (torch>=2.13,<2.15); this environment has torch {version}. Install a supported "
        "torch, e.g. `pip install 'torch>=2.13,<2.15'`."
    )
    assert run.stderr.count("Traceback") == 1, run.stderr  # one error, not a chain of them
    assert "During handling" not in run.stderr and "direct cause" not in run.stderr


def test_the_error_is_an_import_error():
    with pytest.raises(ImportError, match="supports torch 2.13, 2.14"):
        torch_compat.require_supported("3.0.0")


def test_a_package_without_the_installed_torchs_tree_says_which_it_has(tmp_path):
    (tmp_path / "torch1_0").mkdir()
    (tmp_path / "torch1_0" / "__init__.py").write_text("")
    with pytest.raises(torch_compat.UnsupportedTorchError) as caught:
        torch_compat.generated_tree(str(tmp_path / "__init__.py"), "mine.generated")
    assert "mine.generated holds generated code for torch 1.0, not for the installed" in str(
        caught.value
    )


def test_lazygens_own_generated_package_is_the_installed_torchs_tree():
    from lazygen.runtime.builtin.generated import registration

    assert (
        registration.__file__.split("/")[-2] == f"torch{'_'.join(map(str, torch_compat.RELEASE))}"
    )
