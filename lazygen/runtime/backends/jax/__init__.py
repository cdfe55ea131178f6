"""The built-in ``jax`` backend (``init(backend="jax")``, ``LAZYGEN_BACKEND=jax``): lazy
graphs compiled by XLA through ``jax.jit``; see ``backend.py`` and docs/jax-backend.md.
Needs JAX (``pip install lazygen[jax]``)."""
