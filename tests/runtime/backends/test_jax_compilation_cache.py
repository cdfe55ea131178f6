"""JAX's persistent compilation cache on the jax backend (``backends/jax/compilation_cache``):
on by default in lazygen's cache directory, read by the next process, and harmless when
corrupt, unwritable or turned off. Each case runs a small training step in fresh
processes sharing one cache directory of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")

_STEP = """
import json, warnings
import torch
import lazygen.runtime as lr
from lazygen.runtime.execution.persistent_cache import PersistentCacheWarning
caught = []
warnings.simplefilter("always")
warnings.showwarning = lambda message, category, *rest: caught.append((message, category))
lr.init(backend="jax")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
model.to("lazygen")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(4, 8).to("lazygen"), torch.randn(4, 2).to("lazygen")
losses = []
for _ in range(2):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    lr.mark_step()
    losses.append(loss.item())
import jax
print(json.dumps({
    "losses": losses,
    "hits": lr.metrics.counter_value("PersistentCacheHit") or 0,
    "misses": lr.metrics.counter_value("PersistentCacheMiss") or 0,
    "warnings": [str(m) for m, category in caught if category is PersistentCacheWarning],
    "jax_dir": jax.config.jax_compilation_cache_dir,
}))
"""


def _run(env_changes: dict, code: str = _STEP) -> dict:
    env = {**os.environ, **env_changes}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _entries(root) -> list:
    return [p for p in (root / "jax").rglob("*") if p.is_file()]


def test_the_next_process_reads_the_compiled_programs(tmp_path):
    env = {"LAZYGEN_CACHE_DIR": str(tmp_path)}
    cold = _run(env)
    assert cold["hits"] == 0 and cold["misses"] >= 1 and not cold["warnings"]
    assert cold["jax_dir"].startswith(str(tmp_path / "jax"))
    written = _entries(tmp_path)
    assert len(written) == cold["misses"]
    warm = _run(env)
    assert warm["hits"] == cold["misses"] and warm["misses"] == 0
    assert warm["losses"] == cold["losses"]


def test_corrupt_entries_are_recompiled_with_one_warning(tmp_path):
    env = {"LAZYGEN_CACHE_DIR": str(tmp_path)}
    cold = _run(env)
    for entry in _entries(tmp_path):
        entry.write_bytes(entry.read_bytes()[:-7])
    damaged = _run(env)
    assert len(damaged["warnings"]) == 1 and "corrupt entry" in damaged["warnings"][0]
    assert damaged["losses"] == cold["losses"] and damaged["hits"] == 0
    repaired = _run(env)  # the corrupt entries were replaced by good ones
    assert repaired["hits"] == cold["misses"] and not repaired["warnings"]


def test_an_unusable_directory_warns_once_and_trains(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = _run({"LAZYGEN_CACHE_DIR": str(blocker / "cache")})
    assert len(result["warnings"]) == 1 and "cannot be made" in result["warnings"][0]
    assert result["jax_dir"] is None and len(result["losses"]) == 2


def test_turned_off_it_writes_nothing(tmp_path):
    result = _run({"LAZYGEN_CACHE_DIR": str(tmp_path), "LAZYGEN_CACHE": "0"})
    assert result["jax_dir"] is None and not list(tmp_path.iterdir())


def test_a_programs_own_cache_directory_is_kept(tmp_path):
    code = _STEP.replace(
        "import lazygen.runtime as lr\n",
        f"import jax\njax.config.update('jax_compilation_cache_dir', {str(tmp_path / 'own')!r})\n"
        "import lazygen.runtime as lr\n",
        1,
    )
    result = _run({"LAZYGEN_CACHE_DIR": str(tmp_path / "lazygen")}, code)
    assert result["jax_dir"] == str(tmp_path / "own")
    assert not (tmp_path / "lazygen" / "jax").exists()
