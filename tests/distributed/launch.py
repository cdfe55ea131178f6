"""Run a worker script in N processes on loopback, bounded in time and cleaned up.

Each rank is a subprocess in its own session (``start_new_session``), so a hung or crashed
run is killed with its whole process group in a ``finally``, never left behind; the port is
chosen at run time by binding port 0. Workers read ``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR`` and ``MASTER_PORT`` as torchrun sets them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Result:
    returncodes: tuple[int | None, ...]
    outputs: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return all(code == 0 for code in self.returncodes)

    def report(self) -> str:
        return "\n".join(
            f"--- rank {rank} (exit {code}) ---\n{out[-4000:]}"
            for rank, (code, out) in enumerate(zip(self.returncodes, self.outputs, strict=True))
        )


def _kill(proc: subprocess.Popen) -> None:
    """Kill the rank's whole session (it leads its own process group), finished or not."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def stop_session(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """Stop a launcher that owns its workers (torchrun): SIGTERM to its session, which
    it forwards to its workers, then SIGKILL whatever is left after ``grace`` seconds."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    _kill(proc)


def run(argv: list[str], nproc: int = 2, timeout: float = 120.0, env: dict | None = None):
    """Start ``python argv...`` as ranks 0..nproc-1; wait at most ``timeout`` seconds."""
    port = free_port()
    procs = []
    logs = []
    try:
        for rank in range(nproc):
            rank_env = dict(os.environ, **(env or {}))
            rank_env |= {
                "RANK": str(rank),
                "LOCAL_RANK": str(rank),
                "WORLD_SIZE": str(nproc),
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port),
                "GLOO_SOCKET_IFNAME": rank_env.get("GLOO_SOCKET_IFNAME", "lo"),
            }
            log = open(_log_path(port, rank), "w+")  # noqa: SIM115 (closed below)
            logs.append(log)
            procs.append(
                subprocess.Popen(
                    [sys.executable, *argv],
                    env=rank_env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        deadline = time.monotonic() + timeout
        for proc in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                break
        codes = tuple(proc.poll() for proc in procs)
    finally:
        for proc in procs:
            _kill(proc)
    outputs = []
    for log in logs:
        log.seek(0)
        outputs.append(log.read())
        log.close()
        os.unlink(log.name)
    return Result(codes, tuple(outputs))


def _log_path(port: int, rank: int) -> str:
    directory = os.environ.get("TMPDIR", "/tmp")
    return os.path.join(directory, f"lazygen-dist-{os.getpid()}-{port}-{rank}.log")
