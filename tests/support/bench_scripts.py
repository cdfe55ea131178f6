"""The scripts under ``bench/`` loaded as modules in the test's process: a fresh interpreter
per case costs seconds, and a script's ``main`` or helpers are what its tests call."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load_bench_script(name: str) -> ModuleType:
    """``bench/<name>.py`` as a new module (its sibling modules, such as ``_workloads``,
    importable while it loads, as when it runs as a script)."""
    path = BENCH / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name.lstrip('_')}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def run_bench_script(name: str, *args: str, timeout: float = 300) -> str:
    """``bench/<name>.py ARGS`` run as a user runs it (a fresh interpreter, where the script's
    own process-wide setup cannot leak into the test's); its standard output, once it exited
    0 (else the test fails with the end of its standard error)."""
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
