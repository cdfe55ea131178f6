"""The conformance classification on a backend that draws its own random numbers
(``Backend.random_numbers = "seed"``: the jax backend): a sample whose result drew from
seeds and differs from eager's numbers is not compared (an entry of such samples only is
``no_sample``, not ``wrong``); every other sample is compared as on any backend."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")

import lazygen.runtime as lr  # noqa: E402
from lazygen.conformance.classify import run_entry  # noqa: E402
from lazygen.runtime.backends.jax.backend import JaxBackend  # noqa: E402

INDEX = 7


class _Entry:
    def __init__(self, fn) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.variant_test_name = ""

    def sample_inputs(self, device, dtype, requires_grad=False):
        return [SimpleNamespace(input=torch.ones(64), args=(), kwargs={})]

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


def dropout_like(x):
    return torch.nn.functional.dropout(x, 0.5)


def doubled(x):
    return x * 2


def wrong(x):
    return x * 2 if x.device.type == "cpu" else x * 3


@pytest.fixture(scope="module")
def device():
    lr.init()
    lr.set_device_backend(INDEX, JaxBackend())
    yield f"lazygen:{INDEX}"
    lr.mark_step()


def test_random_samples_are_not_compared_others_are(device):
    random = run_entry(_Entry(dropout_like), device, lr.metrics, 10)
    assert random.outcome == "no_sample" and "random" in random.detail
    assert run_entry(_Entry(doubled), device, lr.metrics, 10).outcome == "lazy"
    assert run_entry(_Entry(wrong), device, lr.metrics, 10).outcome == "wrong"
