import pytest
import torch

import lazygen.runtime as lr


@pytest.fixture(autouse=True, scope="session")
def _init_runtime():
    lr.init()
    yield


@pytest.fixture(autouse=True)
def _fresh():
    """Each test compiles from scratch, seeded, with its own counters."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    lr.mark_step()
    lr.metrics.reset()
    yield
    lr.config.set_force_fallback([])


def count(name: str) -> int:
    return lr.metrics.counter_value(name) or 0
