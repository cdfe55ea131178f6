"""When a rank dies, the others stop with an error naming it.

A rank killed or stopped by an exception closes its connections; the other ranks' next
collective (inside a step's graph, or on host tensors) then fails in gloo with "Connection
closed by peer [127.0.0.1]:30593", an address that names no rank, which lazygen reported
as a failure of the collective's node "traced at an unknown line": an error pointing at
the wrong rank. So each rank of a lazy process group leaves in the group's store where it
runs (host and process id) and, if it dies of an uncaught exception, what the exception
was (a ``sys.excepthook`` that chains to the previous one). When a collective fails with a
lost connection, ``explain`` looks for the ranks that died: an exception one left, or a
process on this host that is gone; a store that no longer answers means the process that
hosted it (rank 0, unless a launcher such as torchrun hosts it) died. It returns a
``RankFailedError`` naming them, which the failed graph carries instead of the gloo text.
A collective that times out while every rank lives is a program that issued it on some
ranks only: ``CollectiveTimeoutError`` says so, and what to do.

Bounded: the error comes when gloo sees the connection close (at once for a process that
dies on this host, or the group's timeout at worst), and the diagnosis waits at most
``_SETTLE_S`` for a dying process to be gone. Ranks on other hosts are named only when
they left an exception; otherwise the gloo error stands.
"""

from __future__ import annotations

import datetime
import os
import re
import socket
import sys
import time
import traceback

from .. import state
from ..errors import LazygenRuntimeError, LazyGraphError
from ..execution import failures

#: gloo's (and the store's) words for a peer that went away.
_LOST = re.compile(
    r"Connection closed by peer|Connection reset by peer|Broken pipe|ECONNRESET|EPIPE"
    r"|Connection refused|Socket closed",
    re.IGNORECASE,
)
#: gloo's words for a collective that waited past the group's timeout.
_TIMED_OUT = re.compile(r"Timed out waiting \d+ ?ms", re.IGNORECASE)
_SETTLE_S = 3.0  # a killed process closes its sockets just before it is gone
_STORE_TIMEOUT = datetime.timedelta(seconds=5)
_WHERE = "lazygen-ranks/{}"  # "host pid" of each rank
_EXIT = "lazygen-exits/{}"  # the uncaught exception a rank died of


class _Watch:
    """The job's ranks as this process watches them: ``ranks``, [(store, rank, size)] of its
    first lazy group (or the default group), and ``hook``, [sys.excepthook as it was]
    (replaced once). Both live as long as the process group and the hook, beyond a reset
    (``state.for_process``)."""

    __slots__ = ("ranks", "hook")

    def __init__(self) -> None:
        self.ranks: list = []
        self.hook: list = []


class RankFailedError(LazyGraphError):
    """Another rank of the job died (killed, crashed, or an uncaught exception) while this
    one needed it in a collective. ``dead_ranks`` maps each dead rank to how it died."""

    def __init__(self, dead: dict[int, str], rank: int, size: int, cause: BaseException) -> None:
        LazygenRuntimeError.__init__(self, _message(dead, rank, size))
        self.stage, self.failed_node, self.cause, self.backend = "execution", None, cause, None
        self.op_name = self.source = None
        self.dead_ranks = dict(dead)


class CollectiveTimeoutError(LazyGraphError):
    """A collective waited past the process group's timeout while every other rank was
    alive: they did not issue it (a tensor that needs it read on some ranks alone)."""

    def __init__(self, rank: int, size: int, cause: BaseException) -> None:
        LazygenRuntimeError.__init__(
            self,
            f"lazygen: a collective on this rank ({rank} of {size}) waited past the process "
            "group's timeout; the other ranks are alive but did not issue it. Every rank must "
            "run the same collectives in the same order, and on the lazy device a collective "
            "runs when a tensor that needs it is read: a read on some ranks alone (a DTensor's "
            "full_tensor(), an all-reduced tensor printed or .item()'d under `if rank == 0`) "
            "waits for ranks that never traced it. Compute it on every rank; reading it on "
            "one alone is fine once every rank has traced it and called dist.barrier(), "
            "which issues the traced collectives",
        )
        self.stage, self.failed_node, self.cause, self.backend = "execution", None, cause, None
        self.op_name = self.source = None


def _message(dead: dict[int, str], rank: int, size: int) -> str:
    who = "; ".join(f"rank {r} {how}" for r, how in sorted(dead.items()))
    return (
        f"lazygen: {who}. This rank ({rank} of {size}) needed it in a collective, which "
        "cannot complete without every rank, so the job stops here: fix what stopped that "
        "rank and restart the job (from its last checkpoint)"
    )


def watch(store, rank: int, size: int, default_group: bool) -> None:
    """Leave where this rank runs in the group's ``store``, record its uncaught exception
    there if it dies of one, and explain lost connections: for the first lazy group of
    the process, or the default group (the world; made again after
    ``destroy_process_group``)."""
    watched = state.for_process(_Watch)
    if watched.ranks and not default_group:
        return
    watched.ranks[:] = [(store, rank, size)]
    store.set(_WHERE.format(rank), f"{socket.gethostname()} {os.getpid()}")
    if not watched.hook:
        watched.hook.append(sys.excepthook)
        sys.excepthook = _note_exception
    failures.register_explainer(explain)


def _note_exception(kind, value, tb) -> None:
    """``sys.excepthook``: leave the exception in the store for the other ranks, then do
    what the previous hook did (print it)."""
    watched = state.for_process(_Watch)
    try:
        store, rank, _ = watched.ranks[0]
        frame = traceback.extract_tb(tb)[-1] if tb is not None else None
        where = f" at {frame.filename}:{frame.lineno}" if frame else ""
        store.set(_EXIT.format(rank), f"{kind.__name__}: {value}{where}")
    except Exception:  # noqa: BLE001 - the store may be gone too; the message must print
        pass
    watched.hook[0](kind, value, tb)


def explain(error: BaseException) -> LazyGraphError | None:
    """A ``RankFailedError`` when ``error`` is a lost connection (or a timeout) and dead
    ranks are found; a ``CollectiveTimeoutError`` for a timeout with every rank alive."""
    lost, timed_out = _says(error, _LOST), _says(error, _TIMED_OUT)
    ranks = state.for_process(_Watch).ranks
    if not ranks or not (lost or timed_out):
        return None
    store, rank, size = ranks[0]
    deadline = time.monotonic() + (_SETTLE_S if lost else 0.0)
    while True:
        dead = _dead_ranks(store, rank, size)
        if dead or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if dead:
        return RankFailedError(dead, rank, size, error)
    return CollectiveTimeoutError(rank, size, error) if timed_out else None


def _says(error: BaseException | None, words: re.Pattern) -> bool:
    """Whether ``error`` or an error it came from says ``words``."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if words.search(str(error)):
            return True
        error = error.__cause__ or error.__context__
    return False


def _dead_ranks(store, rank: int, size: int) -> dict[int, str]:
    """Each other rank found dead, with how: the exception it left, or its process gone."""
    here = socket.gethostname()
    dead = {}
    try:
        store.set_timeout(_STORE_TIMEOUT)
        for other in range(size):
            if other == rank:
                continue
            if store.check([_EXIT.format(other)]):
                dead[other] = f"died of {store.get(_EXIT.format(other)).decode()}"
            elif store.check([_WHERE.format(other)]):
                host, pid = store.get(_WHERE.format(other)).decode().split()
                if host == here and not _running(int(pid)):
                    dead[other] = f"died (its process {pid} is gone: killed, crashed or exited)"
    except Exception as error:  # noqa: BLE001 - the store itself is gone
        host = _store_address(store)
        return {
            0: f"(or the launcher hosting the job's store {host}) died: the store does not "
            f"answer ({type(error).__name__}: {error})"
        }
    return dead


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _store_address(store) -> str:
    while hasattr(store, "underlying_store"):
        store = store.underlying_store
    host, port = getattr(store, "host", None), getattr(store, "port", None)
    return f"at {host}:{port}" if host else "(no address)"
