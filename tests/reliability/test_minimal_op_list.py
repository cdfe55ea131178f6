"""A backend author's first op list: four ops (``add.Tensor``, ``mul.Tensor``, ``mm``,
``relu``) lowered by the fx backend's lowering; everything else goes through the eager
fallback or composite kernels (issue #23). Nothing may crash, results equal eager, and a
step cut into many graphs by fallbacks says so once, naming the ops.

One PrivateUse1 backend per process and kernel tables are process-wide, so the backend
(``fourop`` of ``support.backend_sites``, generated into a temporary site directory) is
exercised in a subprocess that prints one JSON line per case; a crash fails the cases that
did not report, naming the one that ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.backend_sites import build_site

DRIVER = r"""
import copy, json, sys, traceback, warnings
import torch
sys.path.insert(0, sys.argv[1])
import lazygen.runtime as lr
lr.init(backend="fourop")  # found by its entry point in the test site
from support.training import WORKLOADS, assert_as_accurate_as_eager, train
d = lr.device()

def report(name, **result):
    print("RESULT " + json.dumps({"case": name, **result}), flush=True)

def case(name):
    def run(fn):
        print(f"CASE {name}", flush=True)
        try:
            report(name, ok=True, detail=fn())
        except Exception as error:
            report(name, ok=False, detail=f"{type(error).__name__}: {error}"[:2000])
        return fn
    return run

@case("graph_cut_warning")
def _():
    lr.mark_step()
    lr.metrics.reset()
    x = torch.randn(4, 4).to(d)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = torch.addmm(x * 2, x, x) + 1  # addmm reads pending IR: the graph is cut there
        lr.mark_step()
        z = torch.addmm(x * 2, x, x) + 1
        lr.mark_step()  # warned once per process only
    cuts = [w for w in caught if issubclass(w.category, lr.GraphCutWarning)]
    assert len(cuts) == 1, [str(w.message) for w in caught]
    assert "aten::addmm" in str(cuts[0].message), str(cuts[0].message)
    report_ = lr.metrics.fallback_report()
    entry = {e.op: e for e in report_.fallbacks}["aten::addmm"]
    assert entry.count == 2 and entry.graph_cuts == 2, entry
    assert (entry.first_source or "").startswith("<string>:"), entry  # this driver's line
    (y + z).sum().item()
    reads = {e.op for e in lr.metrics.fallback_report().host_reads}
    assert "aten::_local_scalar_dense" in reads, reads
    assert "aten::_local_scalar_dense" not in {e.op for e in lr.metrics.fallback_report().fallbacks}
    return str(report_)

@case("kron")
def _():
    a, b = torch.randn(2, 3), torch.randn(3, 2)
    torch.testing.assert_close(torch.kron(a.to(d), b.to(d)).cpu(), torch.kron(a, b))

@case("bias_free_linear_3d")
def _():
    m, x = torch.nn.Linear(4, 2, bias=False), torch.randn(3, 5, 4)
    torch.testing.assert_close(copy.deepcopy(m).to(d)(x.to(d)).cpu(), m(x))

@case("matmul_3d_by_2d")
def _():
    a, b = torch.randn(2, 3, 4), torch.randn(4, 5)
    torch.testing.assert_close((a.to(d) @ b.to(d)).cpu(), a @ b)

@case("sdpa_with_mask_and_grad")
def _():
    q = torch.randn(2, 3, 5, 4)
    mask = torch.rand(5, 5) > 0.3
    lq = q.to(d).requires_grad_()
    out = torch.nn.functional.scaled_dot_product_attention(lq, lq, lq, attn_mask=mask.to(d))
    out.sum().backward()
    eq = q.clone().requires_grad_()
    want = torch.nn.functional.scaled_dot_product_attention(eq, eq, eq, attn_mask=mask)
    want.sum().backward()
    torch.testing.assert_close(out.cpu(), want)
    torch.testing.assert_close(lq.grad.cpu(), eq.grad)

@case("batch_norm_running_stats")
def _():
    torch.manual_seed(0)
    eager, x = torch.nn.BatchNorm1d(3), torch.randn(4, 3)
    lazy = copy.deepcopy(eager).to(d)
    torch.testing.assert_close(lazy(x.to(d)).cpu(), eager(x))
    torch.testing.assert_close(lazy.running_mean.cpu(), eager.running_mean)
    torch.testing.assert_close(lazy.running_var.cpu(), eager.running_var)

for workload in ("mlp", "cnn", "transformer"):
    @case(f"train_{workload}")
    def _(workload=workload):
        spec = WORKLOADS[workload]
        model, batches = spec.model(), spec.batches(3)
        e_losses, e_state = train(copy.deepcopy(model), "adam", batches, "cpu")
        l_losses, l_state = train(copy.deepcopy(model), "adam", batches, str(d), lr.mark_step)

        def reference():
            wide = [(x.double(), y) for x, y in batches]
            losses, state = train(copy.deepcopy(model).double(), "adam", wide, "cpu")
            return [torch.tensor(losses), *state]

        assert_as_accurate_as_eager(
            [torch.tensor(l_losses), *l_state], [torch.tensor(e_losses), *e_state], reference
        )

"""

CASES = [
    "kron",
    "bias_free_linear_3d",
    "matmul_3d_by_2d",
    "sdpa_with_mask_and_grad",
    "batch_norm_running_stats",
    "train_mlp",
    "train_cnn",
    "train_transformer",
    "graph_cut_warning",
]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, dict]:
    site = build_site(tmp_path_factory.mktemp("four"))
    tests_dir = Path(__file__).resolve().parents[1]
    env = {**os.environ}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    run = subprocess.run(
        [sys.executable, "-c", DRIVER, str(tests_dir)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    results = {}
    running = None
    for line in run.stdout.splitlines():
        if line.startswith("CASE "):
            running = line[5:]
        elif line.startswith("RESULT "):
            result = json.loads(line[7:])
            results[result["case"]] = result
            running = None
    if running is not None:  # the interpreter died in this case
        results[running] = {
            "ok": False,
            "detail": f"the process died (exit {run.returncode}) in this case:\n"
            + textwrap.indent(run.stderr[-3000:], "  "),
        }
    for name in CASES:
        results.setdefault(
            name,
            {"ok": False, "detail": f"never ran (exit {run.returncode}): {run.stderr[-2000:]}"},
        )
    return results


@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_a_four_op_list_never_crashes_and_equals_eager(name, outcomes):
    result = outcomes[name]
    assert result["ok"], result["detail"]
