"""What a step's TorchScript programs cost with and without ``share_number_operands``,
both ways in one process.

    OMP_NUM_THREADS=1 python bench/number_operands_ab.py [--workload gpt2]
        [--route captured] [--blocks 12] [--runs 20]

The pass (``backends/torchscript/passes.py``) gives arithmetic ops' numbers as one 0-dim
tensor per program run instead of one wrapped number and one ``aten::to`` per op. The
difference is about a millisecond of a few-millisecond step, below what fresh processes
resolve on a loaded machine, so this runs the step of ``--route`` (``captured``: model,
state and batch on the lazy device under ``torch.compile``; ``cpu``: model on the CPU under
``torch.compile``; ``lazy``: uncompiled, ``mark_step()`` per step) a few times, lowers
every program it ran again twice (pass on and off), checks that both give the same bits
on the same inputs, and times all programs alternately in blocks (ABBA), CPU time. It
prints per arm the median over blocks of the CPU time of one run of every program.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from _step_workloads import WORKLOADS, training_step

import lazygen.runtime as lr
from lazygen.runtime.backends.torchscript import backend as ts_backend


class _Programs:
    """Every program the torchscript backend compiled, with the inputs of its last run."""

    def __init__(self) -> None:
        self.lowered: dict[int, tuple] = {}
        self.inputs: dict[int, list] = {}
        cls = ts_backend.TorchScriptBackend
        compile_, launch, execute = cls.compile, cls.launch, cls.execute

        def compiling(backend, order, outputs, device):
            executable = compile_(backend, order, outputs, device)
            self.lowered[id(executable)] = (backend, order, outputs, device)
            return executable

        def launching(backend, executable, inputs):
            self._ran(executable, inputs)
            return launch(backend, executable, inputs)

        def executing(backend, executable, inputs):
            self._ran(executable, inputs)
            return execute(backend, executable, inputs)

        cls.compile, cls.launch, cls.execute = compiling, launching, executing

    def _ran(self, executable, inputs) -> None:
        if id(executable) in self.lowered:  # not one loaded from the persistent cache
            self.inputs[id(executable)] = list(inputs)

    def both_ways(self) -> list[tuple[dict, list]]:
        """(pass on/off -> function, inputs) per program that ran."""
        share = ts_backend.share_number_operands
        programs = []
        for key, inputs in self.inputs.items():
            backend, order, outputs, device = self.lowered[key]
            functions = {}
            for on in (True, False):
                ts_backend.share_number_operands = share if on else (lambda *args: 0)
                graph = backend.lower(order, outputs, device).graph
                functions[on] = torch._C._create_function_from_graph(f"ab_{on}", graph)
            ts_backend.share_number_operands = share
            programs.append((functions, inputs))
        return programs


def _step(workload: str, route: str):
    if route != "cpu":
        lr.init(backend="torchscript")
    step = training_step(workload, on_lazy_device=route != "cpu")
    if route == "lazy":

        def lazy_step():
            loss = step()
            lr.mark_step()
            return loss

        return lazy_step
    return torch.compile(step, backend="lazygen", options={"backend": "torchscript"})


def _results(function, inputs) -> list:
    result = function(*[i.clone() if isinstance(i, torch.Tensor) else i for i in inputs])
    return list(result) if isinstance(result, tuple) else [result]


def _same_bits(functions: dict, inputs: list) -> bool:
    """Whether both arms of one program compute the same bits from the same inputs."""
    on, off = _results(functions[True], inputs), _results(functions[False], inputs)
    pairs = zip(on, off, strict=True)
    return all(torch.equal(a, b) for a, b in pairs if isinstance(a, torch.Tensor))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="gpt2")
    parser.add_argument("--route", choices=("captured", "cpu", "lazy"), default="captured")
    parser.add_argument("--blocks", type=int, default=12)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    os.environ["LAZYGEN_CACHE"] = "0"  # every program compiled here, none loaded
    programs = _Programs()
    step = _step(args.workload, args.route)
    for _ in range(4):
        loss = step()
    float(loss.detach().cpu())
    both = programs.both_ways()
    times: dict[bool, list[float]] = {True: [], False: []}
    with ts_backend.without_autograd(), ts_backend._unoptimized():
        same = all(_same_bits(functions, inputs) for functions, inputs in both)
        for block in range(args.blocks):
            for on in (True, False) if block % 2 else (False, True):
                start = time.process_time()
                for _ in range(args.runs):
                    for functions, inputs in both:
                        functions[on](*inputs)
                times[on].append((time.process_time() - start) / args.runs * 1e3)
    for on in (False, True):
        print(
            f"{args.workload} {args.route} share_number_operands "
            f"{'on' if on else 'off'}: {statistics.median(times[on]):.3f} ms CPU "
            f"({len(both)} programs, same bits: {same})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
