"""lazygen: turn PyTorch's operator catalogue into a working lazy-tensor backend.

The generator (``lazygen.model``, ``lazygen.loaders``, ``lazygen.lazy``,
``lazygen.render``) and the runtime (``lazygen.runtime``) are separate: the runtime never
imports the generator, and generated modules import only the runtime.
"""

__version__ = "0.1.0"
