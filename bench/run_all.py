"""Run every benchmark and write docs/benchmarks.md with the tables and the command.

The page's earlier runs move to bench/history/*.json first (``history.archive``).

    python bench/run_all.py [--repeats 3]

Each benchmark prints its own table too; anchors (torchgen, torch._lazy, eager,
torch.compile) are measured in the same run, so the ratios are comparable even on a noisy
machine. The real training loops come first.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import platform
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import trace  # noqa: E402

import codegen  # noqa: E402
import history  # noqa: E402
import memory  # noqa: E402
import optimizers  # noqa: E402
import parse  # noqa: E402
import real_loops  # noqa: E402
import scaling  # noqa: E402
import train_step  # noqa: E402

CODEGEN_TITLE = "codegen: `lazygen gen` vs torchgen `run_gen_lazy_tensor` (fresh processes)"


def capture(fn, argv: list[str]) -> str:
    """Run a benchmark's `main` with `argv` and return what it printed."""
    buffer = io.StringIO()
    saved = sys.argv
    sys.argv = [fn.__module__, *argv]
    try:
        with contextlib.redirect_stdout(buffer):
            fn()
    finally:
        sys.argv = saved
    text = buffer.getvalue()
    print(text, end="")
    return text


def as_markdown(section: str) -> str:
    """Tables stay tables; the one plain-text report (codegen) goes in a titled code block."""
    text = section.strip()
    if text.startswith("#"):
        return f"\n{text}\n"
    return f"\n### {CODEGEN_TITLE}\n\n```\n{text}\n```\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=HERE.parent / "docs" / "benchmarks.md")
    args = parser.parse_args()
    repeats = str(args.repeats)
    sections = [
        capture(real_loops.main, ["--repeats", repeats]),
        capture(parse.main, ["--repeats", "5"]),
        capture(codegen.main, ["--repeat", "5"]),
        capture(trace.main, ["--repeats", repeats]),
        capture(train_step.main, ["--repeats", repeats]),
        capture(scaling.main, ["--repeats", repeats]),
        capture(memory.main, ["--steps", "1000"]),
        # Last: it initialises lazygen in this process (the others run it in children).
        capture(optimizers.main, ["--steps", "200"]),
    ]
    if args.output.exists():  # its runs go to bench/history/ before the page is replaced
        history.archive(args.output)
    header = (
        history.INTRO + f"Produced by `python bench/run_all.py --repeats {args.repeats}` on "
        f"{datetime.date.today().isoformat()} ({platform.machine()}, "
        f"{torch.get_num_threads()} threads available, torch {torch.__version__}, "
        f"Python {platform.python_version()}). Every anchor was measured in the same run.\n"
    )
    args.output.write_text(header + "".join(as_markdown(s) for s in sections))
    history.archive(args.output)  # the new runs join the history; the page names them
    print(f"\nwrote {args.output}")


if __name__ == "__main__":
    main()
