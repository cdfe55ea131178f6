"""Shared pytest options. `--update-golden` (or LAZYGEN_UPDATE_GOLDEN=1) rewrites the
expected trees under tests/golden/ instead of comparing with them."""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="regenerate tests/golden/*/expected instead of comparing",
    )


@pytest.fixture(scope="session")
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden")) or os.environ.get(
        "LAZYGEN_UPDATE_GOLDEN", ""
    ) not in ("", "0")
