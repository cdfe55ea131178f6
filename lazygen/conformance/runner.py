"""Run entries in crash-isolated worker processes, streaming each result as it finishes.

Entries are split into chunks; each chunk runs in one ``lazygen.conformance.worker``
process (``jobs`` of them at a time), which announces every entry before running it. When
a worker dies — a signal, an abort, an exit without its results — the entry it had
announced and not finished is re-run alone in a fresh worker:

* it dies again: that entry is a ``crash``, named with the signal and the innermost frames
  of faulthandler's traceback (the Python function the process died in);
* it runs: the crash needs the entries before it in the same process; it is still
  recorded as that entry's ``crash`` (with what it gave alone), never dropped.

The entries the dead worker had not reached run on in a new chunk. An entry that runs
longer than ``timeout`` seconds has its worker killed and is recorded as ``timeout``. A
worker that dies before running anything (the backend cannot start) stops the whole run
with a ``ConformanceSetupError``: every other worker would die the same way.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from .classify import EntryResult
from .worker import MARK, OP_MARK, Request

#: Most entries a chunk holds: a worker's start-up (torch, op_db, the backend) takes
#: seconds, a crash costs the rest of its chunk one more start-up.
MAX_CHUNK = 40
#: Seconds one entry may run (the worker's start-up counts as an entry).
DEFAULT_TIMEOUT = 900.0
#: Seconds a worker may take to start (to announce that it is ready), whatever ``timeout``.
STARTUP_TIMEOUT = 300.0
#: Seconds a worker that reported its last result (closing its event stream) may take to
#: exit before it is killed; a hang at exit is then reported as a worker failure.
EXIT_GRACE = 60.0
#: faulthandler's frame lines: ``  File "path", line N in function``.
_FRAME = re.compile(r'^\s+File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<function>\S+)')


class ConformanceSetupError(Exception):
    """The workers cannot run at all (unknown backend, a backend that fails to start, an
    unknown entry): a problem with the run's inputs, not a result."""


@dataclass
class RunConfig:
    """How to run: the worker request's fields (see ``worker.Request``), ``jobs`` workers
    at a time, chunks of at most ``chunk_size`` entries (None: balanced over ``jobs``, at
    most ``MAX_CHUNK``), ``timeout`` seconds per entry, extra environment variables, and
    directories the workers import from ahead of ``PYTHONPATH`` (a backend's site)."""

    backend: str | None = None
    dtype: str = "float32"
    grad: bool = False
    samples: int = 100_000
    conversions: bool = False
    jobs: int = 1
    chunk_size: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    env: dict[str, str] = field(default_factory=dict)
    python_path: tuple[str, ...] = ()


@dataclass
class WorkerFailure:
    """A worker that died while no entry was running (between entries, or at exit):
    ``entries`` are those it had finished."""

    entries: list[str]
    how: str
    stderr_tail: str


@dataclass
class _Chunk:
    """What one worker process did."""

    results: dict[str, EntryResult] = field(default_factory=dict)
    ready: bool = False
    started: str | None = None  # announced and not finished when the worker stopped
    setup_error: str | None = None
    timed_out: bool = False
    hung_at_exit: bool = False
    returncode: int | None = None
    stderr: str = ""

    @property
    def died(self) -> bool:
        return self.timed_out or self.returncode != 0

    def how(self) -> str:
        """``SIGSEGV``, ``exit status 1`` or ``timeout``."""
        if self.timed_out:
            return "timeout"
        if self.hung_at_exit:
            return f"hung at exit, killed after {EXIT_GRACE:g} s"
        if self.returncode is not None and self.returncode < 0:
            return signal_name(-self.returncode)
        return f"exit status {self.returncode}"


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def crash_site(stderr: str, frames: int = 3) -> str:
    """The innermost Python frames of faulthandler's report of the crashing thread
    (``decompositions.py:88 _from_functional <- ...``), or '' when there is none."""
    lines = stderr.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if line.startswith("Current thread")),
        next((i for i, line in enumerate(lines) if line.startswith("Fatal Python error")), None),
    )
    if start is None:
        return ""
    found = []
    for line in lines[start + 1 :]:
        match = _FRAME.match(line)
        if match:
            found.append(f"{Path(match['path']).name}:{match['line']} {match['function']}")
            if len(found) == frames:
                break
        elif found and not line.strip():
            break
    return " <- ".join(found)


def fatal_error(stderr: str) -> str:
    """faulthandler's headline (``Fatal Python error: Segmentation fault``) or the last
    non-empty line of stderr."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("Fatal Python error"):
            return line
    return lines[-1][:300] if lines else ""


def default_chunk_size(count: int, jobs: int) -> int:
    return max(1, min(MAX_CHUNK, math.ceil(count / max(jobs, 1))))


def worker_environment(extra: dict[str, str], paths: Sequence[str] = ()) -> dict[str, str]:
    """The parent's environment and ``extra``, with this lazygen first on ``PYTHONPATH``
    (the workers import the same lazygen as the command, installed or not), then
    ``paths``."""
    import lazygen

    root = str(Path(lazygen.__file__).resolve().parent.parent)
    env = {**os.environ, **extra}
    inherited = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([root, *paths, *inherited]))
    return env


class Runner:
    """Runs entries per ``RunConfig``; ``on_result`` is called (from one thread at a time)
    with each result as soon as it is known."""

    def __init__(
        self,
        config: RunConfig,
        on_result: Callable[[EntryResult], None] | None = None,
        python: str = sys.executable,
    ) -> None:
        self.config = config
        self.on_result = on_result
        self.python = python
        self.results: dict[str, EntryResult] = {}
        self.failures: list[WorkerFailure] = []
        self.backend_name: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._live: set[subprocess.Popen] = set()
        self._env = worker_environment(config.env, config.python_path)

    # Public ---------------------------------------------------------------------------

    def run(self, names: Sequence[str]) -> list[EntryResult]:
        """Every entry of ``names``, in that order; raises ``ConformanceSetupError`` if the
        workers cannot start."""
        names = list(dict.fromkeys(names))
        size = self.config.chunk_size or default_chunk_size(len(names), self.config.jobs)
        chunks = [names[i : i + size] for i in range(0, len(names), size)]
        jobs = max(1, min(self.config.jobs, len(chunks)))
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(self._run_group, chunk) for chunk in chunks]
            try:
                for future in futures:
                    future.result()
            except BaseException:  # a setup error, or ^C: stop every worker, then re-raise
                self._stop.set()
                for future in futures:
                    future.cancel()
                self._kill_all()
                raise
        return [self.results[name] for name in names if name in self.results]

    # Chunks ---------------------------------------------------------------------------

    def _record(self, result: EntryResult) -> None:
        with self._lock:
            self.results[result.name] = result
            if self.on_result:
                self.on_result(result)

    def _run_group(self, names: list[str]) -> None:
        """``names`` through as many workers as deaths require (see the module docstring)."""
        pending = list(names)
        while pending and not self._stop.is_set():
            chunk = self._run_chunk(pending)
            if chunk.setup_error is not None and not chunk.ready:
                raise ConformanceSetupError(chunk.setup_error)
            if self._stop.is_set():
                return
            rest = [n for n in pending if n not in chunk.results]
            if not chunk.died:
                if rest:  # a worker that exits 0 reports every entry; anything else is a bug
                    raise ConformanceSetupError(
                        f"worker exited without results for {', '.join(rest)}:\n{chunk.stderr}"
                    )
                return
            if not chunk.ready:
                raise ConformanceSetupError(
                    f"the worker died while starting ({chunk.how()}, before running any "
                    f"entry): {fatal_error(chunk.stderr)}\n{_tail(chunk.stderr)}"
                )
            if chunk.started is None and chunk.results:
                # Died between entries or at exit: no entry was running, so none is
                # blamed; the worker's death is reported with the entries it finished.
                with self._lock:
                    self.failures.append(
                        WorkerFailure(list(chunk.results), chunk.how(), _tail(chunk.stderr))
                    )
                pending = rest
                continue
            if chunk.started is None:  # died after start-up, before its first entry
                chunk.started = rest[0]
            culprit = chunk.started
            self._record(self._isolate(culprit, chunk, alone=len(pending) == 1))
            pending = [n for n in rest if n != culprit]

    def _isolate(self, name: str, chunk: _Chunk, alone: bool) -> EntryResult:
        """The result of ``name``, whose worker ``chunk`` died while running it: re-run
        alone with its lazy ops traced, so that a crash names its entry and its op."""
        if chunk.timed_out:
            return EntryResult(
                name,
                "timeout",
                0,
                f"ran longer than {self.config.timeout:g} s; its worker was killed",
                seconds=self.config.timeout,
            )
        single = self._run_chunk([name], report=False, trace_ops=True)
        if single.setup_error is not None and not single.ready:
            raise ConformanceSetupError(single.setup_error)
        if single.timed_out:
            return self._isolate(name, single, alone=True)
        if single.died:
            return _crash(name, single, single.how())
        ran = single.results.get(name)
        if alone:  # died alone, then ran alone: flaky; still a crash
            note = "died, then ran when re-run alone"
        else:
            note = "died after earlier entries of its worker; alone it ran"
        crash = _crash(name, chunk, chunk.how())
        return replace(
            crash,
            detail=f"{note} ({ran.outcome if ran else 'no result'}): {crash.detail}",
            extra={**crash.extra, "order_dependent": not alone, "flaky": alone},
        )

    def _request(self, names: list[str]) -> Request:
        config = self.config
        return Request(
            entries=names,
            backend=config.backend,
            dtype=config.dtype,
            grad=config.grad,
            samples=config.samples,
            conversions=config.conversions,
            threads=1 if config.jobs > 1 else None,
        )

    def _run_chunk(self, names: list[str], report: bool = True, trace_ops: bool = False) -> _Chunk:
        """One worker over ``names``; returns when it exits or is killed. Its results are
        recorded as they arrive unless ``report`` is false."""
        chunk = _Chunk()
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as stderr:
            process = subprocess.Popen(
                [self.python, "-m", "lazygen.conformance.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=self._env,
                text=True,
                start_new_session=True,  # a timeout kills the worker's children too
            )
            with self._lock:
                self._live.add(process)
            try:
                self._talk(process, names, chunk, report, trace_ops)
            finally:
                with self._lock:
                    self._live.discard(process)
                if not chunk.timed_out:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(timeout=EXIT_GRACE)  # its results are in; it is exiting
                if process.poll() is None:
                    chunk.hung_at_exit = not chunk.timed_out
                    _kill(process)
                chunk.returncode = process.wait()
                stderr.seek(0)
                chunk.stderr = stderr.read()
        return chunk

    def _talk(
        self,
        process: subprocess.Popen,
        names: list[str],
        chunk: _Chunk,
        report: bool,
        trace_ops: bool,
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        with contextlib.suppress(BrokenPipeError):  # a worker that died at once
            request = replace(self._request(names), trace_ops=trace_ops)
            process.stdin.write(json.dumps(asdict(request)))
            process.stdin.close()
        lines: queue.Queue[str | None] = queue.Queue()
        reader = threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True)
        reader.start()
        while True:
            # Start-up (torch, op_db, the backend) may take long on a loaded machine; it
            # gets STARTUP_TIMEOUT at least, each entry then ``timeout``.
            wait = self.config.timeout if chunk.ready else max(self.config.timeout, STARTUP_TIMEOUT)
            try:
                line = lines.get(timeout=wait)
            except queue.Empty:
                chunk.timed_out = True
                _kill(process)
                return
            if line is None:
                return
            if not line.startswith(MARK):
                continue
            event = json.loads(line[len(MARK) :])
            kind = event["event"]
            if kind == "ready":
                chunk.ready = True
                self.backend_name = event.get("backend")
            elif kind == "start":
                chunk.started = event["entry"]
            elif kind == "result":
                result = EntryResult.from_json(event["result"])
                chunk.results[result.name] = result
                chunk.started = None
                if report:
                    self._record(result)
            elif kind == "setup_error":
                chunk.setup_error = event["message"]

    def _kill_all(self) -> None:
        with self._lock:
            live = list(self._live)
        for process in live:
            _kill(process)


def _read_lines(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _kill(process: subprocess.Popen) -> None:
    """Kill the worker's process group (it leads its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def last_op(stderr: str) -> str | None:
    """The last aten op a ``trace_ops`` worker started on lazy tensors, if any."""
    ops = [line[len(OP_MARK) :].strip() for line in stderr.splitlines() if line.startswith(OP_MARK)]
    return ops[-1] if ops else None


def _crash(name: str, chunk: _Chunk, how: str) -> EntryResult:
    """A ``crash`` result from the stderr of the worker that died running ``name``."""
    op = last_op(chunk.stderr)
    site = crash_site(chunk.stderr) or fatal_error(chunk.stderr) or "no traceback on stderr"
    detail = f"{how} in {op}: {site}" if op else f"{how}: {site}"
    stderr = "\n".join(line for line in chunk.stderr.splitlines() if not line.startswith(OP_MARK))
    extra = {"stderr": _tail(stderr)}
    if op:
        extra["op"] = op
    return EntryResult(name, "crash", 0, detail, signal=how, extra=extra)
