"""transformers models trained over many sequence lengths with dynamic shapes on (issue
49): a bounded number of graphs, none run uncompiled, like eager within eager's own
float32 sensitivity, on TorchScript and on jax. A causal mask cut to the length used to
key every graph by length (GPT-2 over 16 lengths: 13 compiles and 7 steps uncompiled).
Slow: on jax, XLA compiles each new length (a few seconds each), so it sees 4 lengths,
and BERT is left to TorchScript there (bench/lengths.py measures it on jax too)."""

from __future__ import annotations

import importlib.util

import pytest

from .test_models import LOSS_FLOOR, SENSITIVITY_FACTOR, STATE_FLOOR, _run

pytestmark = pytest.mark.slow

#: 16 distinct lengths, shuffled (the zoo's models take up to 32 positions)
SIXTEEN = ",".join(str(9 + (i * 7) % 16) for i in range(16))


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs transformers")
@pytest.mark.parametrize(
    ("name", "backend"),
    [(m, "torchscript") for m in ("gpt2", "llama", "bert")] + [("gpt2", "jax"), ("llama", "jax")],
)
def test_many_lengths_compile_a_bounded_number_of_graphs(name: str, backend: str) -> None:
    if backend == "jax" and importlib.util.find_spec("jax") is None:
        pytest.skip("needs JAX: pip install lazygen[jax]")
    lengths, steps = (SIXTEEN, "20") if backend == "torchscript" else ("9,13,11,16", "6")
    options = ("--steps", steps, "--lengths", lengths, "--dynamic", "--dropout-off")
    result = _run(name, "lazy", *options, LAZYGEN_BACKEND=backend)
    diff, sensitivity = result["diff"], result["sensitivity"]
    loss_tol = max(LOSS_FLOOR, SENSITIVITY_FACTOR * max(sensitivity["losses"]))
    assert max(diff["losses"]) <= loss_tol, (result["losses"], result["eager_losses"])
    off = {
        tensor: (d, sensitivity["state"][tensor])
        for tensor, d in diff["state"].items()
        if d > max(STATE_FLOOR, SENSITIVITY_FACTOR * sensitivity["state"][tensor])
    }
    assert not off, f"{name}: parameters off (diff, eager's sensitivity): {off}"
    compiles, uncompiled = result["compiles"], result["uncompiled"]
    # the first step's graphs and the steady step's (AdamW makes its state at the first)
    assert compiles[-1] <= 4 and compiles[-1] == compiles[1], f"{name}: compiles {compiles}"
    assert uncompiled[-1] == 0, f"{name}: steps run uncompiled {uncompiled}"
