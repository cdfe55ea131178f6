"""End-to-end training: five steps lazily vs eagerly, and compile caching from step 3 on."""

import pytest
from support.training import OPTIMIZERS, WORKLOADS, compare_training, train

import lazygen.runtime as lr


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_training_matches_eager_and_caches_compiles(workload, optimizer):
    lr.mark_step()
    lr.metrics.reset()
    uncached = compare_training(optimizer, steps=5, workload=workload)
    # Step 1 creates optimizer state, step 2 sees it: after step 3 nothing new compiles.
    assert uncached[2] == uncached[3] == uncached[4], uncached
    assert (lr.metrics.counter_value("CachedCompile") or 0) >= 2


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_training_step_runs_no_op_eagerly(workload):
    """Whole steps (forward, backward, Adam) stay in lazy graphs: recurrent layers included,
    whose fused cells and packed sequences once went through the eager fallback."""
    spec = WORKLOADS[workload]
    lr.mark_step()
    lr.metrics.reset()
    train(spec.model(), "adam", spec.batches(2), "lazygen", step_fn=lr.mark_step)
    fallbacks = [name for name in lr.metrics.counter_names() if name.startswith("aten::")]
    assert not fallbacks, fallbacks
