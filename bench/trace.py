"""Tracing cost per op: a 2000-op elementwise chain on 16x16 tensors, no sync inside.

    python bench/trace.py [--repeats 3]

lazygen vs torch._lazy (C++ LTC, TS backend) vs eager, each in fresh processes,
alternating. Goal: lazygen <= 1.0x torch._lazy. The `floor` row is lazygen's entry point
with kernels that trace nothing (see bench/_workloads.py): the part no kernel work removes.
"""

from __future__ import annotations

import argparse

from _timing import alternate_workload, median_of

IMPLS = ("eager", "ltc", "floor", "lazygen")


def measure(repeats: int) -> list[tuple[str, str, str]]:
    results = alternate_workload("trace", IMPLS, repeats, "--ops", "2000")
    us = {impl: median_of(results[impl], "us_per_op") for impl in IMPLS}
    return [
        ("eager", f"{us['eager']:.2f} us/op", "anchor"),
        ("torch._lazy", f"{us['ltc']:.2f} us/op", "anchor"),
        (
            "lazygen entry point alone (no tracing)",
            f"{us['floor']:.2f} us/op",
            f"{us['floor'] / us['ltc']:.2f}x torch._lazy: dispatch + functionalization + wrapper",
        ),
        (
            "lazygen",
            f"{us['lazygen']:.2f} us/op",
            f"{us['lazygen'] / us['ltc']:.2f}x torch._lazy (goal <= 1.0x)",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print_rows("trace: per-op cost of a 2000-op chain, 16x16", measure(args.repeats))


def print_rows(title: str, rows: list[tuple[str, str, str]]) -> None:
    print(f"\n### {title}\n\n| implementation | median | ratio |\n|---|---:|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
