"""The names lazygen's built-in op list had before it was called ``builtin`` everywhere,
so an old command line (``lazygen gen yaml/ts_backend.yaml``, ``--hand-written
lazygen.runtime.builtin``) fails with the new name instead of a bare "not found"."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from lazygen.diagnostics import LazygenError, Location

#: Op list file names that were renamed: old name -> new name (same folder).
OP_LIST_FILES = MappingProxyType({"ts_backend.yaml": "builtin.yaml"})
#: Hand-written packages that were renamed: old name -> new name.
HAND_WRITTEN_PACKAGES = MappingProxyType(
    {"lazygen.runtime.builtin": "lazygen.runtime.builtin.hand_written"}
)


def check_op_list_path(path: str | Path) -> None:
    """Raise naming the new file when `path` is a missing op list that was renamed."""
    path = Path(path)
    new = OP_LIST_FILES.get(path.name)
    if new is not None and not path.is_file():
        raise LazygenError.at(
            Location(str(path)),
            f"backend op list not found: lazygen's built-in op list {path.name} was "
            f"renamed {new}",
            f"use {path.with_name(new).as_posix()}",
        )


def check_hand_written_package(package: str) -> None:
    """Raise naming the new package when `package` is a renamed hand-written package."""
    new = HAND_WRITTEN_PACKAGES.get(package)
    if new is not None:
        raise LazygenError.at(
            None,
            f"--hand-written {package}: the built-in op list's hand-written pieces moved "
            f"to {new}",
            f"use --hand-written {new} (or leave the option out: it is the default)",
        )
