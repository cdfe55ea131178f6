"""Batch normalisation on the jax backend follows eager's numerics (issue 49, item 2).

A ResNet-style model trained with a batch of 2 normalises, in its last downsample, two
numbers per channel on a 1x1 plane: their normalised values are +-1 whatever they are, and
the input gradient is all rounding error. The jax lowering computed the statistics with a
textbook float32 formula, and a ResNet's running variance drifted from eager's by 5.7x
eager's own sensitivity at step 3. It now computes as torch's CPU kernel does
(``backends/jax/ops/batch_norm.py``). Tolerances are eager's own: the spread of eager runs
whose start differs by one ulp (no machine's bits are assumed)."""

from __future__ import annotations

import copy

import pytest
import torch

jax = pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")

import lazygen.runtime as lr  # noqa: E402
from lazygen.runtime.backends.jax.backend import JaxBackend  # noqa: E402

from .conftest import BACKENDS, index_zero_on  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _jax_backend():
    BACKENDS.setdefault("jax", JaxBackend())
    yield


def _ulp_moved(tensor: torch.Tensor, seed: int) -> torch.Tensor:
    """``tensor`` with each element moved one ulp up or down (at random)."""
    generator = torch.Generator().manual_seed(seed)
    up = torch.rand(tensor.shape, generator=generator) < 0.5
    return torch.nextafter(tensor, torch.where(up, torch.inf, -torch.inf))


def _spread(results: list[dict], reference: dict) -> dict:
    """Per entry, the largest difference of an eager run from a 1-ulp moved start."""
    return {k: max((r[k] - reference[k]).abs().max().item() for r in results) for k in reference}


def _statistics(x: torch.Tensor, device: str) -> dict:
    norm = torch.nn.BatchNorm2d(x.shape[1]).to(device)
    with torch.no_grad():
        out = norm(x.to(device))
    return {
        "out": out.cpu(),
        "running_mean": norm.running_mean.cpu(),
        "running_var": norm.running_var.cpu(),
    }


def test_batch_of_two_on_1x1_planes_gives_eagers_statistics():
    torch.manual_seed(0)
    x = torch.randn(2, 8, 1, 1) * 3 + 1
    eager = _statistics(x, "cpu")
    spread = _spread([_statistics(_ulp_moved(x, s), "cpu") for s in range(4)], eager)
    with index_zero_on("jax"):
        lazy = _statistics(x, "lazygen:0")
    for name, want in eager.items():
        error = (lazy[name] - want).abs().max().item()
        assert (
            error <= spread[name]
        ), f"{name}: {error:.3g} from eager, eager's spread {spread[name]:.3g}"


class _Block(torch.nn.Module):
    """A ResNet basic block with a strided 1x1 downsample (convolution, batch norm)."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(cin, cout, 3, 2, 1, bias=False)
        self.b1 = torch.nn.BatchNorm2d(cout)
        self.c2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = torch.nn.BatchNorm2d(cout)
        self.down = torch.nn.Sequential(
            torch.nn.Conv2d(cin, cout, 1, 2, bias=False), torch.nn.BatchNorm2d(cout)
        )

    def forward(self, x):
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(y + self.down(x))


def _resnet() -> torch.nn.Module:
    """Three blocks take an 8x8 input to 1x1: with a batch of 2, the last batch norms see
    two numbers per channel."""
    stem = [torch.nn.Conv2d(3, 8, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(8), torch.nn.ReLU()]
    blocks = [_Block(8, 16), _Block(16, 32), _Block(32, 32)]
    head = [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 4)]
    return torch.nn.Sequential(*stem, *blocks, *head)


def _running_statistics(model, device: str, batches) -> list[dict]:
    """The running statistics after each SGD step."""
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    steps = []
    for x, y in batches:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()
        optimizer.step()
        lr.mark_step()
        steps.append(
            {n: b.detach().cpu().clone() for n, b in model.named_buffers() if "running" in n}
        )
    return steps


@pytest.mark.slow  # about 60 s on a loaded 2-core machine: XLA compiles the training step
def test_resnet_with_a_batch_of_two_keeps_eagers_running_statistics():
    """The running statistics stay within the spread of eager runs from 1-ulp moved starts.
    With the textbook float32 formulas, this model's (seed 2) were up to 1.4x that spread
    after steps 2-4; with torch's kernel's numerics, at most 0.63x."""
    torch.manual_seed(2)
    model = _resnet()
    batches = [(torch.randn(2, 3, 8, 8), torch.randint(0, 4, (2,))) for _ in range(4)]
    eager = _running_statistics(copy.deepcopy(model), "cpu", batches)
    moved = []
    for seed in range(4):
        start = copy.deepcopy(model)
        with torch.no_grad():
            for p in start.parameters():
                p.copy_(_ulp_moved(p, seed))
        moved.append(_running_statistics(start, "cpu", batches))
    with index_zero_on("jax"):
        lazy = _running_statistics(copy.deepcopy(model), "lazygen:0", batches)
    for step in range(1, len(batches)):  # after step 1, where both round differently
        spread = _spread([m[step] for m in moved], eager[step])
        for name, want in eager[step].items():
            error = (lazy[step][name] - want).abs().max().item()
            assert (
                error <= spread[name]
            ), f"step {step + 1}, {name}: {error:.3g} from eager, eager's spread {spread[name]:.3g}"
