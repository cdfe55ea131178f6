"""Third-party models (issue #23, "real models never crash"): transformers and diffusers
models built from small configurations (random weights, nothing downloaded) train a few
AdamW steps, dropout on, on the lazy device and under
``torch.compile(step, backend="lazygen")`` (the whole step, AdamW's included: no graph may
run eagerly), against eager; two of them also in a training script's loop (gradient
checkpointing and clipping, then greedy and seeded sampling ``generate``, whose tokens
must be eager's).

Each run is a subprocess (``tests/models/worker.py``): a crash of the interpreter fails the
test naming the model, its signal and the end of its stderr.

Tolerances come from eager's own float32 numerics: the worker trains eager twice, from the
same weights and from weights one ulp larger; what rounding alone moves there bounds what
lazygen may move (with a floor of 1e-4 for losses and 1e-5 for parameters, far below what
a wrong kernel moves under AdamW: ~lr = 1e-3 per step)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .zoo import MODELS

ROOT = Path(__file__).resolve().parents[2]
LOSS_FLOOR, STATE_FLOOR, SENSITIVITY_FACTOR = 1e-4, 1e-5, 8


def _run(name: str, mode: str, *options: str, **environ: str) -> dict:
    """The worker's result for ``name`` in ``mode`` (``options``: more of its arguments,
    ``environ``: variables set for it)."""
    env = dict(os.environ) | environ
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    # One intra-op thread: the tests run side by side (xdist), and OpenMP threads contending
    # for the same cores made the first steps of graphs and eager alike up to 100x slower.
    env.setdefault("OMP_NUM_THREADS", "1")
    proc = subprocess.run(
        [sys.executable, "-m", "tests.models.worker", name, mode, *options],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    known = MODELS[name].known_failures.get(mode)
    if known is not None:  # (words of the error it raises, why)
        words, why = known
        if proc.returncode == 1 and words in proc.stderr:
            pytest.xfail(why)
        if proc.returncode == 0:
            pytest.fail(f"{name} ({mode}) works now: drop it from known_failures")
    if proc.returncode != 0:
        how = f"exit code {proc.returncode}"
        if proc.returncode < 0:
            how = f"killed by {signal.Signals(-proc.returncode).name}"
        pytest.fail(f"{name} ({mode}): the worker {how}\n{proc.stderr[-4000:]}", pytrace=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"{name} ({mode}): no result\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return json.loads(lines[-1])


def _eager_segments(report: str) -> list[str]:
    """The FX nodes ``lazygen.dynamo.report()`` lists as run eagerly."""
    names = []
    for line in report.splitlines():
        line = line.strip()
        if line.startswith("eager:"):
            names += [n.strip() for n in line[len("eager:") :].split(",")]
    return names


#: Models also trained on the lazy device with the inductor backend by default: Inductor's
#: cold compile of a training step costs tens of seconds here, so the default (and CI)
#: takes the transformers the compile benchmark times; ``LAZYGEN_ZOO_INDUCTOR=all`` takes
#: every model.
INDUCTOR_MODELS = {"gpt2", "llama", "bert", "t5"}
_ALL_ON_INDUCTOR = os.environ.get("LAZYGEN_ZOO_INDUCTOR", "").lower() == "all"
#: Steps before which a graph may still compile (the first step, and the optimizer's
#: first step, which creates its state, trace graphs of their own).
WARM_UP = 2

#: (model, mode) pairs: every model on the lazy device and under torch.compile; some on the
#: lazy device with the inductor backend; the language models that say so also in a training
#: script's loop (``worker.py``'s ``loop`` mode).
CASES = [
    (name, mode)
    for name, spec in sorted(MODELS.items())
    for mode in ("lazy", "inductor", "compile", "loop")
    if (mode != "loop" or spec.loop)
    and (mode != "inductor" or _ALL_ON_INDUCTOR or name in INDUCTOR_MODELS)
]


@pytest.mark.slow
@pytest.mark.parametrize("name, mode", CASES, ids=[f"{n}-{m}" for n, m in CASES])
def test_model_trains_as_eager(name: str, mode: str) -> None:
    spec = MODELS[name]
    if importlib.util.find_spec(spec.package) is None:
        pytest.skip(f"{spec.package} is not installed ({spec.why_not_installed})")
    result = _run(name, mode)
    if "skip" in result:
        pytest.skip(result["skip"])
    diff, sensitivity = result["diff"], result["sensitivity"]

    loss_tol = max(LOSS_FLOOR, SENSITIVITY_FACTOR * max(sensitivity["losses"]))
    worst = max(diff["losses"])
    assert worst <= loss_tol, (
        f"{name} ({mode}): losses {result['losses']} vs eager {result['eager_losses']} "
        f"(max diff {worst:.3g} > {loss_tol:.3g})"
    )
    generated = diff["state"].pop("generated", 0.0)  # greedy decoding's tokens
    assert generated == 0, f"{name} ({mode}): generate() picked other tokens than eager"
    sampled = diff["state"].pop("sampled", 0.0)  # seeded sampling's tokens
    assert sampled == 0, f"{name} ({mode}): generate(do_sample=True) drew other tokens"
    off = {
        tensor: (d, sensitivity["state"][tensor])
        for tensor, d in diff["state"].items()
        if d > max(STATE_FLOOR, SENSITIVITY_FACTOR * sensitivity["state"][tensor])
    }
    assert not off, f"{name} ({mode}): parameters off (diff, eager's sensitivity): {off}"

    # generate() reads whether every sequence has finished at each token
    reads = {"lazy": spec.host_reads, "inductor": spec.host_reads}
    allowed = {**reads, "loop": {"aten::_local_scalar_dense"}}.get(mode, set())
    fallbacks = set(result["fallbacks"]) - allowed
    assert not fallbacks, f"{name} ({mode}): ops through the eager fallback: {fallbacks}"
    counters = result["counters"]
    if mode == "inductor":  # after warm-up, neither lazygen nor Inductor compiles again
        compiles, variants = result["compiles"], result["backend_recompiles"]
        recompiled = compiles[-1] - compiles[WARM_UP - 1]
        assert recompiled <= spec.graphs_sized_by_data, f"{name}: compiles {compiles}"
        assert variants[-1] == variants[WARM_UP - 1], f"{name}: Inductor recompiles {variants}"
    elif mode != "compile":
        compiles = result["compiles"]  # cumulative, per step
        recompiled = compiles[-1] - compiles[-2]
        expected = spec.graphs_sized_by_data if mode == "lazy" else 0
        assert recompiled <= expected, f"{name}: compiles after each step {compiles}"
    else:
        captures = result["captures"]  # cumulative, per step
        recaptured = captures[-1] - captures[-2]
        assert recaptured <= spec.captures_sized_by_data, f"{name}: captures {captures}"
        report = result["dynamo_report"]
        assert counters.get("DynamoEagerGraph", 0) == 0, f"{name}: graphs run eagerly\n{report}"
        eager = [n for n in _eager_segments(report) if not n.startswith(spec.eager_segments)]
        assert not eager, f"{name}: eager segments {eager}\n{report}"
