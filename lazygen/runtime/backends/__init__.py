"""lazygen's built-in backends, by name. Listed as ``module:attribute`` strings and imported
only when chosen (``init(backend=...)``), so the runtime's core never imports one.

* ``torchscript`` (alias ``ts``): graphs as TorchScript functions; the default where
  TorchScript works (``default_backend``).
* ``inductor``: graphs as ``torch.fx`` modules of aten overloads compiled by Inductor.
* ``fx``: the same ``torch.fx`` modules, run uncompiled (debugging, portability).
* ``jax``: graphs as XLA programs through ``jax.jit`` (needs ``pip install lazygen[jax]``).

Third-party backends register an entry point in the ``lazygen.backends`` group instead.
"""

from __future__ import annotations

import warnings
from types import MappingProxyType

from ..backend_interface import Backend, make_backend

BUILTIN = MappingProxyType(
    {
        "torchscript": "lazygen.runtime.backends.torchscript.backend:TorchScriptBackend",
        "ts": "lazygen.runtime.backends.torchscript.backend:TorchScriptBackend",
        "inductor": "lazygen.runtime.backends.inductor.backend:InductorBackend",
        "fx": "lazygen.runtime.backends.fx.backend:FxBackend",
        "jax": "lazygen.runtime.backends.jax.backend:JaxBackend",
    }
)

DEFAULT = "torchscript"

#: The default's stand-in where TorchScript does not work (torch deprecates it and plans
#: builds without it): ``fx`` runs graphs with eager's kernels, so it needs no compiler
#: toolchain (``inductor`` needs a C++ compiler) and gives eager's results.
STAND_IN = "fx"


class DefaultBackendWarning(RuntimeWarning):
    """The default backend could not be made and a stand-in runs instead."""


def default_backend() -> Backend:
    """The backend ``init`` uses when none is named (no argument, no ``LAZYGEN_BACKEND``):
    ``DEFAULT``, or, where it does not import or start (a torch without TorchScript),
    ``STAND_IN``, said in one warning naming the reason. A backend the user names is
    never replaced: its failure is their error to see."""
    try:
        return make_backend(DEFAULT, BUILTIN)
    except Exception as error:  # noqa: BLE001 - any failure to import or start it
        reason = str(error).removeprefix("lazygen: ")
    warnings.warn(
        f"lazygen: the default backend {DEFAULT!r} is unavailable ({reason}); using the "
        f"{STAND_IN!r} backend instead. Name a backend (init(backend=...) or "
        "LAZYGEN_BACKEND) to choose another and silence this warning",
        DefaultBackendWarning,
        stacklevel=3,
    )
    return make_backend(STAND_IN, BUILTIN)
