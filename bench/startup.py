"""Start-up: import, init and the first two steps, in fresh processes, cold and warm caches.

    python bench/startup.py [--repeats 3] [--backends torchscript jax] [--steps 2]

Each row is a fresh process, timed inside it from the interpreter's start, with its anchor
measured in the same run, interleaved (cold, warm, anchor, for each backend, every
repeat):

* ``anchor torch``: ``import torch`` alone (the default backend's anchor);
* ``anchor jax``: ``import torch``, then ``import jax`` and JAX's client start (a first
  number put on its default device, nothing compiled): the jax backend's anchor;
* ``eager``: the same training steps on the CPU, for reference;
* ``lazygen <backend>``: ``import torch``, then ``import lazygen.runtime`` and
  ``init(backend=...)`` ("import + init" is the part after torch's import), then the first
  two training steps of the encoder + AdamW of ``bench/jax_backend.py`` on the lazy device
  (forward, backward, AdamW's step, ``mark_step()``, the loss read).

``cold`` runs in an empty cache directory (``XDG_CACHE_HOME``, which holds lazygen's
persistent caches, and Inductor's directory); ``warm`` is the next process on that
directory. Goals (issue #51): import + init within 0.5 s of the anchor's import; warm first
two steps at most 25% of cold. Each process then runs ``STEADY`` more steps: their median,
times the number of first steps, is what those steps would cost with every start-up cost
gone, the least a warm process's first steps can cost (printed per backend under the
table, as a share of cold's first steps). Child processes write bytecode (``PYTHONDONTWRITEBYTECODE``
is dropped, as for an installed package, whose ``.pyc`` files pip writes) and one unmeasured
process per backend runs first, so no row pays compiling lazygen's sources.
"""

from __future__ import annotations

import time

_START = time.perf_counter()  # the worker's clock starts before any other import

import resource  # noqa: E402

_START_CPU = resource.getrusage(resource.RUSAGE_SELF).ru_utime
_START_CPU += resource.getrusage(resource.RUSAGE_SELF).ru_stime

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

BACKENDS = ("torchscript", "jax")
STEADY = 8  # steps after the measured ones, whose median is the steady step


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _clock() -> tuple[float, float]:
    return time.perf_counter(), _cpu()


def worker(kind: str, steps: int) -> dict:
    """One measured process: ``anchor-torch``, ``anchor-jax``, ``eager`` or
    ``lazygen-<backend>``; each phase's wall and CPU seconds."""
    times: dict = {}

    def phase(name: str, since: tuple[float, float]) -> tuple[float, float]:
        now = _clock()
        times[name], times[f"{name}_cpu"] = now[0] - since[0], now[1] - since[1]
        return now

    import torch

    mark = phase("torch", (_START, _START_CPU))
    if kind == "anchor-torch":
        return times
    if kind == "anchor-jax":
        import jax

        jax.device_put(1.0, jax.devices()[0]).block_until_ready()  # the client started
        phase("import_init", mark)
        return times
    device = "cpu"
    if kind != "eager":
        import lazygen.runtime as lr

        lr.init(backend=kind.removeprefix("lazygen-"))
        device = "lazygen"
    mark = phase("import_init", mark)
    # What torch imports at any program's first op on a tensor subclass, first backward
    # and first optimizer step (eager's too): paid here, apart from the steps.
    import torch._dynamo  # noqa: F401
    import torch.distributed.tensor  # noqa: F401

    phase("torch_lazy_imports", mark)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _step_workloads import make_workload

    model, (x, y), make_optimizer, _, _ = make_workload("encoder")
    model = model.to(device)
    optimizer = make_optimizer(model.parameters())
    x, y = x.to(device), y.to(device)
    for step in range(steps + STEADY):
        mark = _clock()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if device != "cpu":
            lr.mark_step()
        loss.item()
        phase(f"step{step + 1}", mark)
    for unit in ("", "_cpu"):
        times[f"steps{unit}"] = sum(times[f"step{s + 1}{unit}"] for s in range(steps))
        times[f"steady{unit}"] = statistics.median(
            times[f"step{s + 1}{unit}"] for s in range(steps, steps + STEADY)
        )
    if device != "cpu":
        times["compiles"] = lr.metrics.counter_value("UncachedCompile") or 0
        times["loaded"] = lr.metrics.counter_value("PersistentGraphLoad") or 0
    return times


def child_env(cache_home: str) -> dict:
    """A measured child's environment: one thread, and every persistent cache (lazygen's,
    Inductor's, under ``XDG_CACHE_HOME``) in ``cache_home``; bytecode written."""
    env = dict(os.environ, OMP_NUM_THREADS="1", XDG_CACHE_HOME=cache_home)
    env["LAZYGEN_CACHE_DIR"] = os.path.join(cache_home, "lazygen")
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache_home, "torchinductor")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_worker(script: str, args: list[str], cache_home: str) -> dict:
    """``script`` run with ``args`` as a measured child on ``cache_home`` (``child_env``):
    the JSON object it prints last; its error, if it fails."""
    done = subprocess.run(
        [sys.executable, script, *args],
        capture_output=True,
        text=True,
        env=child_env(cache_home),
        timeout=900,
    )
    if done.returncode != 0:
        name = os.path.basename(script)
        raise SystemExit(f"{name} {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(kind: str, cache_home: str, steps: int) -> dict:
    return run_worker(__file__, ["--worker", kind, "--steps", str(steps)], cache_home)


def measure(backends: list[str], repeats: int, steps: int) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="lazygen-startup-") as scratch:
        for backend in backends:  # bytecode written, files in the page cache: unmeasured
            run(f"lazygen-{backend}", os.path.join(scratch, "warmup"), steps)
        for repeat in range(repeats):
            home = os.path.join(scratch, f"eager-{repeat}")
            runs.setdefault("eager", []).append(run("eager", home, steps))
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


def _both(results: list[dict], key: str) -> str:
    return f"{_median(results, key):.2f} / {_median(results, key + '_cpu'):.2f} s"


def report(runs: dict[str, list[dict]], steps: int) -> None:
    print("\n### start-up: import, init, first steps (fresh processes, medians; wall / CPU)\n")
    print(
        "| process | import torch | import + init | vs anchor (wall / CPU) | torch's lazy "
        f"imports | first {steps} steps | warm / cold (wall / CPU) |"
    )
    print("|---|---:|---:|---|---:|---:|---|")
    for name in ("anchor torch", "anchor jax"):
        if name in runs:
            extra = "-" if name == "anchor torch" else _both(runs[name], "import_init")
            print(f"| {name} | {_both(runs[name], 'torch')} | {extra} | anchor | - | - | - |")
    for key, results in runs.items():
        if key.startswith("anchor"):
            continue
        own = [_median(results, f"import_init{unit}") for unit in ("", "_cpu")]
        if key.startswith("jax"):
            base = [_median(runs["anchor jax"], f"import_init{unit}") for unit in ("", "_cpu")]
            versus = f"{own[0] - base[0]:+.2f} / {own[1] - base[1]:+.2f} s beyond JAX's own"
        elif key == "eager":
            versus, own = "-", None
        else:
            versus = f"{own[0]:.2f} / {own[1]:.2f} s beyond torch's import"
        ratio = "-"
        if key.endswith("warm"):
            cold = runs[key.replace("warm", "cold")]
            ratio = " / ".join(
                f"{_median(results, 'steps' + u) / _median(cold, 'steps' + u):.2f}"
                for u in ("", "_cpu")
            )
        loaded = f", {results[0]['loaded']} loaded" if "loaded" in results[0] else ""
        compiles = (
            f" ({results[0]['compiles']} compiles{loaded})" if "compiles" in results[0] else ""
        )
        init = "-" if own is None else _both(results, "import_init")
        print(
            f"| {key} | {_both(results, 'torch')} | {init} | {versus} "
            f"| {_both(results, 'torch_lazy_imports')} | {_both(results, 'steps')}{compiles} "
            f"| {ratio} |"
        )
    for key, results in runs.items():
        if key.endswith("warm"):
            cold = runs[key.replace("warm", "cold")]
            floor = [steps * _median(results, "steady" + u) for u in ("", "_cpu")]
            shares = [floor[i] / _median(cold, "steps" + u) for i, u in enumerate(("", "_cpu"))]
            print(
                f"\n{key.removesuffix(' warm')}: {steps} steady steps cost {floor[0]:.3f} / "
                f"{floor[1]:.3f} s (wall / CPU), {shares[0]:.2f} / {shares[1]:.2f} of cold's "
                f"first {steps}: the least the warm ones can cost, with every start-up cost gone"
            )
    print(
        f"\nfirst {steps} steps: encoder + AdamW (bench/jax_backend.py), each ending with the "
        "loss read; timed after torch's lazy imports (`torch._dynamo`, "
        "`torch.distributed.tensor`), which torch makes at any program's first op on a tensor "
        "subclass, first backward or first optimizer step, eager's included. Goals (issue "
        "#51): import + init <= 0.5 s beyond the anchor; warm / cold <= 0.25."
    )


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
