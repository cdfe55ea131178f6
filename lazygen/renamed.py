"""Every compatibility alias lazygen keeps, in one place, each with the version it goes away in.

An old name keeps working (or fails naming the new one) for a while after a rename, so that
command lines, generated code and scripts written before it do not break without a word.
Each table maps the old name to a ``Renamed`` (the new name and the release that drops the
old one); the code that honours an alias reads it here and nowhere else:

* ``OP_LIST_FILES``, ``HAND_WRITTEN_PACKAGES``: the generator's command line fails naming the
  new file or package (``check_op_list_path``, ``check_hand_written_package``);
* ``GENERATED_PACKAGES``: ``KernelTables.from_module`` names the new registration module;
* ``KERNEL_SUPPORT_NAMES``: code generated before a rename of a ``kernel_support`` (``rt``)
  name still runs, with a ``DeprecationWarning`` saying to regenerate;
* ``COUNTERS``: ``lr.metrics`` answers to a counter's old name.

torch._lazy's own spellings (``SyncedTensorsWithIR``, ``IrNodeReused_torch::lazy::*``,
``LTC_SAVE_TENSORS_FILE``, ``lazy::view_copy_symint``) are not aliases that go away: they are
the names LTC programs use (docs/ltc-compat.md), kept with the code that reads them; the
counter one is ``LTC_COUNTERS`` here.

Shared by the generator and the runtime: it imports only ``lazygen.diagnostics``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from lazygen.diagnostics import LazygenError, Location

#: The release that drops the aliases below (lazygen is 0.1.x while they exist).
NEXT_MINOR = "0.2.0"


@dataclass(frozen=True, slots=True)
class Renamed:
    """The new name of an old one, and the release whose code no longer knows the old one."""

    new: str
    goes_away_in: str = NEXT_MINOR


#: Op list file names that were renamed: old name -> new name (same folder).
OP_LIST_FILES = MappingProxyType({"ts_backend.yaml": Renamed("builtin.yaml")})
#: Hand-written packages that were renamed: old name -> new name.
HAND_WRITTEN_PACKAGES = MappingProxyType(
    {"lazygen.runtime.builtin": Renamed("lazygen.runtime.builtin.hand_written")}
)
#: Generated packages that moved: old module prefix -> new one.
GENERATED_PACKAGES = MappingProxyType(
    {"lazygen.generated.": Renamed("lazygen.runtime.builtin.generated.")}
)
#: Names of ``lazygen.runtime.kernel_support`` (``rt``) that generated code used to call.
KERNEL_SUPPORT_NAMES = MappingProxyType({"eager": Renamed("eager_fallback")})
#: Counters that were renamed (issue 42: "eager" names what torch runs itself, so graphs run
#: op by op are "uncompiled").
COUNTERS = MappingProxyType(
    {
        "EagerGraphRun": Renamed("UncompiledGraphRun"),
        "EagerGraphCompiled": Renamed("UncompiledGraphCompiled"),
    }
)
#: torch._lazy's names of lazygen's counters (kept: LTC programs read them).
LTC_COUNTERS = MappingProxyType({"SyncedTensorsWithIR": "SyncedTensors"})


def check_op_list_path(path: str | Path) -> None:
    """Raise naming the new file when `path` is a missing op list that was renamed."""
    path = Path(path)
    renamed = OP_LIST_FILES.get(path.name)
    if renamed is not None and not path.is_file():
        raise LazygenError.at(
            Location(str(path)),
            f"backend op list not found: lazygen's built-in op list {path.name} was "
            f"renamed {renamed.new} (the old name is known until lazygen "
            f"{renamed.goes_away_in})",
            f"use {path.with_name(renamed.new).as_posix()}",
        )


def check_hand_written_package(package: str) -> None:
    """Raise naming the new package when `package` is a renamed hand-written package."""
    renamed = HAND_WRITTEN_PACKAGES.get(package)
    if renamed is not None:
        raise LazygenError.at(
            None,
            f"--hand-written {package}: the built-in op list's hand-written pieces moved "
            f"to {renamed.new}",
            f"use --hand-written {renamed.new} (or leave the option out: it is the default)",
        )


def generated_package_hint(module_name: str) -> str:
    """The sentence that names where a moved generated module now is ("" if it did not)."""
    for old, renamed in GENERATED_PACKAGES.items():
        if module_name.startswith(old):
            return (
                f". The built-in op list's generated package moved: its registration is now "
                f"'{renamed.new}registration' (`lazygen.runtime.builtin.tables.kernel_tables()` "
                "gives its tables)"
            )
    return ""
