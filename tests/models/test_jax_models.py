"""transformers models trained with ``LAZYGEN_BACKEND=jax`` (issue #39): 20 AdamW steps
like eager within eager's own float32 sensitivity, one graph a step (every step after
warm-up from the cache), nothing through the eager fallback. Dropout is off: the jax
backend draws its own random numbers (``Backend.random_numbers = "seed"``), so its masks
are not eager's. Slow (XLA compiles a step's graphs in seconds)."""

from __future__ import annotations

import importlib.util

import pytest

from .test_models import LOSS_FLOOR, SENSITIVITY_FACTOR, STATE_FLOOR, _run
from .zoo import MODELS

pytestmark = pytest.mark.slow


@pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="needs JAX: pip install lazygen[jax]"
)
@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_trains_like_eager_on_the_jax_backend(name: str) -> None:
    spec = MODELS[name]
    if importlib.util.find_spec(spec.package) is None:
        pytest.skip(f"{spec.package} is not installed")
    result = _run(name, "lazy", "--steps", "20", "--dropout-off", LAZYGEN_BACKEND="jax")
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
