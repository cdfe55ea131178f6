"""torch.compile(backend="lazygen") next to eager and torch.compile's own Inductor.

    python bench/compile_backend.py [--steps 30] [--workloads mlp_sgd,gpt2,...]
                                    [--impls eager,lazygen-torchscript,lazygen-inductor,inductor,
                                             inductor-eager-random]
                                    [--backward traced|graph-break] [--repeats 1]

The whole training step is compiled (``zero_grad``, forward, ``loss.backward()``, the loss
detached, ``optimizer.step()``), the loss read every step. With ``--backward traced`` (the
default) Dynamo traces ``loss.backward()`` into the forward's graph
(``torch._dynamo.config.trace_autograd_ops``), so a step is two graphs: forward with
backward, and the optimizer's step; ``graph-break`` measures Dynamo's default, which breaks
the step at ``backward()`` (three graphs: forward, backward, optimizer). Both settings
apply to every compiled implementation alike. Workloads: the real-loop workloads of
``bench/_real_workloads.py`` (decoder_adamw, resnet_sgd, lstm_adam, mlp_sgd, mlp_adam),
``mlp_tiny`` (16-32-4, batch 8, SGD with momentum: a step so small that the per-call cost
of a compiled step is what it measures; at least 1000 steps), and the transformers models of
the test suite's zoo (``tests/models/zoo.py``: gpt2, llama, t5, bert; small configs, batch
2 x 8, AdamW), skipped when transformers is not installed.

A run whose step changed no parameter fails (``check_trained``): its compiled program lost
the backward or the update and its time is not a training step's. (GPT-2's forward used to
log a warning, a graph break before ``loss.backward()`` across which Dynamo with
``trace_autograd_ops`` drops the backward; its model is given its loss type explicitly.)

Implementations: ``eager``; ``lazygen-<backend>`` (``torch.compile(step, backend="lazygen",
options={"backend": <backend>})``); ``inductor`` (``torch.compile(step)``);
``inductor-eager-random`` (the same with ``torch._inductor.config.fallback_random``: Inductor
under lazygen's contract, random ops drawing eager's numbers from eager's generator, where
plain Inductor generates its own in its kernels; the steps with dropout, the transformers
models', pay for it as lazygen's do). Each (workload,
implementation) runs in a fresh process, 1 thread, with empty Inductor caches
(``TORCHINDUCTOR_CACHE_DIR`` a new directory; ``--warm-cache`` keeps the user's).
``--repeats N`` runs each N times, the implementations taking turns (later runs reuse the
first run's cache). Reported: the first step (Dynamo, aot_autograd, capture and compile)
and the median of the steps after the fifth (with repeats, the least of the runs' medians:
a few milliseconds a step differ by 10% from one run to the next on a shared machine), with
ratios against eager and against Inductor measured in the same run, and their geometric
means over the workloads every implementation ran. Goals (issue #27): first step at most
1/5 of Inductor's; steady step at most eager's with TorchScript, at most Inductor's with
lazygen's inductor backend (the ratio to ``inductor-eager-random`` is the same comparison
under one contract for random numbers).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _real_workloads
import torch
import torch._dynamo
import torch._inductor.config

ROOT = Path(__file__).resolve().parents[1]
REAL = tuple(_real_workloads.WORKLOADS)
TINY = "mlp_tiny"
TINY_STEPS = 1000  # its steady median needs many steps: one takes a fraction of a millisecond
TRANSFORMERS = ("gpt2", "llama", "t5", "bert")
WORKLOADS = REAL + (TINY,) + TRANSFORMERS
BACKWARD = ("traced", "graph-break")
IMPLS = ("eager", "lazygen-torchscript", "lazygen-inductor", "inductor", "inductor-eager-random")
SAME_CONTRACT = "inductor-eager-random"
WARMUP = 5  # steps left out of the steady median (first captures, optimizer state)


def _training_step(model, optimizer, loss_of, detach: bool):
    """The step every workload compiles. With backward traced the loss is detached before
    the optimizer's step: Dynamo breaks the graph around ``optimizer.step()``, and a loss that
    still has its ``grad_fn`` there would be an output of the graph that traced
    ``backward()``, which Dynamo refuses, breaking at ``backward()`` instead. With Dynamo's
    default the step is the plain one (a detach would be one more, empty, graph)."""

    def step():
        optimizer.zero_grad()
        loss = loss_of(model)
        loss.backward()
        if detach:
            loss = loss.detach()
        optimizer.step()
        return loss

    step.parameters = [p for group in optimizer.param_groups for p in group["params"]]
    return step


def _real_step(name: str, detach: bool):
    model, inputs, loss_fn, make_optimizer = _real_workloads.WORKLOADS[name]()
    optimizer = make_optimizer(model.parameters())
    return _training_step(model, optimizer, lambda m: loss_fn(m, inputs), detach)


def _tiny_step(detach: bool):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    data, target = torch.randn(8, 16), torch.randint(0, 4, (8,))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return _training_step(
        model, optimizer, lambda m: torch.nn.functional.cross_entropy(m(data), target), detach
    )


def _transformers_step(name: str, detach: bool):
    """A model of the test suite's zoo (one definition of the small configs)."""
    sys.path.insert(0, str(ROOT))
    from tests.models.zoo import MODELS

    torch.manual_seed(0)
    model = MODELS[name].build()
    model.train()
    batch = MODELS[name].batch(torch.Generator().manual_seed(1))
    if getattr(model, "loss_type", "") is None:
        # No loss type transformers recognises for this class (GPT2LMHeadModel): every
        # forward would log a warning, a graph break between the forward and
        # ``loss.backward()``, across which Dynamo (torch 2.13) with trace_autograd_ops drops
        # the backward without a word (no gradient, no update). The loss transformers falls
        # back to, given explicitly: the same loss, one graph.
        model.loss_type = "ForCausalLM"
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return _training_step(model, optimizer, lambda m: m(**batch).loss, detach)


def _step(workload: str, detach: bool):
    if workload in TRANSFORMERS:
        return _transformers_step(workload, detach)
    if workload == TINY:
        return _tiny_step(detach)
    return _real_step(workload, detach)


def compiled(step, impl: str):
    """``step`` as implementation ``impl`` runs it (``IMPLS``)."""
    if impl.startswith("lazygen-"):
        return torch.compile(step, backend="lazygen", options={"backend": impl[8:]})
    if impl in ("inductor", SAME_CONTRACT):
        # read when Inductor compiles: each step keeps the setting it was compiled with
        torch._inductor.config.fallback_random = impl == SAME_CONTRACT
        return torch.compile(step)
    if impl != "eager":
        raise SystemExit(f"unknown implementation {impl!r}: choose from {', '.join(IMPLS)}")
    return step


def run_one(workload: str, impl: str, steps: int, backward: str) -> dict:
    torch.set_num_threads(1)
    traced = backward == "traced"
    torch._dynamo.config.trace_autograd_ops = traced
    step = _step(workload, detach=traced)
    parameters = step.parameters
    if workload == TINY:
        steps = max(steps, TINY_STEPS)
    step = compiled(step, impl)
    before = [p.detach().clone() for p in parameters]
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step().item()
        times.append(time.perf_counter() - start)
    check_trained(f"{workload} {impl}", parameters, before)
    result = {"first_s": times[0], "steady_ms": statistics.median(times[WARMUP:]) * 1e3}
    if impl.startswith("lazygen-"):
        import lazygen.runtime as lr

        counters = lr.metrics.counters()
        result["captures"] = counters.get("DynamoCapture", 0)
        result["eager_graphs"] = counters.get("DynamoEagerGraph", 0)
        result["graph_runs_per_step"] = counters.get("DynamoGraphRun", 0) / steps
    return result


def check_trained(name: str, parameters: list, before: list) -> None:
    """A step that updated no parameter measured something else than a training step (a
    backward dropped by the compiler): fail the run instead of reporting its time."""
    if all(torch.equal(p.detach(), b) for p, b in zip(parameters, before, strict=True)):
        raise SystemExit(
            f"{name}: the step did not train (no parameter changed): its compiled program "
            "lost the backward or the optimizer's update; fix that before timing it"
        )


def _available(workload: str, impl: str) -> str | None:
    """Why (workload, impl) cannot run here, or None."""
    if workload in TRANSFORMERS and importlib.util.find_spec("transformers") is None:
        return "transformers is not installed"
    if impl.startswith("lazygen-"):
        from lazygen.runtime.backends import BUILTIN

        target = BUILTIN.get(impl[8:])
        if target is not None and importlib.util.find_spec(target.partition(":")[0]) is None:
            return "backend not in this build"
    return None


def _child(
    workload: str, impl: str, steps: int, timeout: float, cache_dir: str | None, backward: str
) -> dict | None:
    """One (workload, implementation) run in a fresh process; ``cache_dir`` is Inductor's
    on-disk cache for it (None: the user's)."""
    why = _available(workload, impl)
    if why is not None:
        print(f"  {workload} {impl}: skipped ({why})", file=sys.stderr)
        return None
    cmd = [sys.executable, __file__, "--child", workload, impl, "--steps", str(steps)]
    cmd += ["--backward", backward]
    env = dict(os.environ)
    if cache_dir is not None:
        env["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        print(f"  {workload} {impl}: over {timeout:.0f} s, left out", file=sys.stderr)
        return None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {workload} {impl}: failed ({tail})", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _measure(workload: str, impls: list[str], args) -> dict[str, dict | None]:
    """Each implementation's result on ``workload``, from ``args.repeats`` runs taken in
    turns (every implementation once, then again), so that a slow spell of the machine
    falls on all of them rather than on one. The first run of each starts with empty
    Inductor caches (unless ``--warm-cache``) and gives the first step; later runs reuse
    that run's cache. The steady step is the least of the runs' medians: a steady step
    is never faster than the program allows, only slowed by what else runs."""
    cold = not args.warm_cache
    caches = {impl: tempfile.mkdtemp(prefix="compile_backend_") if cold else None for impl in impls}
    runs: dict[str, list[dict]] = {impl: [] for impl in impls}
    try:
        for attempt in range(args.repeats):
            for impl in impls:
                if attempt and not runs[impl]:  # failed or skipped the first time
                    continue
                r = _child(workload, impl, args.steps, args.timeout, caches[impl], args.backward)
                if r is not None:
                    runs[impl].append(r)
    finally:
        for cache in caches.values():
            if cache is not None:
                shutil.rmtree(cache, ignore_errors=True)
    results: dict[str, dict | None] = {}
    for impl, done in runs.items():
        if not done:
            results[impl] = None
            continue
        steady = [r["steady_ms"] for r in done]
        results[impl] = dict(done[0], steady_ms=min(steady), steady_runs=steady)
    return results


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def _ratio(value: float | None, anchor: float | None) -> str:
    return f"{value / anchor:.2f}x" if value and anchor else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--impls", default=",".join(IMPLS))
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--timeout", type=float, default=900, help="seconds per process")
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="runs per (workload, implementation), taken in turns; the steady step is the "
        "least of their medians, the first step the first run's",
    )
    parser.add_argument(
        "--warm-cache",
        action="store_true",
        help="keep Inductor's on-disk caches (default: each process starts with empty ones)",
    )
    parser.add_argument(
        "--backward",
        choices=BACKWARD,
        default="traced",
        help="traced: Dynamo traces loss.backward() into the forward's graph "
        "(torch._dynamo.config.trace_autograd_ops); graph-break: Dynamo's default",
    )
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "IMPL"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(*args.child, args.steps, args.backward)))
        return
    impls = args.impls.split(",")
    print(
        f"compile_backend: whole step compiled, {args.steps} steps, 1 thread; "
        f"steady = median of steps {WARMUP + 1}..{args.steps}"
        f"{f', least of {args.repeats} runs taken in turns' if args.repeats > 1 else ''}; "
        "Inductor caches "
        f"{'kept' if args.warm_cache else 'empty in each process'}; backward "
        f"{args.backward}\n"
    )
    same = SAME_CONTRACT in impls  # one more steady-step column, and its mean
    extra = (" vs inductor-eager-random |", "---:|") if same else ("", "")
    print(
        "| workload | impl | first step | vs inductor | steady | vs eager | vs inductor |"
        f"{extra[0]} notes |"
    )
    print(f"|---|---|---:|---:|---:|---:|---:|{extra[1]}---|")
    table: dict[str, dict[str, dict]] = {}
    for workload in args.workloads.split(","):
        results = _measure(workload, impls, args)
        table[workload] = {k: v for k, v in results.items() if v is not None}
        eager = (results.get("eager") or {}).get("steady_ms")
        inductor = results.get("inductor") or {}
        contract = (results.get(SAME_CONTRACT) or {}).get("steady_ms")
        for impl, r in results.items():
            if r is None:
                continue
            notes = ""
            if "captures" in r:
                notes = (
                    f"{r['captures']} captures, {r['graph_runs_per_step']:.0f} graphs/step, "
                    f"{r['eager_graphs']} eager graphs"
                )
            if len(r.get("steady_runs", ())) > 1:
                runs = r["steady_runs"]
                spread = f"runs {min(runs):.2f}-{max(runs):.2f} ms"
                notes = f"{notes}; {spread}" if notes else spread
            column = f" {_ratio(r['steady_ms'], contract)} |" if same else ""
            print(
                f"| {workload} | {impl} | {r['first_s']:.2f} s "
                f"| {_ratio(r['first_s'], inductor.get('first_s'))} "
                f"| {r['steady_ms']:.2f} ms | {_ratio(r['steady_ms'], eager)} "
                f"| {_ratio(r['steady_ms'], inductor.get('steady_ms'))} |{column} {notes} |",
                flush=True,
            )
    complete = [w for w, r in table.items() if all(i in r for i in impls)]
    print(f"\ngeometric means over {len(complete)} workloads run by every implementation:")
    for impl in impls:
        parts = []
        for anchor, key, label in (
            ("inductor", "first_s", "first step vs inductor"),
            ("eager", "steady_ms", "steady vs eager"),
            ("inductor", "steady_ms", "steady vs inductor"),
            (SAME_CONTRACT, "steady_ms", f"steady vs {SAME_CONTRACT}"),
        ):
            if anchor in impls and impl != anchor:
                mean = _geomean([table[w][impl][key] / table[w][anchor][key] for w in complete])
                parts.append(f"{label} {mean:.2f}x")
        if parts:
            print(f"  {impl}: {', '.join(parts)}")


if __name__ == "__main__":
    main()
