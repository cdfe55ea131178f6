"""Hand-written shape functions ``compute_shape_<name>`` for ops without a usable meta kernel.

Each takes the op's arguments (lazy tensors expose ``dtype`` and ``shape``) and returns a
list of ``Shape``. The generator reports which ones it requires.
"""

from __future__ import annotations

from ..ir import Shape

__all__ = ["Shape"]
