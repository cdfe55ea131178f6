"""Draw the benchmarks' latest figures from their JSON history into the docs.

    python bench/plots.py [--history bench/history] [--out docs/_static/benchmarks]

* ``real_loops.svg``: per workload, the step time relative to eager of the lazy device
  (``lazygen-torchscript``), the ``torch.compile(backend="lazygen")`` path
  (``dynamo-torchscript``, ``dynamo-inductor``) and the anchors (``torch._lazy``'s LTC,
  Inductor's ``torch.compile``), from the latest ``real_loops`` run;
* ``dynamic.svg``: graphs compiled for a transformer trained over 24 sequence lengths, per
  implementation (static sizes, the recompile budget, dynamic shapes), from the latest
  ``dynamic`` run.

``docs/benchmarks.md`` shows them; run this after ``bench/history.py`` stored a new run.
The figures are SVG with no timestamp (``svg.hashsalt`` fixed), so an unchanged history
redraws the same files.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from history import HISTORY, load  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "docs" / "_static" / "benchmarks"

#: real_loops implementations drawn, in order, with their legend.
LOOP_IMPLS = {
    "lazygen-torchscript": "lazy device (torchscript)",
    "dynamo-torchscript": "torch.compile, lazygen torchscript",
    "dynamo-inductor": "torch.compile, lazygen inductor",
    "ltc": "anchor: torch._lazy (LTC)",
    "compile": "anchor: torch.compile (Inductor)",
}


def _ratio(cell: str) -> float | None:
    found = re.match(r"^([\d.]+)x$", cell.strip())
    return float(found.group(1)) if found else None


def _setup() -> None:
    plt.rcParams.update({"svg.hashsalt": "lazygen", "svg.fonttype": "none", "font.size": 9})


def draw_real_loops(run: dict, path: Path) -> None:
    """Grouped bars: step time / eager's, per workload and implementation."""
    rows = [r for table in run["tables"] for r in table if "implementation" in r]
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / len(LOOP_IMPLS)
    for i, (impl, label) in enumerate(LOOP_IMPLS.items()):
        xs, ys = [], []
        for w, workload in enumerate(workloads):
            for r in rows:
                if r["workload"] == workload and r["implementation"] == impl:
                    value = _ratio(r.get("vs eager", ""))
                    if value is not None:
                        xs.append(w + (i - len(LOOP_IMPLS) / 2 + 0.5) * width)
                        ys.append(value)
        ax.bar(xs, ys, width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.text(len(workloads) - 0.5, 1.02, "eager", ha="right", va="bottom", fontsize=8)
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_ylabel("step time / eager's (lower is faster)")
    ax.set_title(f"Training step, loss read every step ({run['date']}, commit {run['commit']})")
    ax.legend(fontsize=7, ncols=2)
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def draw_dynamic(run: dict, path: Path) -> None:
    """Bars: graphs compiled over 24 sequence lengths, per implementation."""
    rows = [r for r in run["tables"][0] if "graphs compiled" in r]
    labels = [re.sub(r"`", "", r["implementation"]) for r in rows]
    counts = [int(re.match(r"\d+", r["graphs compiled"]).group(0)) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 3.2))
    ax.barh(range(len(rows)), counts, color="tab:blue")
    for y, count in enumerate(counts):
        ax.text(count + 0.5, y, str(count), va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("graphs compiled for 24 sequence lengths")
    ax.set_title(f"Recompiles over sequence lengths ({run['date']})")
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=Path, default=HISTORY)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    runs = load(args.history)
    args.out.mkdir(parents=True, exist_ok=True)
    _setup()
    draw_real_loops(runs["real_loops"][0], args.out / "real_loops.svg")
    draw_dynamic(runs["dynamic"][0], args.out / "dynamic.svg")
    print(f"wrote {args.out}/real_loops.svg, {args.out}/dynamic.svg")


if __name__ == "__main__":
    main()
