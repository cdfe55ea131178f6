"""The tracing stage: the lazy tensor and what turns an op on it into an IR node.

``tensor`` holds the lazy tensor (``LazyTensor``: its ``__torch_dispatch__`` reads the active
kernel table); a lazy kernel builds a node with its shapes from ``output_shapes``
(reusing a node of an earlier step through ``ir_reuse``), its random ops' seeds from
``random_inputs``. (An op's spellings: ``op_registry``.) Which kernel an op gets, and
the eager path of ops without one, is the dispatch stage's job (``lazygen.runtime.dispatch``,
above this package and above execution: the eager fallback syncs its inputs). Nothing here
compiles or runs a graph: that is the execution stage's (``lazygen.runtime.execution``).
"""
