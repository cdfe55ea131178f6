"""How the runtime names and reaches ``torch.ops`` overloads, in one place.

* ``library_name(op)``: ``"add.Tensor"`` (``"relu"`` for a default overload), the form
  ``torch.library.Library.impl`` registers under and ``config.set_force_fallback`` takes.
* ``COMPOSITE``: a keyset to ``redispatch`` an op to its CompositeExplicitAutograd kernel.
  The lazy device's PrivateUse1 slot holds no kernel of its own for such ops (only a backend
  fallback, which a composite kernel outranks), so redispatching there reaches the composite.
"""

from __future__ import annotations

import torch

COMPOSITE = torch._C.DispatchKeySet(torch._C.DispatchKey.PrivateUse1)


def library_name(op) -> str:
    name = op._schema.name.split("::", 1)[-1]
    if op._overloadname == "default":
        return name
    return f"{name}.{op._overloadname}"
