"""`ops.multinomial`: `torch.multinomial` on the lazy device samples as lazy ops (it went
through the eager fallback, cutting every token's graph of sampling `generate`), drawing
eager's samples under the same seed, with eager's errors for bad probabilities."""

from __future__ import annotations

import pytest
import torch

import lazygen.runtime as lr


def _both(probs: torch.Tensor, *args, generator_seed=None, **kwargs):
    """``multinomial`` of ``probs`` eagerly and lazily, each after seeding the same way."""
    results = []
    for device in ("cpu", lr.device()):
        torch.manual_seed(3)
        generator = None
        if generator_seed is not None:
            generator = torch.Generator().manual_seed(generator_seed)
        out = torch.multinomial(probs.to(device), *args, generator=generator, **kwargs)
        results.append(out.cpu())
    return results


@pytest.mark.parametrize(
    "shape, num_samples, replacement",
    [((7,), 1, False), ((4, 50), 1, True), ((4, 50), 5, False), ((3, 9), 9, False)],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_samples_are_eagers_as_lazy_ops(fresh_metrics, shape, num_samples, replacement, dtype):
    probs = torch.rand(shape).to(dtype)
    probs[..., 0] = 0  # a category that is never drawn
    eager, lazy = _both(probs, num_samples, replacement)
    assert torch.equal(lazy, eager)
    assert lazy.dtype == torch.int64 and lazy.shape == eager.shape
    assert not fresh_metrics.counter_value("aten::multinomial")
    assert fresh_metrics.counter_value("lazy::multinomial") == 1


def test_a_given_generator_draws_eagers_samples(fresh_metrics):
    eager, lazy = _both(torch.rand(3, 20), 2, generator_seed=11)
    assert torch.equal(lazy, eager)
    assert not fresh_metrics.counter_value("aten::multinomial")


def test_sampling_in_a_loop_continues_eagers_stream(fresh_metrics):
    """As ``generate`` does: sample, feed the sample back, sample again."""
    results = []
    for device in ("cpu", lr.device()):
        torch.manual_seed(5)
        logits = torch.randn(2, 30).to(device)
        tokens = []
        for _ in range(4):
            token = torch.multinomial(torch.softmax(logits, -1), 1)
            logits = logits.scatter(1, token, -1.0)
            tokens.append(token.cpu())
        results.append(torch.cat(tokens, 1))
    assert torch.equal(results[1], results[0])
    assert not fresh_metrics.counter_value("aten::multinomial")


def test_several_with_replacement_run_eagerly_with_eagers_samples(fresh_metrics):
    eager, lazy = _both(torch.rand(2, 6), 10, True)
    assert torch.equal(lazy, eager)
    assert fresh_metrics.counter_value("aten::multinomial") == 1


@pytest.mark.parametrize(
    "probs, args, words",
    [
        (torch.tensor([0.5, float("nan")]), (1,), "`inf`, `nan` or element < 0"),
        (torch.tensor([[0.5, -0.1]]), (1,), "`inf`, `nan` or element < 0"),
        (torch.tensor([[0.5, float("inf")]]), (1,), "`inf`, `nan` or element < 0"),
        (torch.tensor([[0.5, 0.5], [0.0, 0.0]]), (1,), "sum of probabilities <= 0"),
        (torch.rand(2, 3), (4,), "without replacement"),
        (torch.rand(2, 3), (0,), "n_sample <= 0"),
        (torch.rand(2, 3, 4), (1,), "1 or 2 dim"),
    ],
)
def test_bad_arguments_raise_eagers_error(probs, args, words):
    with pytest.raises(RuntimeError, match=None) as eager:
        torch.multinomial(probs, *args)
    assert words in str(eager.value)
    with pytest.raises(RuntimeError) as lazy:
        torch.multinomial(probs.to(lr.device()), *args).cpu()
    assert words in str(lazy.value)
