"""The torch releases lazygen supports, and how generated code is kept per release.

lazygen generates code from the installed torch's operator catalogue and talks to torch's
internals, so it supports a closed range of torch minor releases, each tested in CI. The
range is stated once, here (``pyproject.toml``'s requirement must say the same; a test
checks it). The generator and the runtime both read it; nothing here imports torch, so the
command line and the build hook can ask it cheaply.

Generated code that ships inside a package (lazygen's own built-in op list) is kept as one
tree per supported release, ``<output>/torch<major>_<minor>/``, each generated with that
torch; the package's ``__init__`` picks the installed torch's tree at import
(``lazygen.runtime.torch_compat.generated_tree``). See ``docs/guides/generating.md``.
"""

from __future__ import annotations

import re

#: Supported (major, minor) releases, oldest first. The first is the primary release: the
#: one the scripts install by default and CI runs the whole suite on.
SUPPORTED: tuple[tuple[int, int], ...] = ((2, 13), (2, 14))
PRIMARY: tuple[int, int] = SUPPORTED[0]
#: The requirement, as ``pyproject.toml`` writes it.
REQUIREMENT = (
    f"torch>={SUPPORTED[0][0]}.{SUPPORTED[0][1]},<{SUPPORTED[-1][0]}.{SUPPORTED[-1][1] + 1}"
)

_VERSION = re.compile(r"^(\d+)\.(\d+)")
_TREE = re.compile(r"^torch(\d+)_(\d+)$")


def release_of(version: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a torch version string (``"2.14.1+cu130"`` -> ``(2, 14)``)."""
    match = _VERSION.match(version)
    return (int(match[1]), int(match[2])) if match else None


def is_supported(version: str) -> bool:
    """Whether lazygen supports this torch version."""
    return release_of(version) in SUPPORTED


def unsupported_message(version: str) -> str:
    """The one error for an unsupported torch, naming the supported range and the fix."""
    releases = ", ".join(f"{major}.{minor}" for major, minor in SUPPORTED)
    return (
        f"lazygen supports torch {releases} ({REQUIREMENT}); this environment has torch "
        f"{version}. Install a supported torch, e.g. `pip install '{REQUIREMENT}'`."
    )


def tree_name(release: tuple[int, int]) -> str:
    """The folder of one release's generated tree (``(2, 14)`` -> ``"torch2_14"``)."""
    return f"torch{release[0]}_{release[1]}"


def tree_release(name: str) -> tuple[int, int] | None:
    """The release a tree folder is for (``"torch2_14"`` -> ``(2, 14)``), None if not a tree."""
    match = _TREE.match(name)
    return (int(match[1]), int(match[2])) if match else None


def release_text(release: tuple[int, int]) -> str:
    """``(2, 14)`` -> ``"2.14"``."""
    return f"{release[0]}.{release[1]}"
