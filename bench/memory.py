"""Memory over 1 000 MLP steps after warm-up: RSS growth and live IR nodes.

    python bench/memory.py [--steps 1000]

Goal: <= 5 MB RSS growth and no growth in live IR nodes.
"""

from __future__ import annotations

import argparse
from trace import print_rows

from _timing import run_workload


def measure(steps: int) -> list[tuple[str, str, str]]:
    result = run_workload("memory", "lazygen", "--steps", str(steps), "--warmup", "50")
    return [
        (
            "lazygen RSS growth",
            f"{result['rss_growth_mb']:.1f} MB",
            f"over {steps} steps after 50 warm-up steps (goal <= 5 MB)",
        ),
        (
            "lazygen live IR nodes",
            f"{result['live_ir_nodes_before']} -> " f"{result['live_ir_nodes_after']}",
            "before -> after (goal: no growth)",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    print_rows("memory: 1 000 MLP SGD steps", measure(args.steps))


if __name__ == "__main__":
    main()
