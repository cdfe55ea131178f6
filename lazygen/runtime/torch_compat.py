"""The one place where the runtime meets differences between supported torch releases.

lazygen supports the torch releases of ``lazygen.torch_releases.SUPPORTED``. Importing the
runtime on any other torch stops here, with one error naming the supported range (not a
failure deep inside torch's internals later). Where torch's internals differ between
supported releases, the difference is answered here, by release, and the rest of the
runtime asks this module: no ``torch.__version__`` test lives anywhere else.

Differences handled here:

* generated code: argument names and schemas in ``native_functions.yaml`` change between
  releases (2.14 renamed ``_cdist_backward``'s and ``_pdist_backward``'s ``grad`` to
  ``grad_output``), so a package ships one generated tree per release and its
  ``__init__`` takes the installed torch's (``generated_tree``).
* CUDA's autocast policy, which the lazy device follows: 2.14 added ``linalg_matrix_sqrth``
  (an op new in 2.14) to its float32 list (``autocast_added``).
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import torch

from lazygen.torch_releases import (
    SUPPORTED,
    release_of,
    release_text,
    tree_name,
    tree_release,
    unsupported_message,
)


class UnsupportedTorchError(ImportError):
    """The installed torch is not one lazygen supports (raised when the runtime is imported)."""


def require_supported(version: str) -> tuple[int, int]:
    """The release of ``version``; raises `UnsupportedTorchError` if lazygen does not
    support it."""
    release = release_of(version)
    if release not in SUPPORTED:
        raise UnsupportedTorchError(unsupported_message(version))
    return release


#: The running torch's full version (``2.13.0+cpu``): what a thing built by this torch
#: and kept across processes is keyed by (lazygen's persistent caches).
VERSION: str = torch.__version__

#: ``(major, minor)`` of the running torch.
RELEASE: tuple[int, int] = require_supported(torch.__version__)

#: Ops each release added to CUDA's autocast policy (``ATen/autocast_mode.cpp``), by list.
_AUTOCAST_ADDED: MappingProxyType[tuple[int, int], MappingProxyType[str, tuple[str, ...]]] = (
    MappingProxyType({(2, 14): MappingProxyType({"fp32": ("linalg_matrix_sqrth",)})})
)


def autocast_added(policy_list: str) -> tuple[str, ...]:
    """The ops the running release's CUDA autocast policy has in ``policy_list`` (``"fp32"``)
    beyond the oldest supported release's."""
    return tuple(
        name
        for release, lists in sorted(_AUTOCAST_ADDED.items())
        if release <= RELEASE
        for name in lists.get(policy_list, ())
    )


def generated_tree(init_file: str, package: str) -> str:
    """The folder of the installed torch's tree in a package generated per torch release
    (``lazygen gen --per-torch-release``); its ``__init__`` sets ``__path__`` to it."""
    root = Path(init_file).resolve().parent
    tree = root / tree_name(RELEASE)
    if not (tree / "__init__.py").is_file():
        present = sorted(
            release_text(r)
            for r in (tree_release(p.name) for p in root.iterdir() if p.is_dir())
            if r is not None
        )
        raise UnsupportedTorchError(
            f"{package} holds generated code for torch {', '.join(present) or 'no release'}, "
            f"not for the installed torch {torch.__version__}: generate its tree with this "
            f"torch (`lazygen gen` with the same op list and output directory)"
        )
    return str(tree)
