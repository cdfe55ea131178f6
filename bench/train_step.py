"""MLP 784-256-10 training step, batch 64: lazygen vs torch._lazy vs eager.

    python bench/train_step.py [--repeats 3]

Median step time over steps 10..60 and uncached compiles over all 60 steps, for
SGD(momentum 0.9) and Adam. Goals: lazygen <= 0.5x torch._lazy; <= 2 step structures
compiled (4 uncached compiles: each step runs as two graphs, the loss first; runtime/split.py).
"""

from __future__ import annotations

import argparse
from trace import print_rows

from _timing import alternate_workload, median_of

IMPLS = ("eager", "ltc", "lazygen")


def measure(repeats: int) -> list[tuple[str, str, str]]:
    rows = []
    for optimizer in ("sgd", "adam"):
        results = alternate_workload(
            "train_step", IMPLS, repeats, "--optimizer", optimizer, "--steps", "60"
        )
        ms = {impl: median_of(results[impl], "ms_per_step") for impl in IMPLS}
        compiles = {impl: max(r["uncached_compiles"] for r in results[impl]) for impl in IMPLS}
        rows += [
            (f"{optimizer} eager", f"{ms['eager']:.2f} ms/step", "anchor"),
            (
                f"{optimizer} torch._lazy",
                f"{ms['ltc']:.2f} ms/step",
                f"{compiles['ltc']} uncached compiles",
            ),
            (
                f"{optimizer} lazygen",
                f"{ms['lazygen']:.2f} ms/step",
                f"{ms['lazygen'] / ms['ltc']:.2f}x torch._lazy (goal <= 0.5x); "
                f"{compiles['lazygen']} uncached compiles (goal <= 4: 2 structures x 2 graphs)",
            ),
        ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print_rows("train_step: MLP 784-256-10, batch 64, steps 10-60", measure(args.repeats))


if __name__ == "__main__":
    main()
