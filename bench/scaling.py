"""Trace + sync cost per node for graphs of 100, 1 000 and 10 000 nodes.

    python bench/scaling.py [--repeats 3]

Cost per node must stay flat as graphs grow (no super-linear step).
"""

from __future__ import annotations

import argparse
from trace import print_rows

from _timing import alternate_workload, median_of

SIZES = (100, 1000, 10000)
IMPLS = ("ltc", "lazygen")


def measure(repeats: int) -> list[tuple[str, str, str]]:
    rows = []
    base = None
    for nodes in SIZES:
        results = alternate_workload(
            "scaling", IMPLS, repeats, "--nodes", str(nodes), "--repeats", "2"
        )
        us = {impl: median_of(results[impl], "us_per_node") for impl in IMPLS}
        base = base or us["lazygen"]
        rows.append((f"{nodes} nodes torch._lazy", f"{us['ltc']:.2f} us/node", "anchor"))
        rows.append(
            (
                f"{nodes} nodes lazygen",
                f"{us['lazygen']:.2f} us/node",
                f"{us['lazygen'] / base:.2f}x the 100-node cost per node",
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print_rows("scaling: trace + sync per node", measure(args.repeats))


if __name__ == "__main__":
    main()
