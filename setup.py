"""Packaging glue that pyproject.toml cannot express.

* `generated/` is a source folder, not a top-level import name: it is installed as the
  `lazygen.generated` sub-package so nobody's site-packages gains a module called
  `generated`. `templates/` (the built-in Jinja templates) is installed the same way, as
  `lazygen/templates/`, so wheels ship it.
* The TS backend is regenerated at build time through lazygen's own build hook (the same
  one any backend's setup.py can use). In an isolated build environment without torch the
  hook says so and the committed `generated/` sources are used.
"""

import sys
from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent
GENERATED_DIR = "generated"
TEMPLATES_DIR = "templates"
sys.path.insert(0, str(ROOT))  # the hook comes from this source tree, not an installed lazygen

from lazygen.build_hook import lazygen_cmdclass  # noqa: E402

packages = find_packages(include=["lazygen", "lazygen.*"])
packages += ["lazygen.generated"] + [
    f"lazygen.generated.{name}" for name in find_packages(GENERATED_DIR)
]
packages += ["lazygen.templates"]  # data only: the *.jinja files (package-data)

setup(
    packages=packages,
    package_dir={"lazygen.generated": GENERATED_DIR, "lazygen.templates": TEMPLATES_DIR},
    cmdclass=lazygen_cmdclass(
        backend_yaml="yaml/ts_backend.yaml",
        output_dir=f"{GENERATED_DIR}/ts_backend",
        optional="yes",
    ),
)
