"""The benchmarks' history: every run ever published, as JSON, and the page of latest runs.

    python bench/history.py [--page docs/benchmarks.md] [--history bench/history]

``docs/benchmarks.md`` shows the latest run of each benchmark; each run is a ``###``
section whose title names the benchmark (its script, ``bench/<name>.py``, or the words
before the first ``:``, ``(`` or ``,``). This command moves every older section of the
page into ``bench/history/<benchmark>.json`` (a list of runs, newest first: title, date,
commit, command, and the section's markdown with its tables parsed into rows), adds the
latest ones too, and rewrites the page with only the latest section per benchmark, each
under a line naming its date, commit and command. Nothing is lost: a section already in
the history is not added twice, and ``bench/plots.py`` draws the figures from the JSON.
``bench/run_all.py`` calls ``archive`` before it rewrites the page.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAGE = HERE.parent / "docs" / "benchmarks.md"
HISTORY = HERE / "history"

#: The page's opening, above the runs (``run_all.py`` writes it too).
INTRO = """# Benchmarks

The latest run of each benchmark, with the command that made it, its date and commit.
Older runs are not lost: `python bench/history.py` moves them into
`bench/history/<benchmark>.json` (every run, newest first, tables parsed into rows), and
`python bench/plots.py` draws the figures below from that history.

What to expect, in short: on the CPU the lazy device runs small models' training steps at
2-5x eager's time (tracing a few hundred small ops costs more than running them; it is
faster than eager on compute-bound steps); `torch.compile(backend="lazygen")` is the fast
path, at or below eager's time, and with the `inductor` backend within a few percent of
Inductor itself.

## Latest figures

![Training-step time relative to eager per workload: the lazy device, the torch.compile path on lazygen's two backends, and the LTC and Inductor anchors](_static/benchmarks/real_loops.svg)

![Graphs compiled for a transformer trained over 24 sequence lengths, per implementation](_static/benchmarks/dynamic.svg)

## Latest runs

"""

#: The line ``archive`` puts under a title (date, commit, command): not part of the run.
_NAMED = re.compile(r"\A\s*\*(?:run of |commit )[^\n]*\n+")
_SCRIPT = re.compile(r"bench/(\w+)\.py")
_DATE = re.compile(r"20\d\d-\d\d-\d\d")
_COMMIT = re.compile(r"\bcommit ([0-9a-f]{7,40})\b")
_COMMAND = re.compile(r"(?:`|^\s{4})((?:[A-Z_]+=\S+ )*python bench/[^`\n]+)", re.M)


@dataclass
class Run:
    """One published run of a benchmark: a ``###`` section of the page."""

    benchmark: str
    title: str
    markdown: str
    date: str = ""
    commit: str = ""
    command: str = ""
    tables: list[list[dict[str, str]]] = field(default_factory=list)


def benchmark_of(title: str) -> str:
    """The benchmark a section's title is about (see the module docstring)."""
    head = re.split(r"[:(,]", title, maxsplit=1)[0].strip().strip("`")
    head = re.sub(r"^the ", "", head)
    found = _SCRIPT.search(head)
    name = found.group(1) if found else head
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def parse_tables(markdown: str) -> list[list[dict[str, str]]]:
    """The markdown tables of a section, each as rows of ``{column: cell}``."""
    tables, lines = [], markdown.splitlines()
    i = 0
    while i < len(lines):
        if (
            lines[i].startswith("|")
            and i + 1 < len(lines)
            and re.match(r"^\|[-:| ]+\|$", lines[i + 1])
        ):
            header = [c.strip() for c in lines[i].strip("|").split("|")]
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip("|").split("|")]
                rows.append(dict(zip(header, cells, strict=False)))
                i += 1
            tables.append(rows)
        else:
            i += 1
    return tables


def commit_that_added(title: str, page: Path) -> str:
    """The commit that first wrote a section's title into the page (``git log -S``), or
    "" outside a git checkout."""
    try:
        found = subprocess.run(
            ["git", "log", "--format=%h", "-S", title, "--", page.name],
            cwd=page.parent, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = found.stdout.split()
    return lines[-1] if found.returncode == 0 and lines else ""


def split_page(text: str) -> tuple[str, list[Run], str]:
    """(the page's preamble, its runs in page order, what follows them: ``## `` sections)."""
    first = text.find("\n### ")
    preamble = text if first < 0 else text[: first + 1]
    rest = "" if first < 0 else text[first + 1 :]
    tail_at = rest.find("\n## ")
    tail = "" if tail_at < 0 else rest[tail_at + 1 :]
    body = rest if tail_at < 0 else rest[: tail_at + 1]
    runs = []
    page_date = _DATE.search(preamble)
    for chunk in re.split(r"^### ", body, flags=re.M)[1:]:
        title, _, markdown = chunk.partition("\n")
        markdown = _NAMED.sub("", markdown)
        whole = f"{title}\n{markdown}"
        command = _COMMAND.search(whole)
        date, commit = _DATE.search(whole), _COMMIT.search(whole)
        runs.append(
            Run(
                benchmark=benchmark_of(title),
                title=title.strip(),
                markdown=markdown.strip("\n").rstrip() + "\n",
                date=date.group(0) if date else (page_date.group(0) if page_date else ""),
                commit=commit.group(1) if commit else "",
                command=command.group(1).strip().rstrip("\\").strip() if command else "",
                tables=parse_tables(markdown),
            )
        )
    return preamble, runs, tail


def load(history: Path = HISTORY) -> dict[str, list[dict]]:
    """Every benchmark's runs, newest first, from ``history/*.json``."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(history.glob("*.json"))}


def archive(page: Path = PAGE, history: Path = HISTORY) -> dict[str, int]:
    """Move the page's older runs into the history and keep the latest per benchmark.

    Returns how many runs each benchmark's history holds.
    """
    preamble, runs, tail = split_page(page.read_text())
    history.mkdir(parents=True, exist_ok=True)
    known = load(history)
    latest: dict[str, Run] = {}
    for run in runs:  # the page lists newer runs first
        run.commit = run.commit or commit_that_added(run.title, page)
        latest.setdefault(run.benchmark, run)
        stored = known.setdefault(run.benchmark, [])
        if all(r["title"] != run.title or r["markdown"] != run.markdown for r in stored):
            stored.append(asdict(run))
    for name, stored in known.items():
        stored.sort(key=lambda r: r["date"], reverse=True)  # stable: page order within a day
        (history / f"{name}.json").write_text(json.dumps(stored, indent=1) + "\n")
    sections = []
    for run in latest.values():
        named = ", ".join(
            part
            for part in (
                run.date and f"run of {run.date}",
                f"commit {run.commit}" if run.commit else "",
                run.command and f"`{run.command}`",
            )
            if part
        )
        older = len(known[run.benchmark]) - 1
        note = f" ({older} older in `bench/history/{run.benchmark}.json`)" if older else ""
        sections.append(f"### {run.title}\n\n*{named}*{note}\n\n{run.markdown}")
    page.write_text(
        preamble.rstrip() + "\n\n" + "\n".join(sections) + ("\n" + tail if tail else "")
    )
    return {name: len(stored) for name, stored in known.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", type=Path, default=PAGE)
    parser.add_argument("--history", type=Path, default=HISTORY)
    args = parser.parse_args()
    for name, count in archive(args.page, args.history).items():
        print(f"{name}: {count} runs")


if __name__ == "__main__":
    main()
