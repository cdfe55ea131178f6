"""Packaging glue that pyproject.toml cannot express.

* The built-in op list is laid out as `lazygen new-backend` lays out a backend: op list
  `yaml/builtin.yaml`, generated code in `<package>/generated`, hand-written pieces in
  `<package>/hand_written`, the package being `lazygen.runtime.builtin`. Its generated code
  stays in the top-level `generated/builtin/` source folder (the project's layout keeps
  generated and hand-written code apart) and is installed as
  `lazygen.runtime.builtin.generated`. `templates/` (the built-in Jinja templates) is
  installed the same way, as `lazygen/templates/`, so wheels ship it.
* The built-in op list's generated code is kept per supported torch release
  (`generated/builtin/torch2_13/`, `torch2_14/`, each generated with that torch;
  `lazygen.release_trees`), and the package picks the installed torch's tree at import,
  so one wheel runs on every supported torch. The installed torch's tree is regenerated at
  build time through lazygen's own build hook (the same one any backend's setup.py can
  use). In an isolated build environment without torch the hook says so and the committed
  `generated/` sources are used.
"""

import sys
from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent
BUILTIN_OP_LIST = "yaml/builtin.yaml"
BUILTIN_GENERATED_DIR = "generated/builtin"
BUILTIN_GENERATED_PACKAGE = "lazygen.runtime.builtin.generated"
TEMPLATES_DIR = "templates"
sys.path.insert(0, str(ROOT))  # the hook comes from this source tree, not an installed lazygen

from lazygen.build_hook import lazygen_cmdclass  # noqa: E402
from lazygen.torch_releases import SUPPORTED, tree_name  # noqa: E402

packages = find_packages(include=["lazygen", "lazygen.*"])
packages += [BUILTIN_GENERATED_PACKAGE]
packages += [f"{BUILTIN_GENERATED_PACKAGE}.{tree_name(release)}" for release in SUPPORTED]
packages += ["lazygen.templates"]  # data only: the *.jinja files (package-data)

setup(
    packages=packages,
    package_dir={
        BUILTIN_GENERATED_PACKAGE: BUILTIN_GENERATED_DIR,
        "lazygen.templates": TEMPLATES_DIR,
    },
    cmdclass=lazygen_cmdclass(
        backend_yaml=BUILTIN_OP_LIST,
        output_dir=BUILTIN_GENERATED_DIR,
        hand_written="lazygen.runtime.builtin.hand_written",
        optional="yes",
        per_torch_release="yes",
    ),
)
