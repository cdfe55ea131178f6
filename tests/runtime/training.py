"""Lazy-vs-eager training comparison, shared by the runtime and generated-kernel tests."""

from __future__ import annotations

import copy

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


def make_batches(steps: int, batch: int = 8, features: int = 20, classes: int = 4, seed: int = 1):
    generator = torch.Generator().manual_seed(seed)
    return [
        (
            torch.randn(batch, features, generator=generator),
            torch.randint(0, classes, (batch,), generator=generator),
        )
        for _ in range(steps)
    ]


def train(model, optimizer_name: str, batches, device: str, step_fn=None):
    """Train ``model`` on ``device``; returns (losses, final parameters on CPU)."""
    model = model.to(device)
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
    return [float(loss.cpu()) for loss in losses], [p.detach().cpu() for p in model.parameters()]


def compare_training(optimizer_name: str, steps: int = 5, atol: float = 1e-5, model=None):
    """Train the same MLP eagerly and lazily; assert losses and parameters agree."""
    model = model if model is not None else make_mlp()
    batches = make_batches(steps)
    eager_losses, eager_params = train(copy.deepcopy(model), optimizer_name, batches, "cpu")
    lazy_losses, lazy_params = train(
        copy.deepcopy(model), optimizer_name, batches, "lazygen", step_fn=lr.mark_step
    )
    torch.testing.assert_close(lazy_losses, eager_losses, atol=atol, rtol=0)
    for lazy, eager in zip(lazy_params, eager_params, strict=True):
        torch.testing.assert_close(lazy, eager, atol=atol, rtol=0)
    return lazy_losses
