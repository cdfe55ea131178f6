"""The main job: regenerate the TS backend, then train a small model on the lazy device.

    python -m lazygen.demo [--steps 10] [--optimizer sgd|adam] [--ir-picture FILE.svg]

Prints the loss per step next to eager CPU's, the compile counts, a short metrics report,
and writes an IR picture of one step when Graphviz's `dot` is installed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def regenerate() -> None:
    """`lazygen gen` for the repository's built-in op list (skipped when inputs are unchanged)."""
    from lazygen.cli import main as cli_main

    yaml_path = REPO_ROOT / "yaml" / "builtin.yaml"
    output = REPO_ROOT / "generated" / "builtin"
    code = cli_main(["gen", str(yaml_path), "--output-dir", str(output)])
    if code != 0:
        raise SystemExit(code)


def make_model_and_data(device, seed: int = 0):
    import torch

    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    data = torch.randn(32, 64)
    target = torch.randint(0, 10, (32,))
    return model.to(device), data.to(device), target.to(device)


def make_optimizer(name: str, params):
    import torch

    if name == "adam":
        return torch.optim.Adam(params, lr=1e-2)
    return torch.optim.SGD(params, lr=0.05, momentum=0.9)


def train(steps: int, optimizer: str, ir_picture: Path | None) -> float:
    """Train lazily and eagerly side by side; returns the largest loss difference."""
    import torch

    import lazygen.runtime as lr

    lr.init()
    device = lr.device()
    eager_model, eager_x, eager_y = make_model_and_data("cpu")
    lazy_model, lazy_x, lazy_y = make_model_and_data(device)
    eager_opt = make_optimizer(optimizer, eager_model.parameters())
    lazy_opt = make_optimizer(optimizer, lazy_model.parameters())
    loss_fn = torch.nn.CrossEntropyLoss()
    lr.metrics.reset()
    backend = lr.backend().name
    print(
        f"\ntraining an MLP 64-128-10 with {optimizer} on {device}, backend {backend} "
        "(eager CPU alongside; LAZYGEN_BACKEND chooses the backend)"
    )
    worst = 0.0
    print(f"{'step':>4} {'lazy loss':>12} {'eager loss':>12} {'uncached compiles':>18}")
    for step in range(steps):
        for model, x, y, opt, lazy in (
            (lazy_model, lazy_x, lazy_y, lazy_opt, True),
            (eager_model, eager_x, eager_y, eager_opt, False),
        ):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            if lazy and step == 0 and ir_picture is not None:
                _write_picture(lr, [p.grad for p in model.parameters()], ir_picture)
            opt.step()
            if lazy:
                lr.mark_step()
                lazy_loss = loss.item()
            else:
                eager_loss = loss.item()
        compiles = lr.metrics.counter_value("UncachedCompile") or 0
        print(f"{step:>4} {lazy_loss:>12.6f} {eager_loss:>12.6f} {compiles:>18}")
        worst = max(worst, abs(lazy_loss - eager_loss))
    print(
        "\ncompiles: uncached",
        lr.metrics.counter_value("UncachedCompile") or 0,
        "cached",
        lr.metrics.counter_value("CachedCompile") or 0,
    )
    print("\n" + lr.metrics.report())
    print(f"largest difference from eager's loss: {worst:.2e} (backend {backend})")
    return worst


def _write_picture(lr, tensors, path: Path) -> None:
    if shutil.which("dot") is None:
        print(f"(Graphviz 'dot' not installed: no IR picture written to {path})")
        return
    lr.debug.render_ir(tensors, str(path))
    print(f"IR picture of the backward pass written to {path}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    parser.add_argument("--ir-picture", type=Path, default=Path("lazygen-ir.svg"))
    parser.add_argument("--no-gen", action="store_true", help="skip regenerating the backend")
    args = parser.parse_args(argv)
    if not args.no_gen:
        regenerate()
    worst = train(args.steps, args.optimizer, args.ir_picture)
    if worst > 1e-4:
        print("lazy losses differ from eager's", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
