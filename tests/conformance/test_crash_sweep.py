"""Real models never crash (issue #23): a crash sweep.

Every float32 OpInfo entry (its first sample) and every conversion case
(``lazygen/conformance/conversions.py``: dtype and memory-format conversions followed by
views and in-place ops) runs in crash-isolated workers, on lazygen's built-in op list
(TorchScript backend; the jax backend, whose executor is not torch: 100 s here) and on a
minimal 4-op list (``add.Tensor``, ``mul.Tensor``, ``mm``, ``relu``, generated at test time and lowered by the fx backend's lowering, see
``tests/support/backend_sites.py``), where nearly every op goes through the eager fallback and composite
kernels. Wrong results and errors are the conformance suites' business; here any signal,
hang or worker death fails the test, naming each entry, the op it died in and where, with a
command that reproduces it. Nothing is excused: there is no skip list.

Each sweep takes 2-3 minutes with two workers on two cores (``slow``: CI runs it).
"""

from __future__ import annotations

import importlib.util
import os
import shlex
from pathlib import Path

import pytest
import torch
from support.backend_sites import FOUR_OP_LIST

from lazygen.conformance.entries import entries_by_name
from lazygen.conformance.runner import RunConfig, Runner

REPO = Path(__file__).resolve().parents[2]
#: Seconds an entry may run before it counts as a hang (first samples take < 2 s here).
TIMEOUT = 300.0


def _op_list(name: str, tmp_path: Path) -> Path:
    if name == "fourop":
        path = tmp_path / "four_ops.yaml"
        path.write_text(FOUR_OP_LIST)
        return path
    return REPO / "yaml" / "builtin.yaml"


def _report(backend: str, op_list: Path, site: Path, runner: Runner, results) -> str:
    """One paragraph per failure: entry, how it died, its op and frames, a repro."""
    lines = []
    for result in results:
        if result.outcome not in ("crash", "timeout"):
            continue
        repro = " ".join(
            [
                f"PYTHONPATH={shlex.quote(str(site))}" if backend == "fourop" else "",
                "python -m lazygen conformance",
                shlex.quote(str(op_list)),
                f"--backend {backend} --samples 1 --conversions --only",
                shlex.quote(result.name),
            ]
        ).strip()
        lines.append(f"{result.outcome.upper()} {result.name}: {result.detail}\n    {repro}")
    for failure in runner.failures:
        lines.append(f"worker died ({failure.how}) after {failure.entries}:\n{failure.stderr_tail}")
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["torchscript", "fourop", "jax"])
def test_nothing_crashes(backend, backend_site, tmp_path):
    if backend == "jax" and importlib.util.find_spec("jax") is None:
        pytest.skip("the jax backend needs JAX: pip install lazygen[jax]")
    names = list(entries_by_name(torch.float32, conversions=True))
    config = RunConfig(
        backend=backend,
        samples=1,
        conversions=True,
        jobs=max(2, min(4, os.cpu_count() or 2)),
        timeout=TIMEOUT,
        python_path=(str(backend_site),),
    )
    runner = Runner(config)
    results = runner.run(names)
    assert runner.backend_name == backend
    assert len(results) == len(names), "every entry must have a result"
    failures = _report(backend, _op_list(backend, tmp_path), backend_site, runner, results)
    assert not failures, f"{backend}: entries crashed or hung:\n{failures}"
