"""lazygen's built-in backends, by name. Listed as ``module:attribute`` strings and imported
only when chosen (``init(backend=...)``), so the runtime's core never imports one.

* ``torchscript`` (alias ``ts``): graphs as TorchScript functions; the default.
* ``inductor``: graphs as ``torch.fx`` modules of aten overloads compiled by Inductor.
* ``fx``: the same ``torch.fx`` modules, run uncompiled (debugging, portability).
* ``jax``: graphs as XLA programs through ``jax.jit`` (needs ``pip install lazygen[jax]``).

Third-party backends register an entry point in the ``lazygen.backends`` group instead.
"""

from types import MappingProxyType

BUILTIN = MappingProxyType(
    {
        "torchscript": "lazygen.runtime.backends.torchscript.backend:TorchScriptBackend",
        "ts": "lazygen.runtime.backends.torchscript.backend:TorchScriptBackend",
        "inductor": "lazygen.runtime.backends.inductor.backend:InductorBackend",
        "fx": "lazygen.runtime.backends.inductor.backend:FxBackend",
        "jax": "lazygen.runtime.backends.jax.backend:JaxBackend",
    }
)

DEFAULT = "torchscript"
