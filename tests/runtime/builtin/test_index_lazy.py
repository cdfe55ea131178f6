"""``index.Tensor`` and ``masked_select`` run lazily: integer indices give the output shape
from the meta kernel (no sync); a bool/uint8 mask is materialised alone to count its
``True`` values."""

from __future__ import annotations

import pytest
import torch

import lazygen.runtime as lr

LAZY = "lazygen"

X = torch.arange(120.0).reshape(4, 5, 6)
MASK = (X[..., 0] % 7) < 3  # (4, 5), mixed
IDX = torch.tensor([3, 0, 3, 1])
IDX2 = torch.tensor([[0, 3], [2, 1]])
COLUMN = torch.tensor([1, 0])

CASES = {
    "mask": lambda x, m, i, j, c: x[m],
    "mask_dim0": lambda x, m, i, j, c: x[m[:, 0]],
    "mask_after_slice": lambda x, m, i, j, c: x[:, m[0]],
    "uint8_mask": lambda x, m, i, j, c: x[m[:, 0].to(torch.uint8)],
    "all_false_mask": lambda x, m, i, j, c: x[m & False],
    "idx": lambda x, m, i, j, c: x[i],
    "idx_dim1": lambda x, m, i, j, c: x[:, i],
    "idx_2d": lambda x, m, i, j, c: x[j],
    "idx1_idx2": lambda x, m, i, j, c: x[i, i],
    "idx_none_idx": lambda x, m, i, j, c: x[i, :, c[:, None]],
    "none_slot_broadcast": lambda x, m, i, j, c: x[:, j, c[:, None]],
    "newaxis_idx": lambda x, m, i, j, c: x[None, i, ..., c[0]],
    "mask_and_idx": lambda x, m, i, j, c: x[m[:, 0], :, c[0]],
    "index_op_none": lambda x, m, i, j, c: torch.ops.aten.index.Tensor(x, [None, i, None]),
    "masked_select": lambda x, m, i, j, c: torch.masked_select(x, m[..., None]),
    "masked_select_same": lambda x, m, i, j, c: x.masked_select(x > 50),
    "masked_select_broadcast_self": lambda x, m, i, j, c: torch.masked_select(
        x[0, 0], x[:, :, :1] > 30
    ),
}


def _args(device):
    return [t.to(device) for t in (X, MASK, IDX, IDX2, COLUMN)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_equals_eager_and_is_lazy(name, fresh_metrics):
    program = CASES[name]
    want = program(*_args("cpu"))
    lazy_args = _args(LAZY)
    lr.mark_step()
    lr.metrics.reset()
    got = program(*lazy_args)
    counters = lr.metrics.counter_names()
    assert not [c for c in counters if c in ("aten::index.Tensor", "aten::masked_select")]
    lr.mark_step()
    assert got.device.type == LAZY
    assert got.dtype == want.dtype
    assert torch.equal(got.cpu(), want)


def test_integer_indices_need_no_sync(fresh_metrics):
    x, _, i, j, c = _args(LAZY)
    lr.mark_step()
    fresh_metrics.reset()
    y = (x * 2)[i][:, j, c[:, None]]  # x * 2 is pending: a sync would execute it
    z = torch.ops.aten.index.Tensor(x + 1, [None, c])
    assert not fresh_metrics.counter_value("SyncedTensors")  # nothing ran yet
    lr.mark_step()
    assert torch.equal(y.cpu(), (X * 2)[IDX][:, IDX2, COLUMN[:, None]])
    assert torch.equal(z.cpu(), (X + 1)[:, COLUMN])


def test_mask_of_pending_computation(fresh_metrics):
    x = X.to(LAZY)
    lr.mark_step()
    y = (x + 1)[(x % 7) == 0] * 3
    s = torch.masked_select(x - 1, (x % 5) == 0).sum()
    lr.mark_step()
    assert torch.equal(y.cpu(), (X + 1)[(X % 7) == 0] * 3)
    assert torch.equal(s.cpu(), torch.masked_select(X - 1, (X % 5) == 0).sum())


def test_gradients_through_index(fresh_metrics):
    def run(device):
        x = X.to(device, copy=True).requires_grad_()
        m, i = MASK.to(device), IDX.to(device)
        (x[m].sin().sum() + x[:, i].cos().sum() + torch.masked_select(x, x > 3).sum()).backward()
        return x.grad

    want = run("cpu")
    got = run(LAZY)
    lr.mark_step()
    torch.testing.assert_close(got.cpu(), want)


def test_errors_match_eager(fresh_metrics):
    x = X.to(LAZY)
    with pytest.raises(IndexError, match="does not match"):
        x[torch.ones(3, dtype=torch.bool, device=LAZY)]
    with pytest.raises((IndexError, RuntimeError)):
        x[torch.tensor([7], device=LAZY)].cpu()
    with pytest.raises(RuntimeError, match="BoolTensor"):
        torch.masked_select(x, torch.ones(4, 5, 6, device=LAZY))


def test_mask_syncs_only_the_mask(fresh_metrics):
    x = X.to(LAZY)
    lr.mark_step()
    fresh_metrics.reset()
    y = (x * 2)[(x % 7) == 0]
    assert fresh_metrics.counter_value("SyncedTensors") == 1  # the mask, not x * 2
    lr.mark_step()
    assert torch.equal(y.cpu(), (X * 2)[(X % 7) == 0])


def test_host_index_tensors_as_index_put():
    """Host index tensors are accepted, as CUDA accepts them (`logits[torch.arange(B), y]`),
    for reads and for `x[i] = v`."""
    x = X.to(LAZY)
    assert torch.equal(x[torch.tensor(2)].cpu(), X[2])
    for index in (IDX, MASK):
        assert torch.equal(x[index].cpu(), X[index])
        y, want = X.to(LAZY), X.clone()
        y[index] = 1.0
        want[index] = 1.0
        assert torch.equal(y.cpu(), want)
