"""Real training loops for bench/real_loops.py, one implementation per fresh process.

    python bench/_real_workloads.py WORKLOAD IMPL [--steps N]   -> prints one JSON object

WORKLOAD: decoder_adamw, resnet_sgd, lstm_adam, mlp_sgd, mlp_adam, gpt2_adamw (transformers'
GPT-2 from a small config: 2 layers, n_embd 64, vocab 1000, batch 4 x 32). IMPL: `eager`, `ltc`
(torch._lazy's C++ TS backend), `lazygen-<backend>` (`lazygen-torchscript`,
`lazygen-inductor`, `lazygen-fx`), `compile` (`torch.compile` with inductor: the model's
forward and backward compiled, the optimizer eager), `dynamo-<backend>`
(`torch.compile(model, backend="lazygen")` with that lazygen backend: CPU tensors in and
out, forward and backward compiled, the optimizer eager, as for `compile`). Every step reads the loss
(`loss.item()`), as real loops do to log it; lazy steps end with `mark_step()` first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from torch import nn


def decoder_adamw():
    """2-layer TransformerDecoder (d=16, 4 heads, ff 32) + AdamW, batch 3 x 6."""
    torch.manual_seed(0)
    layer = nn.TransformerDecoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True)
    model = nn.TransformerDecoder(layer, num_layers=2)
    tgt, memory = torch.randn(3, 6, 16), torch.randn(3, 6, 16)
    target = torch.randn(3, 6, 16)

    def loss_fn(m, inputs):
        out = m(inputs[0], inputs[1])
        return nn.functional.mse_loss(out, inputs[2])

    return model, (tgt, memory, target), loss_fn, lambda p: torch.optim.AdamW(p, lr=1e-3)


class _Block(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


def resnet_sgd():
    """A small ResNet (stem, 2 residual blocks of 16 channels, pool, linear) + SGD(nesterov),
    batch 8 of 3x16x16."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        _Block(16),
        _Block(16),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    )
    data, target = torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))

    def loss_fn(m, inputs):
        return nn.functional.cross_entropy(m(inputs[0]), inputs[1])

    def optimizer(params):
        return torch.optim.SGD(params, lr=0.01, momentum=0.9, nesterov=True)

    return model, (data, target), loss_fn, optimizer


class _LSTMModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def lstm_adam():
    """2-layer LSTM (16 -> 32), sequence 12, batch 8, + Adam."""
    torch.manual_seed(0)
    model = _LSTMModel()
    data, target = torch.randn(8, 12, 16), torch.randint(0, 4, (8,))

    def loss_fn(m, inputs):
        return nn.functional.cross_entropy(m(inputs[0]), inputs[1])

    return model, (data, target), loss_fn, lambda p: torch.optim.Adam(p, lr=1e-3)


def _mlp(optimizer):
    def workload():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
        data, target = torch.randn(64, 784), torch.randint(0, 10, (64,))

        def loss_fn(m, inputs):
            return nn.functional.cross_entropy(m(inputs[0]), inputs[1])

        return model, (data, target), loss_fn, optimizer

    return workload


def gpt2_adamw():
    """transformers' GPT-2 (2 layers, n_embd 64, 4 heads, vocab 1000) + AdamW, batch 4 x 32,
    labels = inputs (its own causal LM loss). Needs transformers (a test extra)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000, n_positions=64)
    model = GPT2LMHeadModel(config)
    ids = torch.randint(0, 1000, (4, 32))

    def loss_fn(m, inputs):
        return m(inputs[0], labels=inputs[0]).loss

    return model, (ids,), loss_fn, lambda p: torch.optim.AdamW(p, lr=1e-3)


WORKLOADS = {
    "decoder_adamw": decoder_adamw,
    "gpt2_adamw": gpt2_adamw,
    "resnet_sgd": resnet_sgd,
    "lstm_adam": lstm_adam,
    "mlp_sgd": _mlp(lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9)),
    "mlp_adam": _mlp(lambda p: torch.optim.Adam(p, lr=1e-3)),
}


BACKENDS = ("torchscript", "inductor", "fx")
IMPLS = (
    ("eager", "ltc", "compile")
    + tuple(f"lazygen-{b}" for b in BACKENDS)
    + tuple(f"lazygen-{b}-reuse" for b in BACKENDS)  # with config.set_reuse_ir(True)
    + tuple(f"dynamo-{b}" for b in BACKENDS)
)


def run(workload: str, impl: str, steps: int) -> dict:
    if impl not in IMPLS:
        # An unknown name used to fall through to eager and report eager's numbers as
        # if they were the named implementation's.
        raise SystemExit(f"unknown IMPL {impl!r}: choose one of {', '.join(IMPLS)}")
    model, inputs, loss_fn, make_optimizer = WORKLOADS[workload]()
    mark_step = lambda: None  # noqa: E731
    compiles = lambda: 0  # noqa: E731
    device = torch.device("cpu")
    forward = model
    if impl.startswith("lazygen-"):
        import lazygen.runtime as lr

        backend = impl.split("-")[1]
        lr.init(backend=backend)
        lr.config.set_reuse_ir(impl.endswith("-reuse"))
        device = lr.device()
        mark_step = lr.mark_step
        # lazygen's compiles and the backend's own variants (Inductor's recompiles)
        compiles = lambda: sum(  # noqa: E731
            lr.metrics.counter_value(name) or 0 for name in ("UncachedCompile", "InductorRecompile")
        )
    elif impl == "ltc":
        from torch._lazy import metrics, ts_backend

        ts_backend.init()
        device = torch.device("lazy")
        mark_step = torch._lazy.mark_step
        compiles = lambda: metrics.counter_value("UncachedCompile") or 0  # noqa: E731
    model = model.to(device)
    inputs = tuple(t.to(device) for t in inputs)
    optimizer = make_optimizer(model.parameters())
    if impl == "compile":
        forward = torch.compile(model)
    elif impl.startswith("dynamo-"):
        import lazygen.runtime as lr

        options = {"backend": impl.split("-", 1)[1]}
        forward = torch.compile(model, backend="lazygen", options=options)
        compiles = lambda: lr.metrics.counter_value("UncachedCompile") or 0  # noqa: E731
    times, cpu, losses = [], [], []
    for _ in range(steps):
        start, start_cpu = time.perf_counter(), time.process_time()
        optimizer.zero_grad()
        loss = loss_fn(forward, inputs)
        loss.backward()
        optimizer.step()
        mark_step()
        losses.append(loss.item())  # every step reads the loss
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)  # every thread's: the host's cost
    steady = times[min(10, steps // 2) :]
    return {
        "ms_per_step": statistics.median(steady) * 1e3,
        "cpu_ms_per_step": statistics.median(cpu[min(10, steps // 2) :]) * 1e3,
        "first_step_s": times[0],
        "uncached_compiles": compiles(),
        "final_loss": losses[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("impl", choices=IMPLS)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(json.dumps(run(args.workload, args.impl, args.steps)))


if __name__ == "__main__":
    main()
