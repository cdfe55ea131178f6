"""The lazy model: how each schema argument and operator appears in the lazy IR.

Pure functions of `lazygen.model`; nothing here renders code.
"""

from lazygen.lazy.arguments import ArgKind, LazyArgument, UnsupportedArgument, classify
from lazygen.lazy.ir_schema import (
    LazyIrSchema,
    node_class_name,
    op_kind_of,
    resolve_properties,
    snake_name,
)

__all__ = [
    "ArgKind",
    "LazyArgument",
    "LazyIrSchema",
    "UnsupportedArgument",
    "classify",
    "node_class_name",
    "op_kind_of",
    "resolve_properties",
    "snake_name",
]
