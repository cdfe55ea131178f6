"""Graph identity across steps: a training step compiles once; scalars are data."""

import torch

import lazygen.runtime as lr
from lazygen.runtime.execution import executor


def _train(optimizer: str, steps: int) -> int:
    torch.manual_seed(0)
    device = lr.device()
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)
    ).to(device)
    data, target = torch.randn(16, 64).to(device), torch.randint(0, 10, (16,)).to(device)
    if optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    lr.mark_step()
    lr.metrics.reset()
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(data), target).backward()
        opt.step()
        lr.mark_step()
    return lr.metrics.counter_value("UncachedCompile") or 0


def test_sgd_training_compiles_twice_in_30_steps():
    # Step 1 has no momentum buffers yet; every later step is the same graph.
    assert _train("sgd", 30) <= 2


def test_adam_step_count_and_bias_corrections_do_not_recompile():
    assert _train("adam", 30) <= 2


def test_graph_key_ignores_data_values_and_live_order():
    keys = []
    original = executor.compile_cached

    def record(device, key, order, outputs):
        keys.append(key)
        return original(device, key, order, outputs)

    executor.compile_cached = record
    try:
        for step in range(3):
            a = torch.full((4,), float(step), device="lazygen")
            b = [a * (i + step * 0.5) for i in range(5)]  # scalars change every step
            c = b[3] + b[1]
            del b[2]
            lr.mark_step()
            del a, c
    finally:
        executor.compile_cached = original
    assert keys[1] == keys[2]
