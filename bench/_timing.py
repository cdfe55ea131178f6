"""Shared helpers for the benchmarks: fresh-process timing, alternation, medians, ranks."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence


def time_process(argv: Sequence[str], cwd: str | None = None) -> float:
    """Wall time of one fresh process; raises if it fails (a failed run is no figure)."""
    start = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{result.stderr[-2000:]}")
    return elapsed


def alternate(candidates: dict[str, Sequence[str]], repeats: int, cwd: str | None = None) -> dict:
    """Run each candidate `repeats` times, interleaved, and return their medians (seconds)."""
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, argv in candidates.items():
            times[name].append(time_process(argv, cwd))
    return {name: statistics.median(values) for name, values in times.items()}


def python() -> str:
    return sys.executable


def print_table(title: str, rows: list[tuple[str, float, str]]) -> None:
    """Print `name | median | note` rows under a title, as a Markdown table."""
    print(f"\n### {title}\n")
    print("| measurement | median | note |")
    print("|---|---:|---|")
    for name, value, note in rows:
        print(f"| {name} | {value * 1000:.1f} ms | {note} |")


def run_workload(workload: str, impl: str, *options: str) -> dict:
    """Run one workload of bench/_workloads.py in a fresh process and return its JSON."""
    import json
    from pathlib import Path

    script = Path(__file__).with_name("_workloads.py")
    result = subprocess.run(
        [python(), str(script), workload, impl, *options], capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"{workload} {impl} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def alternate_workload(
    workload: str, impls: Sequence[str], repeats: int, *options: str
) -> dict[str, list[dict]]:
    """Each implementation `repeats` times, interleaved; all results kept per implementation."""
    results: dict[str, list[dict]] = {impl: [] for impl in impls}
    for round_ in range(repeats):
        order = list(impls) if round_ % 2 == 0 else list(reversed(impls))
        for impl in order:
            results[impl].append(run_workload(workload, impl, *options))
    return results


def median_of(results: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in results)


def run_ranks(nproc: int, timeout: float) -> tuple[str, list[int]]:
    """This script (``sys.argv``) run again as ``nproc`` ranks of a process group on
    loopback (``RANK``, ``WORLD_SIZE``, a free ``MASTER_PORT``): rank 0's standard output
    and every rank's exit code. Ranks run in sessions of their own, all killed on the way
    out, so none outlives the benchmark."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    try:
        for rank in range(nproc):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(nproc))
            env |= {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
            env.setdefault("GLOO_SOCKET_IFNAME", "lo")
            out = subprocess.PIPE if rank == 0 else subprocess.DEVNULL
            procs.append(
                subprocess.Popen(
                    [sys.executable, *sys.argv],
                    env=env,
                    stdout=out,
                    start_new_session=True,
                    text=True,
                )
            )
        stdout, _ = procs[0].communicate(timeout=timeout)
        codes = [proc.wait(timeout=60) for proc in procs]
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return stdout, codes
