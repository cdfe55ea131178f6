"""Every ``torch.optim`` optimizer's whole training step under
``torch.compile(backend="lazygen")`` (TorchScript backend) as eagerly (``support.optimizers``:
the classes, their options, foreach on and off, fused, a tensor lr; ``capturable`` stays
out: the compiled step's tensors are on the CPU, where eager refuses it). Slow: each case
compiles its own graphs.

Each run's losses, parameters and optimizer state after three steps are as accurate as
eager's own float32 run, measured against a float64 run (``assert_as_accurate_as_eager``;
traced, some optimizers keep their step counts as tensors, a few float32 ulps from eager),
and no graph runs eagerly."""

from __future__ import annotations

import pytest
import torch
from support.optimizers import CASES, reference_options, train
from support.training import assert_as_accurate_as_eager

from .conftest import count

COMPILED = sorted(case for case, (_, kwargs) in CASES.items() if not kwargs.get("capturable"))


@pytest.mark.slow
@pytest.mark.parametrize("case", COMPILED)
def test_every_optimizer_trains_under_compile(case):
    cls, kwargs = CASES[case]
    with torch._dynamo.config.patch(trace_autograd_ops=True):
        got = train(cls, kwargs, "compile")
    want = train(cls, reference_options(kwargs), "eager")
    assert len(got) == len(want)
    assert_as_accurate_as_eager(
        got, want, lambda: train(cls, reference_options(kwargs), "eager", torch.float64)
    )
    assert count("DynamoEagerGraph") == 0
    assert count("DynamoEagerSegment") == 0
