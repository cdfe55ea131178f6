"""Code generation speed: `lazygen gen` (cold and unchanged rerun) vs torchgen's
`run_gen_lazy_tensor`, for PyTorch's TS op list. Fresh processes, alternating, median of 5.

    .venv/bin/python bench/codegen.py [--repeat 5]

cold: an empty output directory (no stamp, nothing to compare with).
rerun: the same directory again, inputs unchanged (skipped by the input-hash stamp).
import torch: a process that only imports torch, the bound of a cold run (the generator
needs torch's registered schemas, meta kernels and the hand-written runtime's signatures).
torchgen: run_gen_lazy_tensor on the packaged ATen yaml/templates of the installed wheel,
with the wheel's shape_inference.h (the minimal invocation that works outside a source tree).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _timing import time_process

REPO = Path(__file__).resolve().parents[1]
OP_LIST = REPO.parent / "shared" / "reference" / "pytorch_ts_op_list.yaml"

TORCHGEN = """
import importlib.util, os, sys
import torchgen
from torchgen.gen_lazy_tensor import run_gen_lazy_tensor
aten = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen")
torch_dir = os.path.dirname(importlib.util.find_spec("torch").origin)
run_gen_lazy_tensor(
    aten_path=aten, source_yaml=sys.argv[1], output_dir=sys.argv[2], dry_run=False,
    impl_path=None, node_base="TsNode", node_base_hdr="torch/csrc/lazy/ts_backend/ts_node.h",
    build_in_tree=True, gen_forced_fallback_code=True, backend_name="TorchScript",
    shape_inference_hdr=os.path.join(torch_dir, "include", "torch", "csrc", "lazy", "core",
                                     "shape_inference.h"),
)
"""


def _time(cmd: list[str]) -> float:
    return time_process(cmd, cwd=str(REPO))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--op-list", type=Path, default=OP_LIST)
    args = parser.parse_args()
    py = sys.executable
    lazygen = [py, "-m", "lazygen.cli", "gen", str(args.op_list), "-q"]
    times: dict[str, list[float]] = {
        "torchgen": [],
        "lazygen cold": [],
        "lazygen rerun": [],
        "import torch": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            out = Path(tmp) / f"lazygen{i}"
            tg_out = Path(tmp) / f"torchgen{i}"
            times["torchgen"].append(_time([py, "-c", TORCHGEN, str(args.op_list), str(tg_out)]))
            times["lazygen cold"].append(_time(lazygen + ["-o", str(out)]))
            times["lazygen rerun"].append(_time(lazygen + ["-o", str(out)]))
            times["import torch"].append(_time([py, "-c", "import torch"]))
            shutil.rmtree(out)
    medians = {k: statistics.median(v) for k, v in times.items()}
    base = medians["torchgen"]
    for name, value in medians.items():
        spread = f"{min(times[name]):.3f}-{max(times[name]):.3f}"
        print(f"{name:14s} median {value:6.3f} s  ({spread})  ratio {value / base:5.2f}x")
    print(f"goals: cold <= 0.35x, rerun <= 0.10x of torchgen ({base:.2f} s here)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
