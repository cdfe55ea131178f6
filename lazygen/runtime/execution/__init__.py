"""The execution stage: what turns the pending IR of a step into results on the device.

``executor`` collects the pending nodes, keys the graph, has the graph layer
(``lazygen.runtime.graph``) decide which executable it gets, compiles and runs it (a step's
single-element results first, in a graph of their own: ``split``); ``launches`` tracks the
runs still in flight; ``step_closures`` runs what the program asked to run once a step's
tensors are materialised; ``profiling`` names that work in torch's profiler traces. Tracing
(``lazygen.runtime.tracing``) feeds this stage and never runs a graph itself; the dispatch
stage (``lazygen.runtime.dispatch``) calls it to sync the inputs of an eager fallback.
"""
