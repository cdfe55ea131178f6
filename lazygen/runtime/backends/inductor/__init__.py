"""The ``inductor`` backend: the ``fx`` backend's GraphModules (``backends/fx``) compiled by
Inductor."""
