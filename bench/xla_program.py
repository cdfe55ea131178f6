"""The XLA program of a training step timed alone, against the whole step: lazygen's captured
step on jax and torchax's jitted step, so that what separates the two routes' steady steps is
split into the device program and the host work around it.

    OMP_NUM_THREADS=1 python bench/xla_program.py [--workloads encoder gpt2] [--steps 60]
        [--repeats 2]

Each (route, workload) runs in a fresh process, routes interleaved across repeats. In the
process, every call of the step's compiled XLA program (lazygen's ``JaxExecutable``,
torchax's ``jax.jit`` function) is timed from its dispatch until its results are ready
(``jax.block_until_ready``): the program's run plus its dispatch. The step is timed as in
``bench/captured_step.py`` (loss read on the host every step). "host" is the step's median
less the program's: lazygen's recording, Dynamo's and aot_autograd's wrappers, torch.optim's
wrappers for the captured step; torchax's tracing-free jitted call for the anchor. Blocking
right after the dispatch moves no work: the step reads its loss at its end anyway.

Read with ``bench/captured_step.py``'s ``wrapper-floor`` row: the floor of any
``torch.compile`` route's steady step is that row plus the program's time here.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from _step_workloads import WORKLOADS, training_step
from captured_step import _timed, run_torchax

ROUTES = ("captured-jax", "torchax")


def _program_timer(times: list[float]):
    """Wrap a callable that dispatches an XLA program so that each call is timed until its
    results are ready, appending seconds to ``times``."""
    import jax

    def wrap(call):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            results = call(*args, **kwargs)
            jax.block_until_ready(results)
            times.append(time.perf_counter() - start)
            return results

        return timed

    return wrap


def run_one(route: str, workload: str, steps: int) -> dict:
    """One route in this process: the step's times and its programs' times."""
    programs: list[float] = []
    wrap = _program_timer(programs)
    if route == "torchax":
        import jax

        plain_jit = jax.jit
        # torchax's ``interop.jax_jit`` looks ``jax.jit`` up at each call
        jax.jit = lambda *args, **kwargs: wrap(plain_jit(*args, **kwargs))
        try:
            result = run_torchax(workload, steps)
        finally:
            jax.jit = plain_jit
    else:
        import torch

        import lazygen.runtime as lr
        from lazygen.runtime.backends.jax.backend import JaxExecutable

        lr.init(backend="jax")
        JaxExecutable.__call__ = wrap(JaxExecutable.__call__)
        step = training_step(workload, on_lazy_device=True)
        step = torch.compile(step, backend="lazygen", options={"backend": "jax"})
        result = _timed(step, steps)
    if len(programs) < steps:
        raise SystemExit(
            f"{route} {workload}: {len(programs)} programs timed in {steps} steps; this "
            "route's jit entry point moved (torchax's interop.jax_jit or lazygen's "
            "JaxExecutable): update bench/xla_program.py"
        )
    per_step = len(programs) // steps
    steady = programs[min(10, steps - 1) * per_step :]
    result["programs_per_step"] = per_step
    result["program"] = statistics.median(steady) * per_step
    result["program_min"] = min(steady) * per_step
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=["encoder", "gpt2"])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--one", nargs=2, metavar=("ROUTE", "WORKLOAD"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(*args.one, args.steps)))
        return 0
    try:
        import optax  # noqa: F401
        import torchax  # noqa: F401
    except ImportError as error:
        raise SystemExit(
            f"bench/xla_program.py needs torchax ({error.name} is missing): pip install "
            "--no-deps torchax==0.0.14.dev20261026 optax==0.2.8"
        ) from None
    runs: dict = {}
    for _ in range(args.repeats):
        for workload in args.workloads:
            for route in ROUTES:
                done = subprocess.run(
                    [sys.executable, __file__, "--one", route, workload]
                    + ["--steps", str(args.steps)],
                    capture_output=True,
                    text=True,
                )
                if done.returncode != 0:
                    raise SystemExit(f"{route} {workload} failed:\n{done.stderr[-3000:]}")
                runs.setdefault((workload, route), []).append(
                    json.loads(done.stdout.splitlines()[-1])
                )
    print("| workload | route | programs a step | program (median / min) | step (median) "
          "| host (step - program) |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|")
    for workload in args.workloads:
        for route in ROUTES:
            results = runs[(workload, route)]
            program = statistics.median(r["program"] for r in results)
            fastest = min(r["program_min"] for r in results)
            step = statistics.median(r["steady"] for r in results)
            print(
                f"| {workload} | {route} | {results[0]['programs_per_step']} "
                f"| {program * 1e3:.2f} / {fastest * 1e3:.2f} ms | {step * 1e3:.2f} ms "
                f"| {(step - program) * 1e3:.2f} ms |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
