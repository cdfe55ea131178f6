"""The ``fx`` backend: lazy graphs as ``torch.fx`` GraphModules of aten overloads, run as
Python (``backend.py``, ``lowering.py``); the ``inductor`` backend compiles them."""
