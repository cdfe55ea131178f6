"""The runtime's mutable state: one ``Runtime`` object, which ``reset()`` replaces.

* ``runtime``: the one object (torchax's ``Environment``, JAX's config): every subsystem's
  state is a *part* of it, an instance of a small class of that subsystem's module, made on
  first use (``part(kind)``): the counters and fallback tables (``metrics``), the device
  caches (``devices``), pending step closures, warnings given once, graph stores,
  compiled graphs kept for reports... Per-thread state hangs off ``runtime.per_thread``.
  ``reset()`` makes a new ``Runtime``: every part starts again as its class makes it, so a
  reset is right by construction, whatever was imported when. A part that keeps something
  through a reset (the devices ``init()`` made: live tensors hold them) says so in its
  ``on_reset()``, which hands the new runtime what it keeps.
* ``settings``: the knobs read on the hot path (``config`` is their public facade, whose
  setters also refresh what a setting affects). Twenty modules hold it by name, so it is
  one object for the process; ``reset()`` puts its values back.
* ``kernel_table``: the kernel table, what ``LazyTensor.__torch_dispatch__`` runs (op ->
  kernel, and its ``missing`` handler), held by reference on the hot path and filled in
  place by ``dispatch`` (again at each reset, from its part's ``on_reset``).

* ``process``: an object of the same class that is never replaced, the one holder of what
  torch holds references to (``torch.library`` objects, wrapped functions, handles torch
  gave out, kernel tables installed in torch): ``for_process(Kind)`` and ``process_memo``.
* ``memo``: ``functools.cache`` with its answers on ``runtime`` (a reset forgets them).

Module-level mutable state elsewhere is the documented few (docs/architecture.md,
"Module-level state", each with its reason); ``tests/architecture/test_state_ownership.py``
fails on any other. No module registers a reset: a reset is a new object, whatever was
imported when.

``reset()`` puts all of it back as ``init()`` left it: settings to their environment
defaults (the device name and backing device stay: they are fixed once tensors exist),
kernels to the installed tables, caches and counters empty. Tests use it instead of
clearing a module's globals by hand. What ``init()`` changes in torch and in the process
(PrivateUse1, patches, GC) is not state to reset: ``process`` lists it.

The bottom of the runtime: it imports nothing of lazygen and never calls into the modules
that read it, except through their parts' ``on_reset``.

Debug verbosity comes from one environment variable, ``LAZYGEN_DEBUG``:
0 (default) silent; 1 records each IR node's source line; 2 also logs compiles and syncs.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable
from types import MappingProxyType
from typing import TypeVar

import torch

from .environment import SETTINGS

#: The settings no environment variable sets, with why (the others are
#: ``environment.SETTINGS``: one list for both).
RUNTIME_ONLY_SETTINGS = MappingProxyType(
    {
        "record_source": "derived: on with LAZYGEN_DEBUG >= 1, a save file, or explained "
        "recompiles",
        "reuse_ir": "set by lr.config.set_reuse_ir only",
        "force_fallback": "set by lr.config.set_force_fallback only",
        "backing_device": "LAZYGEN_BACKING_DEVICE, read once: fixed for the process",
        "device_type": "the lazy device's name, fixed by init(device_name=...)",
    }
)


class _Settings:
    """Mutable runtime settings; the hot path reads attributes of the single instance."""

    __slots__ = tuple(v.setting for v in SETTINGS) + tuple(RUNTIME_ONLY_SETTINGS)

    def __init__(self) -> None:
        self.restore()
        self.backing_device = os.environ.get("LAZYGEN_BACKING_DEVICE", "cpu")
        # The lazy device's name (PrivateUse1 renamed), fixed by ``init(device_name=...)``
        # before the first lazy tensor; every module reads it here.
        self.device_type = "lazygen"

    def restore(self) -> None:
        """Every knob ``config`` can change back to its default (from the environment,
        ``environment.SETTINGS``), except the device name and backing device, which hold for
        the process."""
        for variable in SETTINGS:
            setattr(self, variable.setting, variable.read())
        # LAZYGEN_SAVE_TENSORS_FILE (or LTC's LTC_SAVE_TENSORS_FILE): every synced graph's
        # IR is appended there (``debug``), with the user's line of each node when set
        # before the runtime starts (sources are then recorded). Explained recompiles name
        # the user's line of the node that differs, so they record sources too.
        saving = os.environ.get("LAZYGEN_SAVE_TENSORS_FILE") or os.environ.get(
            "LTC_SAVE_TENSORS_FILE"
        )
        self.record_source = self.debug >= 1 or bool(saving) or self.explain_recompiles
        self.reuse_ir = False
        self.force_fallback: frozenset[str] = frozenset()


settings = _Settings()


def is_lazy_device(device) -> bool:
    """Whether ``device`` (a ``torch.device``, a string such as ``"lazygen:0"``) is the lazy
    device, under whatever name ``init(device_name=...)`` gave it."""
    if isinstance(device, str):
        return device.partition(":")[0] == settings.device_type
    return isinstance(device, torch.device) and device.type == settings.device_type


class KernelTable(dict):
    """The dispatch table ``LazyTensor.__torch_dispatch__`` reads: ``torch.ops`` overload ->
    kernel, and ``missing``, what runs an op it has no kernel for (``dispatch`` sets it when
    ``init()`` wires the runtime; None before: such an op is an error). ``dispatch`` fills
    it in place (never replaces it: readers hold a reference) and refills it at every reset
    (its ``_Active`` part's ``on_reset``)."""

    __slots__ = ("missing",)

    def __init__(self) -> None:
        super().__init__()
        self.missing: Callable | None = None


#: The one dispatch table of the process (see ``KernelTable``).
kernel_table = KernelTable()


class BoundedMemo(dict):
    """A memo part of the runtime read on the hot path by subscript (``runtime.parts[Kind]``,
    no call) and bounded by its class's ``limit``: full, it is emptied rather than evicted
    one entry at a time, since what overflows it is values that change every step (Adam's
    bias correction), which no order of eviction would keep useful."""

    __slots__ = ()
    limit = 1024

    def keep(self, key, value):
        """Store ``value`` under ``key`` (emptying the memo first when full); return it."""
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value


Part = TypeVar("Part")


class Runtime:
    """The runtime's state for one run between resets: its parts, one per subsystem, keyed
    by the part's class, per-thread state (``per_thread``, a ``threading.local``) and the
    answers of the functions memoised with ``memo`` (``memos``, by function).

    Read it as ``state.runtime`` (or a part as ``state.part(Kind)``) each time, never keep
    it: ``reset()`` replaces it. ``state.process`` is an object of the same class that is
    never replaced: what must live as long as the process (``for_process``)."""

    __slots__ = ("parts", "per_thread", "memos")

    def __init__(self) -> None:
        self.parts: dict[type, object] = {}
        self.per_thread = threading.local()
        self.memos: dict[Callable, dict] = {}

    def part(self, kind: type[Part]) -> Part:
        """This runtime's ``kind`` (a subsystem's state class), made by ``kind()`` on first
        use."""
        try:
            return self.parts[kind]
        except KeyError:  # two threads racing: one instance wins
            return self.parts.setdefault(kind, kind())

    def answers(self, function: Callable) -> dict:
        """The memo of ``function``: its arguments -> its answer."""
        try:
            return self.memos[function]
        except KeyError:
            return self.memos.setdefault(function, {})


#: The one runtime object; ``reset()`` replaces it.
runtime = Runtime()

#: What lives as long as the process, never reset, in one place: what torch holds
#: references to (the ``torch.library`` objects whose kernels torch dispatches through, the
#: functions it calls back, the handles it gave out), the objects whose identity torch or a
#: compiled graph keeps (the kernel tables installed in torch, node classes), and the memos
#: of facts of the process. Each module's share is a part (``for_process(Kind)``) or a memo
#: (``process_memo``); docs/architecture.md lists them with their reasons.
process = Runtime()


def part(kind: type[Part]) -> Part:
    """The current runtime's ``kind`` (see ``Runtime.part``)."""
    return runtime.part(kind)


def for_process(kind: type[Part]) -> Part:
    """The process's ``kind`` (see ``process``): made on first use, never reset."""
    return process.part(kind)


Answer = TypeVar("Answer")


def _memoised(function: Callable[..., Answer], holder: Callable[[], Runtime]):
    def memoised(*args) -> Answer:
        answers = holder().answers(memoised)
        try:
            return answers[args]
        except KeyError:  # two threads racing: one answer wins
            return answers.setdefault(args, function(*args))

    functools.update_wrapper(memoised, function)
    return memoised


def memo(function: Callable[..., Answer]) -> Callable[..., Answer]:
    """``functools.cache`` for a pure function (positional, hashable arguments), its answers
    kept on the runtime object: ``reset()`` forgets them (they are computed again)."""
    return _memoised(function, lambda: runtime)


def process_memo(function: Callable[..., Answer]) -> Callable[..., Answer]:
    """``memo`` whose answers live on ``process``: for answers whose identity is held (an
    object torch or compiled graphs keep) or that must not change once computed."""
    return _memoised(function, lambda: process)


class Warned(set):
    """The warnings given once per run (a part: ``part(Warned)``), by a name the warning
    module chooses (``"persistent_cache:write"``); a reset gives them again."""


def first_time(warning: str) -> bool:
    """Whether ``warning`` is given for the first time since the last reset (it is noted)."""
    given = part(Warned)
    if warning in given:
        return False
    given.add(warning)
    return True


def reset() -> None:
    """Put the runtime's state back as ``init()`` left it (see the module docstring): a new
    ``Runtime``, holding what each old part's ``on_reset()`` returns (called while the old
    runtime is still current, so an ``on_reset`` that reads another part sees the old
    one, which a part kept through resets is too). Pending IR is not synced first: call
    ``mark_step()`` before, if tensors should keep their values."""
    global runtime
    settings.restore()
    fresh = Runtime()
    for kind, held in list(runtime.parts.items()):
        on_reset = getattr(held, "on_reset", None)
        kept = on_reset() if on_reset is not None else None
        if kept is not None:
            fresh.parts[kind] = kept
    runtime = fresh


def log(level: int, message: str) -> None:
    """Print ``message`` to stderr when ``LAZYGEN_DEBUG`` is at least ``level``."""
    if settings.debug >= level:
        print(f"[lazygen] {message}", file=sys.stderr)
