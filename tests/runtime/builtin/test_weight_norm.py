"""``torch.nn.utils.parametrizations.weight_norm`` (wav2vec2/HuBERT's positional
convolution, vocoders) runs lazily: ``_weight_norm_interface`` and its backward are in the
op list, so a training step is one graph equal to eager's."""

from __future__ import annotations

import pytest
import torch

import lazygen.runtime as lr


def _train(device, dim):
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(4, 6, 3, padding=1)
    model = torch.nn.utils.parametrizations.weight_norm(conv, dim=dim).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    torch.manual_seed(1)
    losses = []
    for x in [torch.randn(2, 4, 5) for _ in range(3)]:
        opt.zero_grad()
        loss = model(x.to(device)).pow(2).mean()
        loss.backward()
        opt.step()
        if device != "cpu":
            lr.mark_step()
        losses.append(loss.detach().cpu())
    return losses + [p.detach().cpu() for p in model.parameters()]


@pytest.mark.parametrize("dim", [0, 2])  # the interface's fast path: first or last dim
def test_weight_norm_trains_lazily_as_eager(dim, fresh_metrics):
    for got, want in zip(_train("lazygen", dim), _train("cpu", dim), strict=True):
        torch.testing.assert_close(got, want)
    assert fresh_metrics.counter_value("lazy::_weight_norm_interface") == 3
    assert fresh_metrics.counter_value("lazy::_weight_norm_interface_backward") == 3
    assert not [n for n in fresh_metrics.counter_names() if n.startswith("aten::")]
