"""Parts of ``lazygen.conformance`` on their own: the conversion cases (eagerly), the
difference measure of ``wrong`` results, and the runner's chunks over parallel workers."""

from __future__ import annotations

import math

import pytest
import torch

from lazygen.conformance.classify import EntryResult, max_difference
from lazygen.conformance.conversions import CHAINS, FORMATS, TARGETS, conversion_cases
from lazygen.conformance.runner import RunConfig, Runner, default_chunk_size


def test_conversion_cases_run_eagerly():
    cases = conversion_cases()
    assert len(cases) == len(TARGETS) * len(FORMATS) * len(CHAINS)
    assert len({case.name for case in cases}) == len(cases)
    for case in cases:
        (sample,) = case.sample_inputs("cpu", torch.float32)
        before = sample.input.clone()
        converted, view = case(sample.input)
        assert converted.dtype == TARGETS[case.target], case.name
        assert isinstance(view, torch.Tensor), case.name
        assert torch.equal(sample.input, before), f"{case.name} wrote into its input"


def test_conversion_cases_with_gradients_are_floating_only():
    cases = conversion_cases(grad=True)
    assert cases and all(
        TARGETS[c.target].is_floating_point or TARGETS[c.target].is_complex for c in cases
    )


def test_max_difference():
    want = torch.tensor([1.0, 2.0, float("nan"), 4.0])
    got = torch.tensor([1.0, 2.5, float("nan"), 2.0])
    assert max_difference((got,), (want,)) == (2.0, 0.5)
    assert max_difference(torch.ones(2), torch.ones(3)) == (None, None)  # shapes differ
    nan_abs, _ = max_difference(torch.tensor([float("nan")]), torch.tensor([1.0]))
    assert math.isnan(nan_abs)


def test_results_round_trip_through_json():
    result = EntryResult("x", "wrong", 2, "off", ("aten::mm",), 1.5, 0.25, None, 0.1)
    assert EntryResult.from_json(result.to_json()) == result


def test_default_chunks():
    assert default_chunk_size(5, 1) == 5
    assert default_chunk_size(887, 2) == 40
    assert default_chunk_size(3, 8) == 1


def test_parallel_chunks_keep_the_order():
    """Two workers at a time over chunks of two: every entry once, in the order asked,
    each reported as it finishes."""
    seen = []
    names = ["add", "mul", "sub", "div.no_rounding_mode", "nn.functional.relu"]
    config = RunConfig(backend="torchscript", samples=1, jobs=2, chunk_size=2)
    runner = Runner(config, seen.append)
    results = runner.run(names)
    assert [r.name for r in results] == names
    assert sorted(r.name for r in seen) == sorted(names)
    assert all(r.outcome in ("lazy", "fallback") for r in results), results
    assert runner.backend_name == "torchscript" and not runner.failures


@pytest.mark.parametrize("name", ["nosuch", "to.float16.contiguous.slice_add_"])
def test_unknown_entries_stop_the_run(name):
    """``to.*`` names are entries only with ``conversions``: a worker refuses what it
    does not know, and the run stops with that message."""
    from lazygen.conformance.runner import ConformanceSetupError

    with pytest.raises(ConformanceSetupError, match="unknown entries"):
        Runner(RunConfig(samples=1)).run([name])
