"""The ``fx`` and ``inductor`` backends: lazy graphs as ``torch.fx`` GraphModules of aten
overloads, run as Python (``fx``) or compiled by Inductor (``inductor``)."""
