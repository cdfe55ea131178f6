"""Count the files an ordinary op's life crosses at run time: ``addcdiv``, recorded, lowered
on a graph-cache miss, run and read back, on one backend.

Run: ``python -m tests.support.op_life [backend]`` (``torchscript``, the default; ``jax``,
``inductor``, ``fx``). A profile hook (``sys.setprofile``, every thread) notes each Python
file whose code runs between the op's call and its result on the host; the runtime's setup
(``init``, the first graph of the process) is done before, so what is counted is the op's
own path. Files are grouped as ``docs/architecture.md`` counts them: the runtime core
(``lazygen/runtime`` outside the backends and the built-in op list), each backend
(``lazygen/runtime/backends/<name>``), the built-in op list (``runtime/builtin`` and the
generated code). The persistent caches are off while it counts (``LAZYGEN_CACHE=0``): a
graph an earlier process compiled would skip the lowering.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import torch

import lazygen
import lazygen.runtime as lr

PACKAGE = Path(lazygen.__file__).resolve().parent
RUNTIME = PACKAGE / "runtime"
GENERATED = PACKAGE.parent / "generated"


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
    root = PACKAGE.parent
    return path.relative_to(root).as_posix() if root in path.parents else str(path)


def _program(shape) -> torch.Tensor:
    x = torch.rand(shape, device="lazygen")
    t1 = torch.rand(shape, device="lazygen")
    t2 = torch.rand(shape, device="lazygen") + 1
    lr.mark_step()  # the inputs become device data: the op's graph holds addcdiv only
    return x, t1, t2


def op_life(backend: str = "torchscript") -> dict[str, list[str]]:
    """Group -> the files ``addcdiv``'s path runs code in (sorted)."""
    before = os.environ.get("LAZYGEN_CACHE")
    os.environ["LAZYGEN_CACHE"] = "0"
    try:
        return _count(backend)
    finally:
        if before is None:
            del os.environ["LAZYGEN_CACHE"]
        else:
            os.environ["LAZYGEN_CACHE"] = before


def _count(backend: str) -> dict[str, list[str]]:
    lr.init(backend=backend)
    x, t1, t2 = _program((3, 5))  # warm: the process's first graph, imports
    x.addcdiv(t1, t2, value=0.5).cpu()
    x, t1, t2 = _program((7, 11))  # a new shape: the op's graph misses the cache
    seen: set[str] = set()

    def hook(frame, event, arg):
        if event == "call":
            seen.add(frame.f_code.co_filename)

    threading.setprofile(hook)
    sys.setprofile(hook)
    try:
        y = x.addcdiv(t1, t2, value=0.5)
        lr.mark_step()
        y.cpu()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    groups: dict[str, list[str]] = {}
    for name in seen:
        path = Path(name).resolve()
        group = _group(path) if path.is_file() else None
        if group is not None:
            groups.setdefault(group, []).append(_relative(path))
    return {group: sorted(files) for group, files in sorted(groups.items())}


if __name__ == "__main__":
    for group, files in op_life(*sys.argv[1:2]).items():
        print(f"{group}: {len(files)}")
        for file in files:
            print(f"  {file}")
