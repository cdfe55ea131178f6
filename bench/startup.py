"""Start-up: import, init and the first two steps, in fresh processes, cold and warm caches.

    python bench/startup.py [--repeats 3] [--backends torchscript jax] [--steps 2]

Each row is a fresh process, timed inside it from the interpreter's start, with its anchor
measured in the same run, interleaved (cold, warm, anchor, for each backend, every
repeat):

* ``anchor torch``: ``import torch`` alone (the default backend's anchor);
* ``anchor jax``: ``import torch``, then ``import jax`` and JAX's client start (a first
  array on its default device): the jax backend's anchor;
* ``lazygen <backend>``: ``import torch``, then ``import lazygen.runtime`` and
  ``init(backend=...)`` ("import + init" is the part after torch's import), then the first
  two training steps of the encoder + AdamW of ``bench/jax_backend.py`` on the lazy device
  (forward, backward, AdamW's step, ``mark_step()``, the loss read).

``cold`` runs in an empty cache directory (``XDG_CACHE_HOME``, which holds lazygen's
persistent caches, and Inductor's directory); ``warm`` is the next process on that
directory. Goals (issue #51): import + init within 0.5 s of the anchor's import; warm first
two steps at most 25% of cold. Child processes write bytecode (``PYTHONDONTWRITEBYTECODE``
is dropped, as for an installed package, whose ``.pyc`` files pip writes) and one unmeasured
process per backend runs first, so no row pays compiling lazygen's sources.
"""

from __future__ import annotations

import time

_START = time.perf_counter()  # noqa: E402 - the worker's clock starts before any import

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

BACKENDS = ("torchscript", "jax")


def worker(kind: str, steps: int) -> dict:
    """One measured process: ``anchor-torch``, ``anchor-jax`` or ``lazygen-<backend>``."""
    times: dict[str, float] = {}
    import torch

    times["torch"] = time.perf_counter() - _START
    mark = time.perf_counter()
    if kind == "anchor-torch":
        return times
    if kind == "anchor-jax":
        import jax
        import jax.numpy as jnp

        jnp.zeros(()).block_until_ready()
        times["import_init"] = time.perf_counter() - mark
        times["client"] = jax.devices()[0].platform
        return times
    import lazygen.runtime as lr

    lr.init(backend=kind.removeprefix("lazygen-"))
    times["import_init"] = time.perf_counter() - mark
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from jax_backend import _workload

    model, (x, y), make_optimizer, _ = _workload("encoder")
    model = model.to("lazygen")
    optimizer = make_optimizer(model.parameters())
    x, y = x.to("lazygen"), y.to("lazygen")
    for step in range(steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        lr.mark_step()
        loss.item()
        times[f"step{step + 1}"] = time.perf_counter() - start
    times["steps"] = sum(times[f"step{s + 1}"] for s in range(steps))
    times["compiles"] = lr.metrics.counter_value("UncachedCompile") or 0
    return times


def _child_env(cache_home: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", XDG_CACHE_HOME=cache_home)
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache_home, "torchinductor")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run(kind: str, cache_home: str, steps: int) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--worker", kind, "--steps", str(steps)],
        capture_output=True,
        text=True,
        env=_child_env(cache_home),
        timeout=900,
    )
    if done.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(backends: list[str], repeats: int, steps: int) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="lazygen-startup-") as scratch:
        for backend in backends:  # bytecode written, files in the page cache: unmeasured
            run(f"lazygen-{backend}", os.path.join(scratch, "warmup"), steps)
        for repeat in range(repeats):
            for backend in backends:
                home = os.path.join(scratch, f"{backend}-{repeat}")
                kind = f"lazygen-{backend}"
                runs.setdefault(f"{backend} cold", []).append(run(kind, home, steps))
                runs.setdefault(f"{backend} warm", []).append(run(kind, home, steps))
                anchor = "jax" if backend == "jax" else "torch"
                runs.setdefault(f"anchor {anchor}", []).append(run(f"anchor-{anchor}", home, steps))
    return runs


def _median(results: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in results)


def report(runs: dict[str, list[dict]], steps: int) -> None:
    anchors = runs.get("anchor torch") or runs["anchor jax"]
    torch_import = _median(anchors, "torch")
    print("\n### start-up: import, init, first two steps (fresh processes, medians)\n")
    print("| process | import torch | import + init | vs anchor | first steps | warm / cold |")
    print("|---|---:|---:|---|---:|---|")
    for anchor in ("torch", "jax"):
        key = f"anchor {anchor}"
        if key in runs:
            extra = "-" if anchor == "torch" else f"{_median(runs[key], 'import_init'):.2f} s"
            print(f"| {key} | {_median(runs[key], 'torch'):.2f} s | {extra} | anchor | - | - |")
    for key, results in runs.items():
        if key.startswith("anchor"):
            continue
        backend, temperature = key.split()
        own = _median(results, "import_init")
        if backend == "jax":
            anchor = _median(runs["anchor jax"], "import_init")
            versus = f"{own - anchor:+.2f} s vs JAX's import + client (goal <= +0.5 s)"
        else:
            versus = f"{own:.2f} s beyond torch's {torch_import:.2f} s (goal <= 0.5 s)"
        first = _median(results, "steps")
        ratio = "-"
        if temperature == "warm":
            cold = _median(runs[f"{backend} cold"], "steps")
            ratio = f"{first / cold:.2f} (goal <= 0.25)"
        compiles = results[0]["compiles"]
        print(
            f"| lazygen {backend} {temperature} | {_median(results, 'torch'):.2f} s | "
            f"{own:.2f} s | {versus} | {first:.2f} s ({compiles} compiles) | {ratio} |"
        )
    print(f"\nfirst steps: the sum of the first {steps} steps (encoder + AdamW, lazy device).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.steps)))
        return 0
    report(measure(args.backends, args.repeats, args.steps), args.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
