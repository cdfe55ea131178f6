"""The whole training step under ``torch.compile(step, backend="lazygen")``.

    python examples/compile/train_step.py [--optimizer adamw] [--steps 20] [--no-foreach]
                                          [--break-at-backward]

Forward, ``loss.backward()``, ``optimizer.step()`` and ``zero_grad()`` are one compiled
function. With ``torch._dynamo.config.trace_autograd_ops = True`` Dynamo traces
``loss.backward()`` into the forward's graph, and breaks the step only around the
optimizer's step: two lazygen graphs per step, forward with backward, and the optimizer's
step, which updates parameters and optimizer state in place. The loss is detached before
``optimizer.step()``: a loss that keeps its ``grad_fn`` past that graph break makes Dynamo
break at ``backward()`` instead. With ``--break-at-backward`` (Dynamo's default) the step is
three lazygen graphs: forward, the backward aot_autograd derives from it, and the optimizer
step. Each graph is traced once into lazygen IR, compiled by the lazy device's backend, and
replayed at every later step; none runs eagerly. The script trains an eager copy alongside
and prints the largest parameter difference and lazygen's counters.
"""

from __future__ import annotations

import argparse
import copy

import torch
import torch._dynamo

import lazygen.dynamo
import lazygen.runtime as lr

OPTIMIZERS = {
    "sgd": lambda params, foreach: torch.optim.SGD(params, lr=0.05, momentum=0.9, foreach=foreach),
    "adam": lambda params, foreach: torch.optim.Adam(params, lr=1e-3, foreach=foreach),
    "adamw": lambda params, foreach: torch.optim.AdamW(params, lr=1e-3, foreach=foreach),
}


def make_step(model, optimizer, x, y, detach: bool = True):
    def step():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if detach:  # lets Dynamo keep backward() in the forward's graph
            loss = loss.detach()
        optimizer.step()
        return loss

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="adamw")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--no-foreach", action="store_true", help="per-tensor optimizer loop")
    parser.add_argument("--backend", default=None, help="lazygen backend (torchscript, ...)")
    parser.add_argument(
        "--break-at-backward",
        action="store_true",
        help="Dynamo's default: backward() is a graph of its own (three graphs per step)",
    )
    args = parser.parse_args()
    torch._dynamo.config.trace_autograd_ops = not args.break_at_backward

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    reference = copy.deepcopy(model)
    x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))
    foreach = not args.no_foreach
    detach = not args.break_at_backward
    step = make_step(model, OPTIMIZERS[args.optimizer](model.parameters(), foreach), x, y, detach)
    eager_step = make_step(
        reference, OPTIMIZERS[args.optimizer](reference.parameters(), foreach), x, y
    )

    options = {"backend": args.backend} if args.backend else None
    compiled = torch.compile(step, backend="lazygen", options=options)
    for i in range(args.steps):
        loss, eager_loss = compiled(), eager_step()
        if i % 5 == 0 or i == args.steps - 1:
            print(f"step {i:3d}  loss {loss.item():.6f}  eager {eager_loss.item():.6f}")

    diff = max(
        (p - q).abs().max().item()
        for p, q in zip(model.parameters(), reference.parameters(), strict=True)
    )
    counters = lr.metrics.counters()
    print(f"largest parameter difference from eager: {diff:.3g}")
    print(
        f"captures {counters.get('DynamoCapture', 0)}, graph runs "
        f"{counters.get('DynamoGraphRun', 0)} ({args.steps} steps), "
        f"graphs run eagerly {counters.get('DynamoEagerGraph', 0)}"
    )
    print(lazygen.dynamo.report(), end="")


if __name__ == "__main__":
    main()
