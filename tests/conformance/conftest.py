"""The test backends of ``tests/support/backend_sites.py``, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.backend_sites import build_site


@pytest.fixture(scope="session")
def backend_site(tmp_path_factory) -> Path:
    """A site directory holding the ``fourop`` and ``crashing`` backends (put it on the
    workers' ``PYTHONPATH``)."""
    return build_site(tmp_path_factory.mktemp("conformance_site"))
