"""Train one model of the zoo eagerly and with lazygen, in this process; print one JSON line.

    python -m tests.models.worker MODEL MODE [--steps N] [--dropout-off]

MODE is ``lazy`` (the model on the lazy device, ``mark_step`` after each optimizer step),
``inductor`` (the same on the inductor backend: Inductor compiles each graph),
``compile`` (the whole training step, optimizer included, under
``torch.compile(step, backend="lazygen")`` on CPU tensors) or ``loop`` (the
lazy device in a training script's loop: gradient checkpointing, gradient clipping, then
greedy and seeded sampling ``generate``; language models only). The tests run this
in a subprocess, so that a crash of the interpreter is a failure naming the model.

Two eager references train from the same batches: one from the same initial weights, the
other from weights one ulp larger (eager's own float32 sensitivity: how far rounding alone
moves the losses and parameters of this model and optimizer)."""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import sys
import time

import torch

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
from tests.models.zoo import MODELS  # noqa: E402

LR = 1e-3


def _nudged(model: torch.nn.Module) -> torch.nn.Module:
    """A copy whose floating parameters are one ulp further from zero."""
    nudged = copy.deepcopy(model)
    with torch.no_grad():
        for p in nudged.parameters():
            if p.is_floating_point():
                p.copy_(torch.nextafter(p, torch.where(p >= 0, float("inf"), float("-inf"))))
    return nudged


def train(model, batches, device, *, compiled=False, after_step=None, loop=False):
    """AdamW for one step per batch, dropout on (seeded: random ops draw eager's numbers on
    the lazy device too). Returns the losses (read every step, as a training loop prints
    them), the final parameters and buffers (CPU, float64) and each step's seconds.
    ``loop``: as training scripts do, with gradient checkpointing and gradient clipping,
    then greedy decoding and seeded sampling (their tokens are returned as the state's
    ``generated`` and ``sampled``)."""
    model = model.to(device)
    model.train()
    if loop:
        model.gradient_checkpointing_enable()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)

    def step(inputs: dict):
        optimizer.zero_grad()
        loss = model(**inputs).loss
        loss.backward()
        if loop:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss

    # compiled: forward, backward and AdamW's step all run as lazygen graphs
    run = torch.compile(step, backend="lazygen") if compiled else step
    torch.manual_seed(1234)
    losses, times = [], []
    for batch in batches:
        start = time.perf_counter()
        loss = run({k: v.to(device) for k, v in batch.items()})
        if after_step is not None:
            after_step()
        losses.append(float(loss.detach().cpu()))
        times.append(time.perf_counter() - start)
    state = {n: t.detach().cpu().double() for n, t in model.state_dict().items()}
    if loop:
        model.eval()
        prompt = batches[0]["input_ids"][:1, :4].to(device)
        with torch.no_grad():
            tokens = model.generate(prompt, max_new_tokens=6, do_sample=False, pad_token_id=0)
            torch.manual_seed(5)  # sampling draws eager's numbers on the lazy device too
            sampled = model.generate(
                prompt, max_new_tokens=6, do_sample=True, top_k=20, top_p=0.9, pad_token_id=0
            )
        state["generated"] = tokens.cpu().double()
        state["sampled"] = sampled.cpu().double()
    return losses, state, times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("mode", choices=("lazy", "inductor", "compile", "loop"))
    parser.add_argument("--steps", type=int, default=5)
    # For backends that draw their own random numbers (``Backend.random_numbers = "seed"``:
    # the jax backend), whose dropout masks differ from eager's by design.
    parser.add_argument(
        "--dropout-off", action="store_true", help="every nn.Dropout and dropout rate 0"
    )
    args = parser.parse_args(argv)
    spec = MODELS[args.model]
    reason = None
    if importlib.util.find_spec(spec.package) is None:
        reason = f"{spec.package} is not installed ({spec.why_not_installed})"
    reason = reason or spec.unavailable()
    if reason is not None:
        print(json.dumps({"skip": reason}), flush=True)
        return 0

    import lazygen.runtime as lr

    lr.init(backend="inductor" if args.mode == "inductor" else None)
    torch.manual_seed(0)
    model = spec.build()
    if args.dropout_off:
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
            for rate in ("dropout", "attention_dropout"):  # a rate given to F.dropout (T5)
                if type(getattr(module, rate, None)) is float:
                    setattr(module, rate, 0.0)
    generator = torch.Generator().manual_seed(1)
    batches = [spec.batch(generator) for _ in range(args.steps)]

    loop = args.mode == "loop"  # the lazy device in a training script's loop
    eager = train(copy.deepcopy(model), batches, "cpu", loop=loop)
    nudged = train(_nudged(model), batches, "cpu", loop=loop)

    lr.mark_step()
    lr.metrics.reset()
    per_step = []

    def after_step():
        if args.mode != "compile":
            lr.mark_step()
        per_step.append(lr.metrics.counters())

    compiled = args.mode == "compile"
    device = "cpu" if compiled else lr.device()
    got = train(
        copy.deepcopy(model), batches, device, compiled=compiled, after_step=after_step, loop=loop
    )
    lr.wait_device_ops()
    counters = lr.metrics.counters()
    report = ""
    if args.mode == "compile":
        import lazygen.dynamo as ld

        report = ld.report()

    def diffs(run):
        return {
            "losses": [abs(a - b) for a, b in zip(run[0], eager[0], strict=True)],
            "state": {n: float((t - eager[1][n]).abs().max()) for n, t in run[1].items()},
        }

    def per_step_counts(name):
        return [c.get(name, 0) for c in per_step]

    print(
        json.dumps(
            {
                "model": args.model,
                "mode": args.mode,
                "losses": got[0],
                "eager_losses": eager[0],
                "diff": diffs(got),
                "sensitivity": diffs(nudged),
                "ms_per_step": [1e3 * t for t in got[2]],
                "eager_ms_per_step": [1e3 * t for t in eager[2]],
                "fallbacks": {k: v for k, v in counters.items() if k.startswith("aten::")},
                "compiles": per_step_counts("UncachedCompile"),
                "backend_recompiles": per_step_counts("InductorRecompile"),
                "captures": per_step_counts("DynamoCapture"),
                "counters": {
                    k: v
                    for k, v in counters.items()
                    if k.startswith(("Dynamo", "CachedCompile", "UncachedCompile", "RandomSync"))
                },
                "dynamo_report": report,
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
