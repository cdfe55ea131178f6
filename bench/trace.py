"""Tracing cost per op: a 2000-op elementwise chain on 16x16 tensors, no sync inside.

    python bench/trace.py [--repeats 3]

lazygen vs torch._lazy (C++ LTC, TS backend) vs eager, each in fresh processes,
alternating; wall time and the tracing thread's CPU time (which a loaded machine inflates
less). Goal (issue #51): lazygen <= 1.3x torch._lazy. The `floor` row is lazygen's entry point
with kernels that trace nothing (see bench/_workloads.py): the part no kernel work removes;
`node-floor` adds one IR node per op and nothing else (no shape lookup, counter, device check
or graph budget): the least any tracer on this entry point pays.
"""

from __future__ import annotations

import argparse

from _timing import alternate_workload, median_of

IMPLS = ("eager", "ltc", "floor", "node-floor", "lazygen")


def measure(repeats: int) -> list[tuple[str, str, str]]:
    results = alternate_workload("trace", IMPLS, repeats, "--ops", "2000")
    us = {impl: median_of(results[impl], "us_per_op") for impl in IMPLS}
    cpu = {impl: median_of(results[impl], "us_per_op_cpu") for impl in IMPLS}

    def cell(impl: str) -> str:
        return f"{us[impl]:.2f} / {cpu[impl]:.2f} us/op"

    def versus(impl: str) -> str:
        return f"{us[impl] / us['ltc']:.2f}x / {cpu[impl] / cpu['ltc']:.2f}x torch._lazy"

    return [
        ("eager", cell("eager"), "anchor"),
        ("torch._lazy", cell("ltc"), "anchor"),
        (
            "lazygen entry point alone (no tracing)",
            cell("floor"),
            f"{versus('floor')}: dispatch + functionalization + wrapper",
        ),
        (
            "entry point + one IR node a op (no bookkeeping)",
            cell("node-floor"),
            f"{versus('node-floor')}: the least a tracer here pays",
        ),
        ("lazygen", cell("lazygen"), f"{versus('lazygen')} (goal <= 1.3x)"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print_rows("trace: per-op cost of a 2000-op chain, 16x16", measure(args.repeats))


def print_rows(title: str, rows: list[tuple[str, str, str]]) -> None:
    print(
        f"\n### {title}\n\n| implementation | median (wall / thread CPU) | ratio |\n|---|---:|---|"
    )
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
