"""``share_number_operands``: numbers of arithmetic ops as one 0-dim tensor per graph run
(lazygen/runtime/backends/torchscript/passes.py)."""

import collections

import pytest
import torch

from lazygen.runtime.backends.torchscript.passes import share_number_operands

_ARITHMETIC = """
graph(%x : Tensor):
  %half : float = prim::Constant[value=0.5]()
  %one : int = prim::Constant[value=1]()
  %beta : float = prim::Constant[value=0.999]()
  %a : Tensor = aten::mul(%x, %half)
  %b : Tensor = aten::add(%a, %one, %one)
  %c : Tensor = aten::sub(%b, %beta, %one)
  %d : Tensor = aten::div(%c, %beta)
  %e : Tensor = aten::pow(%beta, %d)
  %f : Tensor = aten::mul(%e, %half)
  %g : Tensor = aten::rsub(%f, %one, %one)
  return (%g)
"""


def _numbers_read_as_numbers(graph) -> int:
    """Arithmetic operands still given as a Python number (each wrapped and cast per run);
    ``pow``'s exponent is not one: ``pow(x, 2)`` reads it as a number (a square)."""
    count = 0
    for node in graph.nodes():
        if node.kind() in (
            "aten::add",
            "aten::sub",
            "aten::rsub",
            "aten::mul",
            "aten::div",
            "aten::pow",
        ):
            operands = list(node.inputs())[:1] if node.kind() == "aten::pow" else node.inputs()
            count += sum(v.node().kind() == "prim::Constant" for v in list(operands)[:2])
    return count


def _run(graph, *inputs):
    return torch._C._create_function_from_graph("f", graph)(*inputs)


def _dtypes(graph, dtype) -> dict:
    """Every tensor value of ``graph`` of ``dtype`` (the one-dtype graphs here)."""
    values = [*graph.inputs(), *(o for n in graph.nodes() for o in n.outputs())]
    return {v.unique(): dtype for v in values if v.type().kind() == "TensorType"}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("sizes", [(), (5, 3)])
def test_numbers_become_one_tensor_each_and_results_keep_their_bits(dtype, sizes):
    """Type promotion rounds the number to the op's dtype either way: same bits."""
    x = torch.rand(sizes, dtype=dtype) + 0.5
    graph = torch._C.parse_ir(_ARITHMETIC)
    expected = _run(graph.copy(), x)
    assert share_number_operands(graph, _dtypes(graph, dtype), torch.device("cpu")) == 7
    assert _numbers_read_as_numbers(graph) == 0
    kinds = collections.Counter(n.kind() for n in graph.nodes())
    assert kinds["aten::scalar_tensor"] == 3  # 0.5, 1 and 0.999: one each
    actual = _run(graph, x)
    assert actual.dtype == expected.dtype == dtype
    assert torch.equal(actual, expected)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int64, None])
def test_other_dtypes_and_unknown_ones_are_left_alone(dtype):
    """Half and bfloat16 kernels compute with the number unrounded; an integer tensor
    takes a float number's dtype; an unknown dtype may be any of those."""
    graph = torch._C.parse_ir(_ARITHMETIC)
    dtypes = {} if dtype is None else _dtypes(graph, dtype)
    assert share_number_operands(graph, dtypes, torch.device("cpu")) == 0


def test_other_devices_are_left_alone():
    """CUDA reads a wrapped number as a kernel argument, not as a tensor."""
    graph = torch._C.parse_ir(_ARITHMETIC)
    assert share_number_operands(graph, _dtypes(graph, torch.float32), torch.device("meta")) == 0


def test_a_captured_adamw_step_reads_no_number_per_op(monkeypatch):
    """The issue's case: Dynamo's AdamW step as one graph. Every decay, beta, bias
    correction and eps operand is a shared 0-dim tensor, the graph text is still kept by
    the persistent cache, and the step computes what it computed with the numbers."""
    import lazygen.runtime as lr
    from lazygen.runtime.backends.torchscript import backend

    graphs = []
    real_lower = backend.TorchScriptBackend.lower

    def lower(self, order, outputs, device):
        ctx = real_lower(self, order, outputs, device)
        graphs.append(ctx.graph)
        return ctx

    monkeypatch.setenv("LAZYGEN_CACHE", "0")  # each run compiles its own graphs

    def run(share: bool):
        lr.reset()  # forget the other run's compiled graphs
        torch._dynamo.reset()
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
        model = model.to("lazygen")
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        x = torch.randn(4, 6).to("lazygen")

        @torch.compile(backend="lazygen")
        def step():
            model(x).square().sum().backward()
            optimizer.step()
            optimizer.zero_grad()

        passes = {} if share else {"share_number_operands": lambda *args: 0}
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(backend.TorchScriptBackend, "lower", lower)
            for name, replacement in passes.items():
                patch.setattr(backend, name, replacement)
            for _ in range(3):
                step()
            lr.mark_step()
        return [p.detach().cpu() for p in model.parameters()]

    unshared = run(share=False)
    graphs.clear()
    shared = run(share=True)
    for a, b in zip(unshared, shared, strict=True):
        assert torch.equal(a, b)
    step_graph = max(graphs, key=lambda g: len(list(g.nodes())))
    kinds = collections.Counter(n.kind() for n in step_graph.nodes())
    assert kinds["aten::pow"] >= 4 and kinds["aten::scalar_tensor"] >= 3
    assert _numbers_read_as_numbers(step_graph) == 0
    executable = backend.TSExecutable(None, None, 1, step_graph)
    assert backend.TorchScriptBackend.save_executable(None, executable) is not None
