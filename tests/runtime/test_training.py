"""End-to-end training: five steps lazily vs eagerly, and compile caching from step 3 on."""

import pytest

import lazygen.runtime as lr

from .training import OPTIMIZERS, WORKLOADS, compare_training


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_training_matches_eager_and_caches_compiles(workload, optimizer):
    lr.mark_step()
    lr.metrics.reset()
    uncached = compare_training(optimizer, steps=5, workload=workload)
    # Step 1 creates optimizer state, step 2 sees it: after step 3 nothing new compiles.
    assert uncached[2] == uncached[3] == uncached[4], uncached
    assert (lr.metrics.counter_value("CachedCompile") or 0) >= 2
