"""A tiny lazy backend: its kernels and IR nodes are generated at build time by lazygen."""
