import pytest
import torch
from support import hand_written_nodes

import lazygen.runtime as lr
from lazygen.runtime import dispatch as registry


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


@pytest.fixture
def hand_written():
    """Register the hand-written nodes for one test (as a generated registration would)."""
    lr.mark_step()
    registry.register_kernels(  # the hand-written nodes replace generated kernels
        hand_written_nodes.KERNELS, node_classes=hand_written_nodes.NODE_CLASSES
    )
    lr.metrics.reset()
    yield hand_written_nodes
    lr.mark_step()
    lr.state.reset()  # the installed kernels again, default settings, empty caches
