"""Count the files an ordinary op's life crosses at run time: ``addcdiv``, recorded, lowered
on a graph-cache miss, run and read back, on one backend.

Run: ``python -m tests.support.op_life [backend]`` (``torchscript``, the default; ``jax``,
``inductor``, ``fx``).

How it counts. A profile hook (``sys.setprofile``, every thread) counts the calls into each
Python file while a program runs ``y = x.addcdiv(t1, t2, value=0.5)`` ``k`` times in a
chain, then ``mark_step()`` and ``y.cpu()``. The runtime's setup (``init``, the process's
first graphs, imports) is done before, each program has sizes of its own so its graph
misses the graph cache and is lowered and compiled, and the persistent caches are off
(``LAZYGEN_CACHE=0``): a graph an earlier process compiled would skip the lowering. A
generator resumed is not a call (a generator expression over a graph's inputs is one call
of the function that holds it, however many inputs it walks).

Two readings of "the op's life", both reported:

* **the whole run** (``k = 1``): every file that runs code between the op's call and its
  result on the host. This is everything a one-op graph crosses: the executor, the graph
  cache, the compile, launches, metrics, the rng, the host copy.
* **the op's own path**: the files whose call count grows with each ``addcdiv`` (``k = 1``,
  ``2``, ``3``: strictly more calls each time): recording the op, its shape rule, its IR
  node, the graph key's entry for it, its lowering. The rest of the whole run is **graph
  machinery**: files a graph crosses a fixed number of times whatever ops it holds.

Calls into lazygen made by torch's own Python code while lazygen runs it (torch's compiler
asking lazygen's process-wide hooks, such as the patched ``torch._C._has_storage`` or the
device module's ``is_available``, about each node of the graph it compiles) are counted
apart, as **torch's callbacks**: they grow with the graph's nodes too, but they are torch's
compiler's work, the same for any graph it compiles in the process, not the op's path
through lazygen. The nearest caller outside lazygen decides: a torch file, below a lazygen
frame, makes a callback; the program itself (and JAX tracing a lowering) does not.

Files are grouped as ``docs/architecture.md`` counts them: the runtime core
(``lazygen/runtime`` outside the backends and the built-in op list), each backend
(``lazygen/runtime/backends/<name>``), the built-in op list (``runtime/builtin`` and the
generated code).
"""

from __future__ import annotations

import dis
import inspect
import os
import sys
import threading
from collections import Counter
from pathlib import Path

import torch

import lazygen
import lazygen.runtime as lr
from lazygen.runtime.builtin import generated as generated_package

PACKAGE = Path(lazygen.__file__).resolve().parent
RUNTIME = PACKAGE / "runtime"
#: Where this process's generated op list is (an editable install maps it to the checkout's
#: ``generated/builtin/torch2_<minor>``, an installed wheel holds it under ``runtime/builtin``).
GENERATED = Path(generated_package.__file__).resolve().parent
TORCH = Path(torch.__file__).resolve().parent
_LAZYGEN_PREFIXES = (str(PACKAGE), str(GENERATED))
_TORCH_PREFIX = str(TORCH)
_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_RESUME = dis.opmap["RESUME"]  # its argument: 0 at a function's start, > 0 after a yield
#: The readings ``op_life`` returns, in the order the command prints them.
READINGS = ("whole run", "op's own path", "graph machinery", "torch's callbacks")


def _group(path: Path) -> str | None:
    """Which count a file of the op's path belongs to, or None (torch, the standard library)."""
    if GENERATED in path.parents or RUNTIME / "builtin" in path.parents:
        return "op list"
    if RUNTIME / "backends" in path.parents:
        parts = path.relative_to(RUNTIME / "backends").parts
        return f"backend {parts[0]}" if len(parts) > 1 else "runtime core"
    if RUNTIME in path.parents:
        return "runtime core"
    if PACKAGE in path.parents:
        return "lazygen (outside the runtime)"
    return None


def _relative(path: Path) -> str:
    for root in (PACKAGE.parent, GENERATED.parent.parent):
        if root in path.parents:
            return path.relative_to(root).as_posix()
    return str(path)


def _program(shape) -> torch.Tensor:
    x = torch.rand(shape, device="lazygen")
    t1 = torch.rand(shape, device="lazygen")
    t2 = torch.rand(shape, device="lazygen") + 1
    lr.mark_step()  # the inputs become device data: the op's graph holds addcdiv only
    return x, t1, t2


def _is_callback(frame) -> bool:
    """Whether a lazygen frame was called by torch's Python code that lazygen called."""
    caller = frame.f_back
    while caller is not None and caller.f_code.co_filename.startswith(_LAZYGEN_PREFIXES):
        caller = caller.f_back
    if caller is None or not caller.f_code.co_filename.startswith(_TORCH_PREFIX):
        return False
    above = caller.f_back
    while above is not None:
        if above.f_code.co_filename.startswith(_LAZYGEN_PREFIXES):
            return True
        above = above.f_back
    return False


def _resumed(frame) -> bool:
    """Whether a generator's frame is resumed after a yield (not started)."""
    at = frame.f_lasti
    return at > 0 and frame.f_code.co_code[at] == _RESUME and frame.f_code.co_code[at + 1] > 0


def _calls(k: int, shape) -> tuple[Counter, Counter]:
    """(own, callback) call counts per file of ``k`` chained addcdivs, marked and read."""
    x, t1, t2 = _program(shape)
    own: Counter = Counter()
    callbacks: Counter = Counter()

    def hook(frame, event, arg):
        code = frame.f_code
        if event != "call" or (code.co_flags & _RESUMABLE and _resumed(frame)):
            return
        name = code.co_filename
        if name.startswith(_LAZYGEN_PREFIXES):
            (callbacks if _is_callback(frame) else own)[name] += 1

    threading.setprofile(hook)
    sys.setprofile(hook)
    try:
        y = x
        for _ in range(k):
            y = y.addcdiv(t1, t2, value=0.5)
        lr.mark_step()
        y.cpu()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return own, callbacks


def _grouped(names) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for name in names:
        path = Path(name).resolve()
        group = _group(path) if path.is_file() else None
        if group is not None:
            groups.setdefault(group, []).append(_relative(path))
    return {group: sorted(files) for group, files in sorted(groups.items())}


def op_life(backend: str = "torchscript") -> dict[str, dict[str, list[str]]]:
    """Reading (``READINGS``) -> group -> the files it crosses (sorted)."""
    before = os.environ.get("LAZYGEN_CACHE")
    os.environ["LAZYGEN_CACHE"] = "0"
    try:
        return _count(backend)
    finally:
        if before is None:
            del os.environ["LAZYGEN_CACHE"]
        else:
            os.environ["LAZYGEN_CACHE"] = before


def _count(backend: str) -> dict[str, dict[str, list[str]]]:
    lr.init(backend=backend)
    _calls(1, (3, 5))  # warm: the process's first graph, imports
    runs = [_calls(k, (7, 10 + k)) for k in (1, 2, 3)]  # new sizes: each misses the cache
    (own1, back1), (own2, back2), (own3, back3) = runs

    def grows(a: Counter, b: Counter, c: Counter) -> set[str]:
        return {name for name in set(a) | set(b) | set(c) if a[name] < b[name] < c[name]}

    whole = set(own1) | set(back1)
    own_path = grows(own1, own2, own3)
    callbacks = grows(back1, back2, back3) - own_path
    return {
        "whole run": _grouped(whole),
        "op's own path": _grouped(own_path),
        "graph machinery": _grouped(whole - own_path - callbacks),
        "torch's callbacks": _grouped(callbacks),
    }


if __name__ == "__main__":
    for reading, groups in op_life(*sys.argv[1:2]).items():
        print(f"== {reading}")
        for group, files in groups.items():
            print(f"{group}: {len(files)}")
            for file in files:
                print(f"  {file}")
