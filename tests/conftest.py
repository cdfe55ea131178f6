"""Shared pytest options.

* `--update-golden` (or LAZYGEN_UPDATE_GOLDEN=1) rewrites tests/golden/*/expected;
* `--update-baseline` (or LAZYGEN_UPDATE_BASELINE=1) rewrites the OpInfo conformance
  baseline;
* tests marked `slow` run only with `--slow`, LAZYGEN_SLOW=1 or CI=true, so the default
  local run stays fast while CI runs everything;
* tests marked `gpu` are skipped where CUDA is not available;
* `multiprocess` marks tests that start several processes (select with `-m`).

* hermetic caches: the session's on-disk caches (Inductor's code and FX graph caches, with
  lazygen's fixed-scalar file beside them, Triton's, and anything else under
  ``XDG_CACHE_HOME``) live in one new directory of its own, shared by its workers and child
  processes and removed at the end, so no result depends on what an earlier run left on
  the machine; lazygen's persistent caches (``LAZYGEN_CACHE_DIR``) live there too, with
  its store of compiled graphs off (``LAZYGEN_GRAPH_CACHE=0`` unless set: a test that
  changes a backend's lowering or compile must see them run) and its store of output
  shapes off (``LAZYGEN_SHAPE_CACHE=0`` unless set: a test of shape inference must see it
  run). A test of caching across
  processes makes and shares its own directory;
* no recompile budget (``LAZYGEN_RECOMPILE_LIMIT=0`` unless set): suites sweep shapes and
  attributes of one op or model, and each variant must be compiled and checked, never run
  uncompiled past the budget; the budget's own tests set it
  (tests/runtime/graph/test_recompile_budget.py).

tests/README.md says where a test goes.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("LAZYGEN_RECOMPILE_LIMIT", "0")  # before lazygen reads its settings
os.environ.setdefault("LAZYGEN_GRAPH_CACHE", "0")
os.environ.setdefault("LAZYGEN_SHAPE_CACHE", "0")

#: Cache variables pointed into the session's own directory (see the docstring).
_CACHE_VARIABLES = {
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
    "TRITON_CACHE_DIR": "triton",
    "XDG_CACHE_HOME": "home-cache",
    "LAZYGEN_CACHE_DIR": "lazygen",
}


def _hermetic_caches() -> None:
    """Point the caches into a new directory, once per test session: the first process
    (pytest's, or xdist's controller) makes it and removes it at exit; its workers and
    child processes inherit the variables."""
    if os.environ.get("LAZYGEN_TEST_CACHE_ROOT"):
        return
    root = tempfile.mkdtemp(prefix="lazygen-test-caches-")
    os.environ["LAZYGEN_TEST_CACHE_ROOT"] = root
    for variable, folder in _CACHE_VARIABLES.items():
        os.environ[variable] = os.path.join(root, folder)
    atexit.register(shutil.rmtree, root, ignore_errors=True)


_hermetic_caches()

import pytest  # noqa: E402
import torch  # noqa: E402

# Imported before any test runs: it registers the lazy device's guard, and torch's autograd
# engine fixes its devices at the first backward() of the process, whichever test runs it.
import lazygen.runtime  # noqa: F401, E402


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() not in ("", "0", "false")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="regenerate tests/golden/*/expected instead of comparing",
    )
    parser.addoption(
        "--update-baseline",
        action="store_true",
        default=False,
        help="rewrite tests/conformance/baseline.json from this run",
    )
    parser.addoption("--slow", action="store_true", default=False, help="run slow suites too")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--update-baseline"):
        os.environ["LAZYGEN_UPDATE_BASELINE"] = "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not torch.cuda.is_available():
        no_gpu = pytest.mark.skip(reason="gpu: needs CUDA")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(no_gpu)
    if config.getoption("--slow") or _env_flag("LAZYGEN_SLOW") or _env_flag("CI"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow, LAZYGEN_SLOW=1 or CI=true")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden")) or _env_flag("LAZYGEN_UPDATE_GOLDEN")
