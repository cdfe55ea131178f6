"""The `examples/` scripts run as their docstrings say (slow suite).

Where they are run already: ``examples/ddp/train.py`` and ``examples/fsdp/train.py`` by
``tests/distributed`` (torchrun on 2 processes), ``examples/tiny_backend`` built as a wheel
and trained by ``tests/codegen/test_build_hook.py``. This file runs the rest, and checks
that no example is left out of all three.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Example script -> the test that runs it elsewhere.
RUN_ELSEWHERE = {
    "examples/ddp/train.py": "tests/distributed/test_distributed.py",
    "examples/fsdp/train.py": "tests/distributed/test_sharded.py",
    "examples/fsdp/llama.py": "tests/distributed/test_sharded.py",  # imported by train.py
    "examples/tiny_backend/train.py": "tests/codegen/test_build_hook.py",
}
#: Example script -> arguments that keep it short here.
RUN_HERE = {
    "examples/compile/train_step.py": ["--steps", "4"],
}


def test_every_example_script_is_run_somewhere():
    scripts = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "examples").rglob("*.py")
        # the backend package and its setup.py, built by the same test, are no scripts
        if "tiny_backend/tiny_backend" not in str(p) and p.name != "setup.py"
    }
    assert scripts - RUN_ELSEWHERE.keys() - RUN_HERE.keys() == set()
    for script, test in RUN_ELSEWHERE.items():
        text = (ROOT / test).read_text()
        assert "train.py" in text and Path(script).parent.name in text, (script, test)


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(RUN_HERE))
def test_example_runs(script, tmp_path):
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    result = subprocess.run(
        [sys.executable, str(ROOT / script), *RUN_HERE[script]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-4000:]
