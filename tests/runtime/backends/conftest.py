"""The ``fx`` and ``inductor`` backends next to the default one.

Graphs without autograd run on their own device index (``lazygen:1`` fx, ``lazygen:2``
inductor, as users would run them with ``set_device_backend``). Training runs on
``lazygen:0``, switched to the backend under test for the test's duration: torch 2.13's
autograd engine sizes its device queues from the device guard's device count, which a
Python PrivateUse1 guard cannot report, so ``backward()`` works on index 0 only.
"""

from __future__ import annotations

import contextlib
import gc

import pytest
import torch

import lazygen.runtime as lr
from lazygen.runtime.backends.fx.backend import FxBackend
from lazygen.runtime.backends.inductor.backend import InductorBackend

FX = "lazygen:1"
INDUCTOR = "lazygen:2"
BACKENDS = {"fx": FxBackend(), "inductor": InductorBackend()}


@pytest.fixture(autouse=True, scope="session")
def _backends():
    lr.init()
    lr.set_device_backend(1, BACKENDS["fx"])
    lr.set_device_backend(2, BACKENDS["inductor"])
    yield


@contextlib.contextmanager
def index_zero_on(name: str):
    """Run ``lazygen:0`` on backend ``name`` inside the block (then on its own again)."""
    default = lr.backend(0)
    lr.mark_step()
    gc.collect()  # tensors of earlier tests hold index 0 until collected
    lr.set_device_backend(0, BACKENDS[name])
    try:
        yield BACKENDS[name]
    finally:
        lr.mark_step()
        gc.collect()
        lr.set_device_backend(0, default)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture
def fresh_metrics():
    lr.mark_step()
    lr.metrics.reset()
    yield lr.metrics
