"""Backends the conformance tests install into a temporary site directory, found by name
through the ``lazygen.backends`` entry point as any third-party backend would be:

* ``fourop``: a minimal op list (``add.Tensor``, ``mul.Tensor``, ``mm``, ``relu``, all
  ``full_codegen``), generated at test time, lowered by the fx backend's lowering;
  everything else runs through the eager fallback;
* ``crashing``: the fx backend with lazygen's op list, except that a graph computing
  ``aten.sin`` kills its process with SIGSEGV, one computing ``aten.cos`` never finishes
  and one computing ``aten.tan`` returns results off by one (a wrong backend); with
  ``CONFORMANCE_TEST_CRASH_AT_EXIT`` set, its process kills itself at exit.

``build_site(root)`` writes them and returns the directory to put on ``PYTHONPATH``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

FOUR_OPS = ("add.Tensor", "mul.Tensor", "mm", "relu")
FOUR_OP_LIST = "backend: Four\nfull_codegen:\n" + "".join(f"  - {op}\n" for op in FOUR_OPS)

BACKENDS = textwrap.dedent('''
    """Backends of lazygen's conformance tests (see tests/support/backend_sites.py)."""

    import atexit
    import importlib
    import os
    import signal
    import time

    import torch

    from lazygen.runtime import KernelTables
    from lazygen.runtime.backends import BUILTIN

    aten = torch.ops.aten
    # The built-in fx backend's class, wherever the runtime keeps it.
    _module, _, _name = BUILTIN["fx"].partition(":")
    FxBackend = getattr(importlib.import_module(_module), _name)

    if os.environ.get("CONFORMANCE_TEST_CRASH_AT_EXIT"):
        atexit.register(lambda: os.kill(os.getpid(), signal.SIGSEGV))


    class FourOpBackend(FxBackend):
        name = "fourop"

        def kernel_tables(self):
            return KernelTables.from_module("conformance_four.generated.registration")


    class CrashingBackend(FxBackend):
        name = "crashing"

        def execute(self, executable, inputs):
            targets = {n.target for n in executable.module.graph.nodes}
            if aten.sin.default in targets:
                os.kill(os.getpid(), signal.SIGSEGV)
            if aten.cos.default in targets:
                time.sleep(3600)
            results = super().execute(executable, inputs)
            if aten.tan.default in targets:
                results = [r + 1 if r.is_floating_point() else r for r in results]
            return results
    ''')

ENTRY_POINTS = (
    "[lazygen.backends]\n"
    "fourop = conformance_backends:FourOpBackend\n"
    "crashing = conformance_backends:CrashingBackend\n"
)


def build_site(root: Path) -> Path:
    """Write the backends (generating ``fourop``'s package) under ``root``; returns the
    directory to put on ``PYTHONPATH``."""
    from lazygen.cli import main

    site = root / "site"
    (site / "conformance_four").mkdir(parents=True)
    (site / "conformance_four" / "__init__.py").write_text("")
    op_list = root / "four_ops.yaml"
    op_list.write_text(FOUR_OP_LIST)
    status = main(["gen", str(op_list), "-o", str(site / "conformance_four" / "generated")])
    assert status == 0, "generating the 4-op backend failed"
    (site / "conformance_backends.py").write_text(BACKENDS)
    dist_info = site / "conformance_backends-0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: conformance-backends\nVersion: 0\n"
    )
    (dist_info / "entry_points.txt").write_text(ENTRY_POINTS)
    return site
