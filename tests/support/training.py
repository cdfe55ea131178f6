"""Lazy-vs-eager training comparison, shared by the runtime and generated-kernel tests."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch

import lazygen.runtime as lr

OPTIMIZERS = {
    "sgd_momentum": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=1e-2),
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1),
}


def make_mlp(seed: int = 0, sizes=(20, 32, 16, 4)) -> torch.nn.Module:
    torch.manual_seed(seed)
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


class SmallCNN(torch.nn.Module):
    """conv2d, batch norm (train mode), max-pool, dropout (kept in eval mode), linear."""

    def __init__(self, classes: int = 4) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, 3, padding=1, bias=False)  # batch norm follows
        self.norm = torch.nn.BatchNorm2d(6)
        self.conv2 = torch.nn.Conv2d(6, 8, 3)
        self.dropout = torch.nn.Dropout(0.5)
        self.head = torch.nn.Linear(8 * 2 * 2, classes)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.norm(self.conv(x))), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.head(self.dropout(torch.flatten(x, 1)))

    def train(self, mode: bool = True):
        super().train(mode)
        self.dropout.eval()  # random masks would differ between devices
        return self


class TinyEncoder(torch.nn.Module):
    """One ``nn.TransformerEncoderLayer`` over a short sequence, mean-pooled, classified."""

    def __init__(self, d_model: int = 16, classes: int = 4) -> None:
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(
            d_model, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True
        )
        self.head = torch.nn.Linear(d_model, classes)
        # The key bias's gradient is zero up to rounding (softmax ignores a constant shift);
        # Adam would turn that rounding noise into full-size steps of either sign.
        self.layer.self_attn.in_proj_bias.requires_grad_(False)

    def forward(self, x):
        return self.head(self.layer(x).mean(dim=1))


class TinyLSTM(torch.nn.Module):
    """A two-layer LSTM with dropout between the layers, its last output classified."""

    def __init__(self, features: int = 6, classes: int = 4) -> None:
        super().__init__()
        self.rnn = torch.nn.LSTM(features, 8, num_layers=2, dropout=0.2, batch_first=True)
        self.head = torch.nn.Linear(8, classes)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


class TinyPackedGRU(torch.nn.Module):
    """A bidirectional GRU over padded sequences of unsorted lengths (packed, as users feed
    variable-length batches), its final hidden states classified."""

    def __init__(self, features: int = 6, classes: int = 4) -> None:
        super().__init__()
        self.rnn = torch.nn.GRU(features, 8, bidirectional=True, batch_first=True)
        self.head = torch.nn.Linear(16, classes)

    def forward(self, x):
        lengths = torch.arange(x.shape[0]) % x.shape[1] + 1  # host lengths, as on CUDA
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            x, lengths, batch_first=True, enforce_sorted=False
        )
        _, hidden = self.rnn(packed)
        return self.head(torch.cat([hidden[0], hidden[1]], dim=1))


@dataclass(frozen=True)
class Workload:
    """A model and the shape of its inputs."""

    make_model: object
    input_shape: tuple[int, ...]
    classes: int = 4
    extra: dict = field(default_factory=dict)

    def model(self, seed: int = 0) -> torch.nn.Module:
        torch.manual_seed(seed)
        return self.make_model()

    def batches(self, steps: int, seed: int = 1):
        generator = torch.Generator().manual_seed(seed)
        return [
            (
                torch.randn(*self.input_shape, generator=generator),
                torch.randint(0, self.classes, (self.input_shape[0],), generator=generator),
            )
            for _ in range(steps)
        ]


WORKLOADS = {
    "mlp": Workload(make_mlp, (8, 20)),
    "cnn": Workload(SmallCNN, (4, 3, 12, 12)),
    "transformer": Workload(TinyEncoder, (4, 5, 16)),
    "lstm": Workload(TinyLSTM, (4, 5, 6)),
    "packed_gru": Workload(TinyPackedGRU, (4, 5, 6)),
}


def make_batches(steps: int, batch: int = 8, features: int = 20, classes: int = 4, seed: int = 1):
    return Workload(make_mlp, (batch, features), classes).batches(steps, seed)


def train(model, optimizer_name: str, batches, device: str, step_fn=None):
    """Train ``model`` on ``device``; returns (losses, final parameters and buffers on CPU).
    Seeded, so that dropout draws the same masks on every device."""
    torch.manual_seed(2)
    model = model.to(device)
    model.train()
    optimizer = OPTIMIZERS[optimizer_name](model.parameters())
    losses = []
    for inputs, targets in batches:
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        if step_fn is not None:
            step_fn()
        losses.append(loss.detach())
    state = [t.detach().cpu() for t in model.state_dict().values()]
    return [float(loss.cpu()) for loss in losses], state


def assert_as_accurate_as_eager(lazy, eager, reference, *, atol: float = 1e-6, factor: float = 4):
    """Assert lazy float32 results are as accurate as eager's own.

    Equal to eager within ``atol``, or else no further from a float64 run of the same
    computation (``reference``: the values, or a callable computing them only when needed)
    than ``factor`` times eager's own distance from it, plus ``atol``. Lazy graphs may sum in
    another order than eager's kernels, and which order a fused or BLAS kernel takes depends
    on the CPU (AVX2 or AVX-512): a fixed tolerance measured on one machine fails on another,
    while eager's own error is what float32 allows on each.
    """
    lazy, eager = list(lazy), list(eager)
    assert len(lazy) == len(eager)
    if all(torch.allclose(g, w, atol=atol, rtol=0) for g, w in zip(lazy, eager, strict=True)):
        return
    reference = list(reference() if callable(reference) else reference)
    for i, (got, want, ref) in enumerate(zip(lazy, eager, reference, strict=True)):
        ref = torch.as_tensor(ref, dtype=torch.float64)
        got = torch.as_tensor(got, dtype=torch.float64)
        want = torch.as_tensor(want, dtype=torch.float64)
        lazy_error = (got - ref).abs().max().item() if ref.numel() else 0.0
        eager_error = (want - ref).abs().max().item() if ref.numel() else 0.0
        assert lazy_error <= factor * eager_error + atol, (
            f"value {i}: lazy is {lazy_error:.3g} from the float64 run, eager {eager_error:.3g}"
            f" (allowed {factor} x eager's + {atol})"
        )


def compare_training(
    optimizer_name: str,
    steps: int = 5,
    atol: float = 1e-5,
    model=None,
    workload: str = "mlp",
    device: str = "lazygen",
) -> list[int]:
    """Train the same model eagerly and lazily on ``device`` (``mark_step`` after each step);
    assert losses, parameters and buffers agree. Returns the ``UncachedCompile`` count after
    each step."""
    spec = WORKLOADS[workload]
    model = model if model is not None else spec.model()
    batches = spec.batches(steps)
    eager_losses, eager_state = train(copy.deepcopy(model), optimizer_name, batches, "cpu")
    uncached = []

    def step_fn():
        lr.mark_step()
        uncached.append(lr.metrics.counter_value("UncachedCompile") or 0)

    lazy_losses, lazy_state = train(
        copy.deepcopy(model), optimizer_name, batches, device, step_fn=step_fn
    )

    def reference():
        wide = copy.deepcopy(model).double()
        wide_batches = [(x.double(), y) for x, y in batches]
        losses, state = train(wide, optimizer_name, wide_batches, "cpu")
        return [torch.tensor(losses), *state]

    assert_as_accurate_as_eager(
        [torch.tensor(lazy_losses), *lazy_state],
        [torch.tensor(eager_losses), *eager_state],
        reference,
        atol=atol,
    )
    return uncached
