"""A minimal out-of-tree lazy backend whose IR/kernels are generated at build time."""

from setuptools import setup

from lazygen.build_hook import lazygen_cmdclass

setup(
    name="tiny-lazy-backend",
    version="0.1.0",
    packages=["tiny_backend", "tiny_backend.generated", "tiny_backend.hand_written"],
    entry_points={"lazygen.backends": ["tiny = tiny_backend.backend:TinyBackend"]},
    cmdclass=lazygen_cmdclass(
        backend_yaml="tiny_backend.yaml",
        output_dir="tiny_backend/generated",
        templates="templates",
        hand_written="tiny_backend.hand_written",
    ),
)
