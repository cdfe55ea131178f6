"""Models trained with ``LAZYGEN_BACKEND=jax`` (issues #39, #49): AdamW steps like eager
within eager's own float32 sensitivity, no compile after step 2 (every later step's graphs
from the cache), nothing through the eager fallback but the models' own host reads.
GPT-2 and Llama train 20 steps; BERT, T5, a ResNet (batch norm in training mode, a batch
of 2) and a MobileNetV3-style network (``hardswish``, ``hardsigmoid``, depthwise
convolutions) 6, enough for the steady state, to keep CI's slow set short. Dropout is off
(modules and attention rates): the jax backend draws its own random numbers
(``Backend.random_numbers = "seed"``), so its masks are not eager's. Slow (XLA compiles a
step's graphs in seconds)."""

from __future__ import annotations

import importlib.util

import pytest

from .test_models import LOSS_FLOOR, SENSITIVITY_FACTOR, STATE_FLOOR, _run
from .zoo import MODELS

pytestmark = pytest.mark.slow


@pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="needs JAX: pip install lazygen[jax]"
)
@pytest.mark.parametrize(
    ("name", "steps"),
    [("gpt2", 20), ("llama", 20), ("bert", 6), ("t5", 6), ("resnet", 6), ("mobilenet_v3", 6)],
)
def test_trains_like_eager_on_the_jax_backend(name: str, steps: int) -> None:
    spec = MODELS[name]
    if importlib.util.find_spec(spec.package) is None:
        pytest.skip(f"{spec.package} is not installed")
    options = ("--steps", str(steps), "--dropout-off")
    result = _run(name, "lazy", *options, LAZYGEN_BACKEND="jax")
    diff, sensitivity = result["diff"], result["sensitivity"]
    loss_tol = max(LOSS_FLOOR, SENSITIVITY_FACTOR * max(sensitivity["losses"]))
    assert max(diff["losses"]) <= loss_tol, (result["losses"], result["eager_losses"])
    off = {
        tensor: (d, sensitivity["state"][tensor])
        for tensor, d in diff["state"].items()
        if d > max(STATE_FLOOR, SENSITIVITY_FACTOR * sensitivity["state"][tensor])
    }
    assert not off, f"{name}: parameters off (diff, eager's sensitivity): {off}"
    assert not set(result["fallbacks"]) - spec.host_reads, result["fallbacks"]
    compiles = result["compiles"]
    assert compiles[-1] == compiles[2], f"{name}: compiles after each step {compiles}"
