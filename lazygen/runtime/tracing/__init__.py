"""The tracing stage: what turns a torch op on a lazy tensor into IR, or runs it eagerly.

An op reaches ``dispatch`` (which kernel handles which overload); a lazy kernel builds a
node with its shapes from ``shape_inference`` (reusing a node of an earlier step through
``ir_reuse``); an op without one is decomposed (``decompositions``) or run on the device
data by the eager ``fallback`` (also where a backend's ``refusals`` go). ``tensor`` holds
the lazy tensor those steps produce and consume. Nothing here compiles or runs a graph:
that is the execution stage's job (``lazygen.runtime.execution``).
"""
