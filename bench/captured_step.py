"""A whole training step captured once with ``torch.compile``, model and state on the lazy
device, against torchax's jitted step (the anchor), eager, the lazy device and the
model-on-CPU compile route.

    OMP_NUM_THREADS=1 python bench/captured_step.py [--workloads mlp encoder gpt2]
        [--routes eager lazy-jax cpu-jax captured-jax torchax ...] [--steps 30] [--repeats 3]

Each (route, workload) pair runs in a fresh process, pairs interleaved across repeats
(A B A B: load on a shared machine varies 2x between minutes, so compare within one run),
medians printed as one Markdown table with the ratio to torchax's jitted step and to eager,
and the largest relative difference of the route's losses from eager's over the steps.

A step is: forward, loss, ``loss.backward()``, ``optimizer.step()``, ``zero_grad()``,
then the loss read on the host (``.item()``, as training loops print it). Routes:

* ``eager``: the step on CPU tensors, uncompiled.
* ``lazy-<backend>``: the step on the lazy device, uncompiled, ``mark_step()`` per step.
* ``cpu-<backend>``: ``torch.compile(step, backend="lazygen", options={"backend": ...})``
  with the model on the CPU (the compile route before the captured step).
* ``captured-<backend>``: the same ``torch.compile`` with model, optimizer state and batch
  moved to the lazy device (``lazygen.init(backend=...)``; ``model.to("lazygen")``).
* ``dynamo-floor``: the same ``torch.compile`` on the CPU model with torch's own
  ``aot_eager`` backend (Dynamo and aot_autograd, the aten graphs run eagerly): what any
  ``torch.compile`` route pays at its first step before a backend compiles anything, so the
  floor of the captured step's first step (its steady step is eager's plus the wrappers').
* ``wrapper-floor``: the same ``torch.compile`` on the CPU model through aot_autograd with
  graphs that do no work (each returns the results of its first call): Dynamo's guards,
  aot_autograd's runtime wrappers and torch.optim's own wrappers, alone. Added to the XLA
  program's own time, it is the fastest steady step any ``torch.compile`` route can reach;
  its losses do not train, so its losses column is ``-``.

  Both floors run the optimizer as the captured step does, with its ``_foreach_*`` ops
  (torch's default for the lazy device's parameters; on the CPU it would loop over them).
* ``torchax``: torchax's jitted whole step (``torchax.train.make_train_step`` with optax's
  SGD / AdamW, ``interop.jax_jit(..., donate_argnums=(0, 2))``), the anchor; skipped with a
  note when torchax is not installed (``pip install --no-deps torchax==0.0.14.dev20261026
  optax==0.2.8``: torchax 0.0.13 does not import with torch 2.13).

First steps are cold by default: each lazygen process gets an empty cache directory
(``LAZYGEN_CACHE_DIR``, Inductor's too), as torchax, which persists nothing unless its user
sets JAX's cache, starts cold. ``--caches warm`` keeps this machine's caches instead: the
first step of a second process, lazygen's persistent caches being on by default.

``--base CHECKOUT`` runs each lazygen route also from another checkout (its ``.venv``'s
interpreter and its own copy of this script), as ``<route>@base``, just before this tree's:
an A/B of two commits with the anchors measured in the same run.

Backends: ``jax``, ``torchscript``, ``inductor``. Workloads as ``bench/jax_backend.py``:
``mlp`` (784-256-10, batch 64, SGD with momentum), ``encoder`` (2-layer
``nn.TransformerEncoder``, d_model 64, AdamW), ``gpt2`` (transformers' GPT-2, 2 layers,
n_embd 64, AdamW, dropout off; ``loss_type`` set so that Dynamo does not break the graph).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from _step_workloads import WORKLOADS, make_workload, training_step

BACKENDS = ("jax", "torchscript", "inductor")
ROUTES = (
    "eager",
    *(f"{kind}-{backend}" for kind in ("lazy", "cpu", "captured") for backend in BACKENDS),
    "dynamo-floor",
    "wrapper-floor",
    "torchax",
)
ANCHORS = (
    "eager",
    "dynamo-floor",
    "wrapper-floor",
    "torchax",
)  # routes without lazygen: run once, from here
DEFAULT_ROUTES = ("eager", "lazy-jax", "cpu-jax", "captured-jax", "torchax")


def _timed(step, steps: int) -> dict:
    """First and steady step, by wall time and by the process's CPU time (all its threads:
    on a loaded machine the CPU time still says what a step costs, where waits for a core
    inflate the wall time)."""
    times, cpu, losses = [], [], []
    for _ in range(steps):
        start, start_cpu = time.perf_counter(), time.process_time()
        loss = step()
        losses.append(loss.item())
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    steady = slice(min(10, steps - 1), None) if steps > 1 else slice(None)
    return {
        "first": times[0],
        # a second compile (the step's structure at its first call differs from the
        # steady one's) shows here
        "second": times[1] if steps > 1 else float("nan"),
        "steady": statistics.median(times[steady]),
        "first_cpu": cpu[0],
        "steady_cpu": statistics.median(cpu[steady]),
        "losses": losses,
    }


def run_torch(route: str, workload: str, steps: int) -> dict:
    """One torch route in this process (see the module docstring)."""
    import torch

    import lazygen.runtime as lr

    kind, _, backend = route.partition("-")
    if kind == "dynamo":
        step = torch.compile(_cpu_step_as_captured(workload), backend="aot_eager")
        return _timed(step, steps)
    if kind == "wrapper":
        step = torch.compile(_cpu_step_as_captured(workload), backend=_no_work())
        return _timed(step, steps)
    if kind in ("lazy", "captured"):
        lr.init(backend=backend)
    step = training_step(workload, on_lazy_device=kind in ("lazy", "captured"))
    if kind == "lazy":
        uncompiled = step

        def step():
            loss = uncompiled()
            lr.mark_step()
            return loss

    elif kind in ("cpu", "captured"):
        step = torch.compile(step, backend="lazygen", options={"backend": backend})
    result = _timed(step, steps)
    if kind != "eager":
        counters = lr.metrics.counters()
        result["eager_graphs"] = counters.get("DynamoEagerGraphRun", 0)
        # parts of a captured graph run op by op at every call (``lazygen.dynamo.partition``)
        result["eager_segments"] = counters.get("DynamoEagerSegmentRun", 0)
    return result


def _cpu_step_as_captured(workload: str):
    """The workload's step on the CPU with the optimizer's implementation that the captured
    step runs: torch picks the ``_foreach_*`` ops for a PrivateUse1 device's parameters and
    the per-tensor loop for the CPU's, and Dynamo traces the loop over every parameter in
    several times the time (the floors would measure another optimizer)."""
    return training_step(workload, on_lazy_device=False, foreach=True)


def _no_work():
    """aot_autograd with forward and backward graphs that run once, then return their first
    results at every call: what ``torch.compile``'s wrappers cost around free graphs."""
    from torch._dynamo.backends.common import aot_autograd

    def compiler(graph, example_inputs):
        first: list = []

        def run(args):
            if not first:
                first.append(graph(*args))
            return first[0]

        run._boxed_call = True
        return run

    # as lazygen's backend: an optimizer's in-place writes stay in its graph (here: dropped
    # with the rest of its work) instead of an epilogue of aot_autograd's copying them back
    return aot_autograd(
        fw_compiler=compiler,
        bw_compiler=compiler,
        inference_compiler=compiler,
        keep_inference_input_mutations=True,
    )


def run_torchax(workload: str, steps: int) -> dict:
    """torchax's jitted whole step: weights and optimizer state threaded through one
    ``jax.jit`` with donation (its documented training route)."""
    import jax
    import optax
    import torchax
    from torchax import interop, train

    env = torchax.default_env()
    model, (x, y), _, (name, rate, extra), loss_of = make_workload(workload)
    torchax.enable_globally()  # this process runs torchax only: the loss is read outside
    with env:
        model.to("jax")
        if hasattr(model, "tie_weights"):
            model.tie_weights()
        jittable = interop.JittableModule(model)
        x, y = x.to("jax"), y.to("jax")
    if name == "sgd":
        optimizer = optax.sgd(rate, momentum=extra)
    else:
        optimizer = optax.adamw(rate, weight_decay=extra)

    def model_fn(weights, buffers, args):
        return loss_of(
            lambda *a, **k: jittable.functional_call("forward", weights, buffers, *a, **k), *args
        )

    opt_state = interop.call_jax(optimizer.init, jittable.params)
    step_fn = train.make_train_step(model_fn, lambda loss, _: loss, optimizer)
    jitted = interop.jax_jit(step_fn, kwargs_for_jax_jit={"donate_argnums": (0, 2)})
    state = {"params": jittable.params, "opt": opt_state}

    def step():
        with env:
            loss, state["params"], state["opt"] = jitted(
                state["params"], jittable.buffers, state["opt"], (x, y), y
            )
        return loss

    del jax  # imported to fail early, with a clear message, when JAX is missing
    return _timed(step, steps)


def _available(route: str) -> str | None:
    """Why ``route`` cannot run here (None: it can)."""
    if route == "torchax":
        try:
            import optax  # noqa: F401
            import torchax  # noqa: F401
        except ImportError as error:
            return f"not installed ({error.name})"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--routes", nargs="+", choices=ROUTES, default=list(DEFAULT_ROUTES))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--base", metavar="CHECKOUT", help="A/B: also run from this checkout")
    parser.add_argument(
        "--caches",
        choices=("cold", "warm"),
        default="cold",
        help="cold: each lazygen process starts with empty caches (default); warm: this "
        "machine's persistent caches",
    )
    parser.add_argument("--one", nargs=2, metavar=("ROUTE", "WORKLOAD"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        route, workload = args.one
        if route == "torchax":
            result = run_torchax(workload, args.steps)
        else:
            result = run_torch(route, workload, args.steps)
        print(json.dumps(result))
        return 0
    if args.base is not None and not os.path.isfile(
        os.path.join(args.base, "bench", "captured_step.py")
    ):
        parser.error(
            f"--base {args.base}: no bench/captured_step.py there (another checkout's root)"
        )
    skipped = {r: why for r in args.routes if (why := _available(r)) is not None}
    routes = [r for r in args.routes if r not in skipped]
    commands = _commands(routes, args.base)
    runs: dict = {}
    for _ in range(args.repeats):
        for workload in args.workloads:
            for label, (python, script, route) in commands.items():
                with _caches(args.caches == "cold" and route not in ANCHORS) as env:
                    done = subprocess.run(
                        [python, script, "--one", route, workload, "--steps", str(args.steps)],
                        capture_output=True, text=True, env=env,
                        cwd=os.path.dirname(os.path.dirname(script)),
                    )  # fmt: skip
                if done.returncode != 0:
                    raise SystemExit(f"{label} {workload} failed:\n{done.stderr[-3000:]}")
                runs.setdefault((workload, label), []).append(
                    json.loads(done.stdout.splitlines()[-1])
                )
    _print_table(runs, args.workloads, list(commands))
    for route, why in skipped.items():
        print(f"\n{route}: skipped, {why}")
    return 0


@contextlib.contextmanager
def _caches(cold: bool):
    """The environment of one run: with ``cold``, lazygen's and Inductor's caches in a new
    empty directory, removed afterwards; else this process's environment."""
    if not cold:
        yield None
        return
    directory = tempfile.mkdtemp(prefix="lazygen-bench-caches-")
    env = dict(os.environ, LAZYGEN_CACHE_DIR=directory)
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(directory, "inductor")
    try:
        yield env
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _commands(routes: list[str], base: str | None) -> dict[str, tuple[str, str, str]]:
    """Each row's label -> (interpreter, script, route): this tree's routes, and with
    ``base`` each lazygen route of that checkout first (``<route>@base``)."""
    commands = {}
    here = os.path.abspath(__file__)
    python = sys.executable
    if base is not None and os.path.exists(os.path.join(base, ".venv", "bin", "python")):
        python = os.path.join(base, ".venv", "bin", "python")  # its own editable install
    for route in routes:
        if base is not None and route not in ANCHORS:
            script = os.path.join(base, "bench", "captured_step.py")
            commands[f"{route}@base"] = (python, script, route)
        commands[route] = (sys.executable, here, route)
    return commands


def _print_table(runs: dict, workloads: list[str], routes: list[str]) -> None:
    print("| workload | route | first step | first vs torchax | second step "
          "| steady step (median / min) | vs torchax | vs eager "
          "| steady CPU time | CPU vs torchax | losses vs eager (max rel.) |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for workload in workloads:
        anchor = runs.get((workload, "torchax"))
        eager = runs.get((workload, "eager"))
        for route in routes:
            results = runs[(workload, route)]
            first = statistics.median(r["first"] for r in results)
            second = statistics.median(r["second"] for r in results)
            steady = statistics.median(r["steady"] for r in results)
            fastest = min(r["steady"] for r in results)

            cpu = statistics.median(r["steady_cpu"] for r in results)

            def ratio(other, value=steady, key="steady"):
                if other is None:
                    return "-"
                return f"{value / statistics.median(r[key] for r in other):.2f}x"

            drift = "-"
            if eager is not None and route != "wrapper-floor":  # its graphs do not train
                ref = eager[0]["losses"]
                drift = f"{max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(results[0]['losses'], ref, strict=False)):.1e}"  # noqa: E501
            eager_graphs = results[0].get("eager_graphs")
            note = f" ({eager_graphs} eager graph runs)" if eager_graphs else ""
            if results[0].get("eager_segments"):
                note += f" ({results[0]['eager_segments']} eager segment runs)"
            print(
                f"| {workload} | {route}{note} | {first * 1e3:.0f} ms "
                f"| {ratio(anchor, first, 'first')} | {second * 1e3:.0f} ms "
                f"| {steady * 1e3:.2f} / "
                f"{fastest * 1e3:.2f} ms | {ratio(anchor)} | {ratio(eager)} | {cpu * 1e3:.2f} ms "
                f"| {ratio(anchor, cpu, 'steady_cpu')} | {drift} |"
            )


if __name__ == "__main__":
    sys.exit(main())
