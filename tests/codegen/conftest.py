"""Fixtures shared by the codegen tests: the `basic` golden case as a generation config."""

from __future__ import annotations

from pathlib import Path

import pytest

from lazygen.pipeline import GenConfig

REPO = Path(__file__).resolve().parents[2]
BASIC_CASE = REPO / "tests" / "golden" / "basic"


@pytest.fixture()
def config(tmp_path, monkeypatch) -> GenConfig:
    """Generate the `basic` golden case into a temporary directory."""
    monkeypatch.syspath_prepend(str(BASIC_CASE))
    return GenConfig(
        backend_yaml=BASIC_CASE / "backend.yaml",
        output_dir=tmp_path / "out",
        native_functions=BASIC_CASE / "native_functions.yaml",
        tags=BASIC_CASE / "tags.yaml",
        hand_written="golden_basic_hand_written",
    )
