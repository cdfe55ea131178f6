"""Gradient checkpointing under ``torch.compile(backend="lazygen")``: aot_autograd wraps a
recomputed region's random ops in ``run_and_save_rng_state``/``run_with_rng_state``, which
take a torch device generator's state. Those nodes run as eager segments on the host; the
rest of the forward and backward graphs is captured (the whole graph ran eagerly before)."""

from __future__ import annotations

import copy

import torch
import torch.utils.checkpoint

import lazygen.dynamo as ld

from .conftest import count


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(8, 16)
        self.down = torch.nn.Linear(16, 8)
        self.drop = torch.nn.Dropout(0.25)

    def forward(self, x):
        return x + self.down(self.drop(torch.relu(self.up(x))))


class _Checkpointed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([_Block(), _Block()])

    def forward(self, x):
        for block in self.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return x.square().mean()


def test_recomputed_random_ops_run_on_the_host_and_the_rest_is_captured():
    model = _Checkpointed()
    ref = copy.deepcopy(model)
    x = torch.randn(6, 8)
    for step in range(2):
        torch.manual_seed(step)
        loss = torch.compile(model, backend="lazygen")(x)
        loss.backward()
        torch.manual_seed(step)
        ref_loss = torch.compile(ref, backend="aot_eager")(x)
        ref_loss.backward()
        # the same dropout masks in the forward and in the recomputation, else far apart
        torch.testing.assert_close(loss, ref_loss)
        for p, q in zip(model.parameters(), ref.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad)
    assert count("DynamoEagerGraph") == 0
    assert count("DynamoPartitionedGraph") == 2  # forward and backward
    report = ld.report()
    eager_lines = [line for line in report.splitlines() if line.strip().startswith("eager:")]
    assert eager_lines and all("rng_state" in line for line in eager_lines), report
