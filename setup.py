"""Packaging glue that pyproject.toml cannot express.

`generated/` is a source folder, not a top-level import name: it is installed as the
`lazygen.generated` sub-package so nobody's site-packages gains a module called
`generated`.
"""

from setuptools import find_packages, setup

GENERATED_DIR = "generated"

packages = find_packages(include=["lazygen", "lazygen.*"])
packages += ["lazygen.generated"] + [
    f"lazygen.generated.{name}" for name in find_packages(GENERATED_DIR)
]

setup(
    packages=packages,
    package_dir={"lazygen.generated": GENERATED_DIR},
)
