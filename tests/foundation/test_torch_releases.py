"""The supported torch releases are stated once (``lazygen.torch_releases``); the package's
requirement and the scripts that install torch agree with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lazygen import torch_releases
from lazygen.torch_releases import SUPPORTED, release_of, tree_name, tree_release

REPO = Path(__file__).resolve().parents[2]


def test_pyproject_requires_the_supported_range():
    text = (REPO / "pyproject.toml").read_text()  # tomllib is Python 3.11+: read the line
    torch_requirements = re.findall(r'^\s*"(torch[^"]*)",', text, re.M)
    assert torch_requirements == [torch_releases.REQUIREMENT] == ["torch>=2.13,<2.15"]


def test_the_scripts_install_one_release_of_each_supported_minor():
    text = (REPO / "scripts" / "bootstrap.sh").read_text()
    installed = re.search(r'^SUPPORTED_TORCH="([^"]+)"', text, re.M)[1].split()
    default = re.search(r'^DEFAULT_TORCH="([^"]+)"', text, re.M)[1]
    assert sorted(release_of(v) for v in installed) == sorted(SUPPORTED)
    assert release_of(default) == torch_releases.PRIMARY and default in installed


@pytest.mark.parametrize(
    "version, release",
    [("2.13.0", (2, 13)), ("2.14.1+cu130", (2, 14)), ("2.15.0.dev20270101", (2, 15)), ("x", None)],
)
def test_release_of(version, release):
    assert release_of(version) == release


def test_tree_names_round_trip():
    for release in SUPPORTED:
        assert tree_release(tree_name(release)) == release
    assert tree_release("torch2_13x") is None and tree_release("generated") is None


def test_the_unsupported_message_names_the_range_and_the_fix():
    message = torch_releases.unsupported_message("2.12.1")
    assert "supports torch 2.13, 2.14 (torch>=2.13,<2.15)" in message
    assert "has torch 2.12.1" in message and "pip install 'torch>=2.13,<2.15'" in message
