"""The whole training step under ``torch.compile(step, backend="lazygen")``: forward,
``loss.backward()``, ``optimizer.step()`` and ``zero_grad`` for SGD (momentum), Adam and
AdamW, ``foreach`` on and off. Dynamo breaks the step at ``.backward()`` (and around the
optimizer's step): the forward graph carries its backward through aot_autograd, and the
optimizer step is a graph of its own that updates parameters and state in place. Every one
of them runs on lazygen, none eagerly, equal to eager over several steps.

The eager reference is the program Dynamo traced, run by torch's own kernels
(``backend="aot_eager"``): traced, Adam keeps its step count a tensor and computes its
step size in float32 tensor ops instead of Python floats, which moves its results by a few
float32 ulps from the uncompiled optimizer's (measured: 1.5e-6 on the loss after 4 steps,
for lazygen and aot_eager alike). Tolerances come from that run's own distance from a
float64 run (``assert_as_accurate_as_eager``)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.support.training import assert_as_accurate_as_eager, make_mlp

from .conftest import count

OPTIMIZERS = {
    "sgd_momentum": (torch.optim.SGD, {"lr": 0.05, "momentum": 0.9}),
    "adam": (torch.optim.Adam, {"lr": 1e-2}),
    "adamw": (torch.optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1}),
}
STEPS = 4


def _stepper(model, x, y, name: str, foreach: bool, detach: bool = False):
    cls, kwargs = OPTIMIZERS[name]
    opt = cls(model.parameters(), foreach=foreach, **kwargs)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if detach:  # what lets Dynamo trace backward() into the forward's graph
            loss = loss.detach()
        opt.step()
        return loss

    return step, opt


def _state(model, opt) -> list[torch.Tensor]:
    """Parameters and every tensor of the optimizer's state (momentum buffers, Adam's
    moments and step counts): the step must update them in place as eager does."""
    state = [p.detach() for p in model.parameters()]
    for p in model.parameters():
        for key in sorted(opt.state[p]):
            value = opt.state[p][key]
            state.append(torch.as_tensor(value).detach().clone().float())
    return state


@pytest.mark.parametrize("foreach", [True, False], ids=["foreach", "for_loop"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_the_whole_step_runs_on_lazygen_and_equals_eager(name: str, foreach: bool):
    model = make_mlp(seed=3, sizes=(12, 16, 5))
    ref, ref64 = copy.deepcopy(model), copy.deepcopy(model).double()
    x, y = torch.randn(8, 12), torch.randint(0, 5, (8,))
    step, opt = _stepper(model, x, y, name, foreach)
    ref_step, ref_opt = _stepper(ref, x, y, name, foreach)
    ref64_step, ref64_opt = _stepper(ref64, x.double(), y, name, foreach)
    run = torch.compile(step, backend="lazygen")
    ref_step = torch.compile(ref_step, backend="aot_eager")
    ref64_step = torch.compile(ref64_step, backend="aot_eager")
    captures, runs = [], []
    for _ in range(STEPS):
        runs_before = count("DynamoGraphRun")
        got, want, want64 = run(), ref_step(), ref64_step()
        assert_as_accurate_as_eager([got.detach()], [want.detach()], [want64.detach()])
        captures.append(count("DynamoCapture"))
        runs.append(count("DynamoGraphRun") - runs_before)
    assert_as_accurate_as_eager(_state(model, opt), _state(ref, ref_opt), _state(ref64, ref64_opt))
    assert count("DynamoEagerGraph") == 0
    assert count("DynamoEagerGraphRun") == 0
    assert count("DynamoEagerSegment") == 0
    assert count("DynamoLazyInputGraph") == 0
    # Forward (with zero_grad), its backward and the optimizer step: three lazygen graphs
    # per step, from two Dynamo captures (Dynamo breaks the step at .backward()).
    assert runs[-2:] == [3, 3], runs
    # Captured once per structure: SGD's first step makes its momentum buffers (a graph of
    # its own), Adam's first step its moments; no capture after that.
    assert captures[-1] == captures[-2] == captures[1], captures


@pytest.mark.parametrize(
    "name, foreach",
    [("sgd_momentum", True), ("adam", True), ("adamw", True), ("adamw", False)],
    ids=["sgd_momentum-foreach", "adam-foreach", "adamw-foreach", "adamw-for_loop"],
)
def test_with_backward_traced_the_whole_step_is_two_graphs(name: str, foreach: bool):
    """``torch._dynamo.config.trace_autograd_ops`` makes Dynamo trace ``loss.backward()``
    (the loss detached before the optimizer's step): forward and backward are one graph, the
    optimizer's step another, both on lazygen, and the step equals eager's."""
    model = make_mlp(seed=5, sizes=(12, 16, 5))
    ref, ref64 = copy.deepcopy(model), copy.deepcopy(model).double()
    x, y = torch.randn(8, 12), torch.randint(0, 5, (8,))
    step, opt = _stepper(model, x, y, name, foreach, detach=True)
    ref_step, ref_opt = _stepper(ref, x, y, name, foreach, detach=True)
    ref64_step, ref64_opt = _stepper(ref64, x.double(), y, name, foreach, detach=True)
    runs = []
    with torch._dynamo.config.patch(trace_autograd_ops=True):
        run = torch.compile(step, backend="lazygen")
        ref_step = torch.compile(ref_step, backend="aot_eager")
        ref64_step = torch.compile(ref64_step, backend="aot_eager")
        for _ in range(STEPS):
            runs_before = count("DynamoGraphRun")
            got, want, want64 = run(), ref_step(), ref64_step()
            runs.append(count("DynamoGraphRun") - runs_before)
            assert_as_accurate_as_eager([got], [want], [want64])
    assert_as_accurate_as_eager(_state(model, opt), _state(ref, ref_opt), _state(ref64, ref64_opt))
    assert count("DynamoEagerGraph") == 0
    assert count("DynamoEagerSegment") == 0
    assert runs[-2:] == [2, 2], runs
    # The parameters' gradients are the traced backward's: eager reads them after the step.
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        assert p.grad is not None
        torch.testing.assert_close(p.grad, q.grad, atol=1e-6, rtol=1e-5)


def test_parameters_updated_in_place_keep_their_identity_and_the_step_sees_new_data():
    """The optimizer graph writes parameters in place: the tensors a caller holds change
    (no copies swapped in), and data written into a parameter outside the step reaches the
    next compiled step (inputs are read each call, not baked in at capture)."""
    model = make_mlp(seed=4, sizes=(6, 8, 3))
    ref = copy.deepcopy(model)
    x, y = torch.randn(4, 6), torch.randint(0, 3, (4,))
    step, _ = _stepper(model, x, y, "sgd_momentum", True)
    ref_step, _ = _stepper(ref, x, y, "sgd_momentum", True)
    run = torch.compile(step, backend="lazygen")
    held = list(model.parameters())
    for i in range(3):
        if i == 2:
            with torch.no_grad():
                for m in (model, ref):
                    m[0].weight.mul_(0.5)
        run(), ref_step()
    assert [p is q for p, q in zip(held, model.parameters(), strict=True)] == [True] * 4
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, q, atol=1e-6, rtol=1e-5)
    assert count("DynamoEagerGraph") == 0


@pytest.mark.parametrize(
    "flags, counters",
    [
        ((), "captures 3, graph runs 6 (3 steps), graphs run eagerly 0"),
        (("--break-at-backward",), "captures 4, graph runs 9 (3 steps), graphs run eagerly 0"),
    ],
    ids=["backward_traced", "break_at_backward"],
)
def test_the_example_trains_the_whole_step_on_lazygen(flags, counters):
    """Two graphs per step with backward traced (SGD's first step makes its momentum
    buffers in a graph of its own: a third capture), three when Dynamo breaks at it."""
    script = Path(__file__).parents[2] / "examples" / "compile" / "train_step.py"
    done = subprocess.run(
        [sys.executable, str(script), "--steps", "3", "--optimizer", "sgd", *flags],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert counters in done.stdout, done.stdout
