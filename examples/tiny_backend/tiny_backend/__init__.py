"""Tiny: an out-of-tree lazygen backend (see README.md). Its IR nodes and kernels are
generated at build time from ``tiny_backend.yaml``; ``backend.TinyBackend`` runs graphs
with its own interpreter, not TorchScript. It registers as ``tiny`` through the
``lazygen.backends`` entry point, so ``lazygen.runtime.init(backend="tiny")`` finds it."""
