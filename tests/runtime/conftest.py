import pytest
import torch

import lazygen.runtime as lr


@pytest.fixture(autouse=True, scope="session")
def _init_runtime():
    lr.init()
    yield


@pytest.fixture
def fresh_metrics():
    lr.mark_step()
    lr.metrics.reset()
    yield lr.metrics
    lr.config.set_force_fallback([])


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
