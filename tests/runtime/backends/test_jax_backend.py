"""The built-in ``jax`` backend: device data that is not a torch tensor (``jax.Array``),
random ops drawn from seeds, refusals, and training against eager. Graphs without
autograd run on ``lazygen:3``; training on ``lazygen:0`` switched to jax (see conftest)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

jax = pytest.importorskip("jax", reason="the jax backend needs JAX: pip install lazygen[jax]")

from support.training import compare_training  # noqa: E402

import lazygen.runtime as lr  # noqa: E402
from lazygen.runtime.backends.jax.backend import JaxBackend  # noqa: E402
from lazygen.runtime.backends.jax.ops import JAX_OPS  # noqa: E402
from lazygen.runtime.op_registry import table_key as op_key  # noqa: E402
from lazygen.runtime.ops import CORE_LOWERED_OPS  # noqa: E402
from lazygen.runtime.tracing.tensor import inner  # noqa: E402

from .conftest import BACKENDS, index_zero_on  # noqa: E402

JAX = "lazygen:3"


@pytest.fixture(scope="module", autouse=True)
def _jax_backend():
    BACKENDS["jax"] = JaxBackend()
    lr.set_device_backend(3, BACKENDS["jax"])
    yield
    lr.mark_step()


def _native(t: torch.Tensor):
    lr.mark_step()
    return inner(t)._value.node.native


def test_results_match_eager_and_stay_jax_arrays():
    torch.manual_seed(0)
    a, b = torch.randn(5, 4), torch.randn(4, 3)
    x, y = a.to(JAX), b.to(JAX)
    got = (torch.tanh(x @ y) * 2.5 - 1).softmax(-1).sum(0)
    want = (torch.tanh(a @ b) * 2.5 - 1).softmax(-1).sum(0)
    assert isinstance(_native(got), jax.Array)
    torch.testing.assert_close(got.cpu(), want)
    # an integer and a boolean result keep torch's dtypes
    assert (x > 0).sum().cpu().dtype == torch.int64
    assert (x > 0).cpu().equal(a > 0)


def test_host_view_shares_the_jax_buffer():
    backend = BACKENDS["jax"]
    data = backend.to_data(torch.arange(6.0), torch.device("cpu"))
    view = backend.from_data(data, "cpu", copy=False)
    assert view.data_ptr() == data.unsafe_buffer_pointer()
    copied = backend.from_data(data)
    assert copied.data_ptr() != data.unsafe_buffer_pointer() and copied.equal(view)


def test_an_upload_never_shares_the_callers_tensor():
    host = torch.zeros(4)
    lazy = host.to(JAX)
    lr.mark_step()
    host += 1
    assert lazy.cpu().equal(torch.zeros(4))


def test_changing_slice_starts_reuse_the_graph_and_stay_right():
    data = torch.arange(20.0)
    lazy = data.to(JAX)
    for i in (0, 3, 7, 3):
        got = (lazy[i : i + 5] * 2).cpu()
        torch.testing.assert_close(got, data[i : i + 5] * 2)


def test_advanced_indexing_runs_in_the_graph_and_masks_run_eagerly(fresh_metrics):
    """``index.Tensor`` with integer indices lowers to numpy's advanced indexing (GPT-2's
    causal mask: without it the captured step was cut into three programs); a boolean
    mask, whose result's sizes depend on values, is refused."""
    x = torch.randn(4, 5, 6)
    i, j = torch.tensor([[0, 3], [1, 2]]), torch.tensor([4, -1])
    for index in [(i,), (slice(None), j), (i, slice(None), torch.tensor([1, 5]))]:
        on_jax = tuple(t.to(JAX) if isinstance(t, torch.Tensor) else t for t in index)
        assert torch.equal(x.to(JAX)[on_jax].cpu(), x[index])
    assert not lr.metrics.fallback_report().refused
    mask = torch.tensor([True, False, True, True])
    assert torch.equal(x.to(JAX)[mask.to(JAX)].cpu(), x[mask])
    assert [r.op for r in lr.metrics.fallback_report().refused] == ["aten::index"]


def test_integer_floor_division_by_zero_raises_as_eager():
    x = torch.tensor([4, 5]).to(JAX)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.div(x, torch.tensor([2, 0]).to(JAX), rounding_mode="floor").cpu()
    got = torch.div(x, torch.tensor([2, 3]).to(JAX), rounding_mode="floor")
    assert got.cpu().tolist() == [2, 1]


def test_dropout_draws_from_seeds_in_the_graph(fresh_metrics):
    def masks():
        torch.manual_seed(5)
        x = torch.ones(2000).to(JAX)
        return [torch.nn.functional.dropout(x, 0.25).cpu() for _ in range(2)]

    first, second = masks()
    assert not first.equal(second)  # each call its own stream
    assert 0.2 < (first == 0).float().mean().item() < 0.3
    assert set(first.unique().tolist()) <= {0.0, torch.tensor(4 / 3).item()}
    again, _ = masks()
    assert again.equal(first)  # torch.manual_seed makes runs repeatable
    assert fresh_metrics.counter_value("aten::bernoulli") in (None, 0)
    assert "bernoulli" not in str(fresh_metrics.fallback_report())


def test_random_like_factories_draw_from_seeds_in_the_graph(fresh_metrics):
    """``randn_like``/``rand_like`` draw in the graph (their composite kernel: ``empty_like``
    then a draw with a seed input), not eagerly on a stand-in then uploaded: a graph
    replayed with fresh seeds (``torch.compile``) then draws new numbers at every call."""
    x = torch.zeros(4000).to(JAX)
    normal, uniform = torch.randn_like(x), torch.rand_like(x)
    graph = lr.debug.dump_ir([normal, uniform])
    assert "normal_functional" in graph and "uniform" in graph
    assert fresh_metrics.counter_value("lazy::randn_like") in (None, 0)
    normal, uniform = normal.cpu(), uniform.cpu()
    assert abs(normal.mean().item()) < 0.1 and abs(normal.std().item() - 1) < 0.07
    assert uniform.min().item() >= 0 and uniform.max().item() < 1
    assert fresh_metrics.counter_value("RandomSeedDraw") == 2
    assert fresh_metrics.fallback_report().fallbacks == ()


def test_random_integers_draw_from_seeds_in_the_graph(fresh_metrics):
    """``randint``, ``randint_like`` and ``random_(from, to)`` (``random.from``/``random.to``)
    draw uniform integers in ``[from, to)`` with ``jax.random``; ``random_()`` without an
    upper bound (up to the dtype's largest value) is refused and runs eagerly."""
    n = 6000
    x = torch.zeros(n).to(JAX)
    draws = {
        (3, 9): torch.randint_like(x, 3, 9),
        (0, 5): torch.randint(0, 5, (n,), device=JAX),
        (0, 7): torch.randint_like(x, 7),
        (-2, 2): torch.empty(n, dtype=torch.int64, device=JAX).random_(-2, 2),
    }
    unbounded = torch.empty(10, device=JAX).random_()
    assert "random" in lr.debug.dump_ir(list(draws.values()))
    for (low, high), drawn in draws.items():
        drawn = drawn.cpu()
        values = set(drawn.unique().tolist())
        assert values == set(range(low, high)), (low, high, values)
        spread = ((high - low) ** 2 - 1) / 12  # the variance of a discrete uniform
        assert abs(drawn.double().mean().item() - (low + high - 1) / 2) < 6 * (spread / n) ** 0.5
    assert unbounded.cpu().min().item() >= 0
    assert fresh_metrics.counter_value("RandomSeedDraw") == 4
    assert [e.op for e in fresh_metrics.fallback_report().refused] == ["aten::random"]


@pytest.mark.parametrize(
    ("dtype", "bounds", "message"),
    [
        (torch.float32, (5, 2), "expects 'from' to be less than 'to'"),
        (torch.uint8, (0, 300), "to - 1 is out of bounds"),
        (torch.int8, (-200, 3), "from is out of bounds"),
        (torch.float16, (0, 2**20), "to - 1 is out of bounds"),
    ],
)
def test_random_integers_with_bounds_torch_rejects_raise_eagers_error(dtype, bounds, message):
    """``jax.random.randint`` returns numbers for any bounds: such calls are refused, and
    eager raises the user's error."""
    with pytest.raises(RuntimeError, match=message):
        torch.empty(3, dtype=dtype, device=JAX).random_(*bounds).cpu()


@pytest.mark.parametrize(
    ("workload", "optimizer"), [("mlp", "adam"), ("transformer", "adamw"), ("cnn", "sgd_momentum")]
)
def test_training_matches_eager_one_compile_per_graph(workload, optimizer):
    with index_zero_on("jax"):
        uncached = compare_training(optimizer, steps=4, workload=workload)
    assert uncached[-1] == uncached[1]  # graphs of later steps come from the cache


@pytest.mark.parametrize(
    ("stride", "padding", "output_padding", "groups", "dilation"),
    [(1, 0, 0, 1, 1), ((2, 3), (1, 0), (1, 2), 2, (2, 1))],
)
def test_transposed_convolution_and_its_gradient_run_in_the_graph_as_eager(
    fresh_metrics, stride, padding, output_padding, groups, dilation
):
    torch.manual_seed(0)
    x, w = torch.randn(2, 4, 5, 6), torch.randn(4, 3, 3, 2)
    options = dict(
        stride=stride, padding=padding, output_padding=output_padding, groups=groups,
        dilation=dilation,
    )  # fmt: skip

    def run(device):
        xd = x.clone().to(device).requires_grad_()
        wd = w.clone().to(device).requires_grad_()
        out = torch.nn.functional.conv_transpose2d(xd, wd, **options)
        out.square().sum().backward()
        return out.detach().cpu(), xd.grad.cpu(), wd.grad.cpu()

    want = run("cpu")
    with index_zero_on("jax"):
        got = run("lazygen:0")
    for g, e in zip(got, want, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-4)
    assert "convolution" not in str(fresh_metrics.fallback_report())


def test_complex_conjugates_and_list_results():
    """Regressions found by the conformance run: ``conj_physical`` was lowered as a copy,
    and a ``Tensor[]`` result of one tensor (``split`` into one piece) came back stacked."""
    z = torch.randn(6, dtype=torch.complex64)
    torch.testing.assert_close(z.to(JAX).conj().cpu(), z.conj())
    torch.testing.assert_close(torch.fft.ifft(z.real.to(JAX)).cpu(), torch.fft.ifft(z.real))
    x = torch.randn(5, 5, 5)
    (piece,) = torch.split(x.to(JAX), 5)
    torch.testing.assert_close(piece.cpu(), x)
    # unbind took its dim as split's size (always dim 0)
    for got, want in zip(torch.unbind(x[0].to(JAX), 1), torch.unbind(x[0], 1), strict=True):
        torch.testing.assert_close(got.cpu(), want)
    empty = torch.zeros(2, 0, dtype=torch.int64)
    assert torch.gather(x[0, 0].to(JAX), 0, empty.to(JAX)).cpu().shape == (2, 0)


def test_zero_dim_tensors_reduce_along_dim_zero_as_eager():
    x = torch.tensor(2.5)
    lazy = x.to(JAX)
    for op in (
        lambda t: t.sum(0),
        lambda t: t.softmax(0),
        lambda t: t.log_softmax(-1),
        lambda t: t.cumsum(0),
        lambda t: t.amax(0),
        lambda t: t.argmax(0),
        lambda t: t.mean(0),
    ):
        torch.testing.assert_close(op(lazy).cpu(), op(x))


@pytest.mark.parametrize(
    ("size", "kernel", "stride", "padding", "dilation", "ceil_mode"),
    [((2, 3, 7, 7), 2, 2, 0, 1, False), ((3, 8, 8), [2, 3], [1, 2], [1, 1], [2, 1], True)],
)
def test_max_pool_values_indices_and_gradient_as_eager(
    size, kernel, stride, padding, dilation, ceil_mode
):
    torch.manual_seed(0)
    x = torch.randn(*size, requires_grad=True)
    args = (kernel, stride, padding, dilation, ceil_mode)
    out, indices = torch.nn.functional.max_pool2d(x, *args, return_indices=True)
    out.sum().backward()
    with index_zero_on("jax"):
        got, got_indices, grad = _max_pool_on_lazy(x, args)
    assert got_indices.equal(indices)
    torch.testing.assert_close(got, out)
    torch.testing.assert_close(grad, x.grad)


def _max_pool_on_lazy(x, args):
    """On ``lazygen:0``; CPU results (no lazy tensor outlives the call)."""
    lazy = x.detach().to("lazygen").requires_grad_()
    got, indices = torch.nn.functional.max_pool2d(lazy, *args, return_indices=True)
    got.sum().backward()
    return got.detach().cpu(), indices.cpu(), lazy.grad.cpu()


@pytest.mark.parametrize("shape", [(5, 0, 5), (0,), (4, 3)])
def test_nonzero_static_pads_with_the_fill_value_as_eager(shape):
    # jnp.nonzero pads an empty array's rows with 0 whatever the fill value (OpInfo: wrong)
    x = (
        (torch.arange(12.0).reshape(4, 3) % 3 == 0).float()
        if shape == (4, 3)
        else torch.ones(shape)
    )
    for size, fill in ((3, -1), (6, 7)):
        want = torch.nonzero_static(x, size=size, fill_value=fill)
        torch.testing.assert_close(
            torch.nonzero_static(x.to(JAX), size=size, fill_value=fill).cpu(), want
        )


def test_float_to_narrow_integer_casts_wrap_as_eager():
    # XLA's float -> uint8 saturates (-62.5 -> 0); torch's wraps through int32 (-> 194).
    # The crash sweep's conversion cases found it (to.uint8.*: wrong).
    host = torch.tensor([-62.5, 186.1, 300.7, -1.0, 255.9, -129.5])
    lazy = host.to(JAX)
    for dtype in (torch.uint8, torch.int8, torch.int16, torch.uint16):
        torch.testing.assert_close(lazy.to(dtype).cpu(), host.to(dtype), rtol=0, atol=0)
        torch.testing.assert_close((lazy * 2).to(dtype).cpu(), (host * 2).to(dtype), rtol=0, atol=0)


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(3, device=JAX).chalf(),
        lambda: torch.randn(3).to(torch.chalf).to(JAX),
        lambda: torch.zeros(3, dtype=torch.float8_e4m3fn, device=JAX),
    ],
    ids=["cast", "upload", "factory"],
)
def test_a_dtype_jax_lacks_raises_what_to_do(make):
    with pytest.raises(lr.LazygenRuntimeError, match=r"cannot hold torch\.\w+ tensors.*CPU"):
        make().cpu()
    lr.mark_step()


def _arrays(tensors) -> list:
    lr.mark_step()
    return [inner(t)._value.node.native for t in tensors]


def test_updated_parameters_are_donated_and_training_matches_eager():
    with index_zero_on("jax"):
        _train_checking_donation("lazygen:0")


def _train_checking_donation(device: str) -> None:
    torch.manual_seed(0)
    eager = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    model.load_state_dict(eager.state_dict())
    model.to(device)
    x, y = torch.randn(5, 8), torch.randn(5, 4)
    lazy_x, lazy_y = x.to(device), y.to(device)
    pairs = [
        (model, torch.optim.Adam(model.parameters(), lr=1e-2), lazy_x, lazy_y),
        (eager, torch.optim.Adam(eager.parameters(), lr=1e-2), x, y),
    ]
    kept = BACKENDS["jax"].small_uploads
    for step in range(4):
        old = _arrays(model.parameters())
        shared = [array for array in old if kept.holds(array)]  # uploads of <= 256 bytes
        assert len(shared) == (3 if step == 0 else 0)  # biases, 4x16 weight; then results
        old = [array for array in old if not kept.holds(array)]
        state = [s for per in pairs[0][1].state.values() for s in per.values()]
        old_state = _arrays([s for s in state if s.device.type != "cpu"])
        batch = _arrays([lazy_x])[0]
        for net, optimizer, a, b in pairs:
            optimizer.zero_grad()
            ((net(a) - b) ** 2).mean().backward()
            optimizer.step()
        lr.mark_step()
        # the old values' buffers went to the step's results; the batch, still held, not
        assert all(array.is_deleted() for array in old), step
        assert not any(array.is_deleted() for array in shared)  # kept, used again
        assert len(old_state) == (0 if step == 0 else 2 * len(old))
        assert all(array.is_deleted() for array in old_state), step
        assert not batch.is_deleted()
    for got, want in zip(model.parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(got.cpu(), want.detach())


@pytest.mark.parametrize(
    "hold",
    [
        lambda w: w.detach(),  # another tensor on the same data
        lambda w: w[1:3],  # a view of it
        lambda w: w * 3,  # a pending node reading it
        lambda w: w.to("cpu", copy=True),  # read on the host before the step (DLPack)
    ],
    ids=["alias", "view", "pending", "host_read"],
)
@pytest.mark.parametrize("sync", ["mark_step", "read_w_alone"])
def test_an_input_someone_still_reads_is_never_donated(hold, sync):
    """``read_w_alone``: only ``w``'s graph runs (a host read), so what ``hold`` made is
    still pending, outside that graph, and reads w's old data after it."""
    host = torch.randn(4, 4)
    w = host.to(JAX)
    lr.mark_step()
    held = hold(w)
    eager_w = host.clone()
    eager_held = hold(eager_w)
    w.mul_(2)
    eager_w.mul_(2)
    if sync == "mark_step":
        lr.mark_step()
    torch.testing.assert_close(w.cpu(), eager_w)
    # read after the graph that updated w: never a deleted array; eager's values
    torch.testing.assert_close(held.cpu(), eager_held)
    torch.testing.assert_close(w.cpu(), eager_w)


def test_a_host_read_never_donates_what_a_pending_tensor_recomputes_from():
    # found by the gradient conformance (l1_loss: reading one gradient ran a graph whose
    # inner nodes the other, still pending, gradient reads again from the same input)
    host = torch.randn(3)
    w = host.to(JAX) * 1
    lr.mark_step()
    inner_node = w * 2
    del w  # w's data is read only inside graphs from here on
    first, second = inner_node + 1, inner_node - 1
    del inner_node
    torch.testing.assert_close(first.cpu(), host * 2 + 1)  # runs [w, w * 2, + 1] alone
    torch.testing.assert_close(second.cpu(), host * 2 - 1)  # reads w's data again


def test_gather_with_an_index_smaller_than_the_input_as_eager():
    # scatter's backward gathers so (gradient conformance: scatter, scatter_reduce.sum)
    x = torch.randn(5, 5)
    index = torch.tensor([[0], [4], [2], [1], [3], [0], [1], [2], [3], [4]])
    for dim in (0, 1, -1):
        got = torch.gather(x.to(JAX), dim, index.to(JAX) if dim == 0 else index[:5].T.to(JAX))
        want = torch.gather(x, dim, index if dim == 0 else index[:5].T)
        torch.testing.assert_close(got.cpu(), want)


def test_an_input_no_result_fits_is_not_donated(recwarn):
    # XLA warns "Some donated buffers were not usable" for a donated input no result of
    # its shape and dtype can take over (found by the gradient conformance)
    w = torch.randn(4, 3).to(JAX)
    lr.mark_step()
    total = (w * 2).sum()
    del w
    lr.mark_step()
    assert total.cpu().shape == ()
    assert not [w for w in recwarn if "donated buffers" in str(w.message)]


def test_host_view_of_a_broadcast_constant_result_does_not_crash():
    # torch.from_dlpack of this XLA result died with SIGSEGV (gradient conformance: sgn,
    # whose gradient is such a constant); in a fresh interpreter, so a crash fails the test
    code = (
        "import jax, jax.numpy as jnp\n"
        "from lazygen.runtime.backends.jax.backend import JaxBackend\n"
        "b = JaxBackend()\n"
        "x = jnp.ones((20, 20), jnp.float32)\n"
        "f = jax.jit(lambda x: jnp.broadcast_to(jnp.float32(0), (20, 20)))\n"
        "r = f.lower(x).compile()(x)\n"
        "print(float(b.from_data(r, 'cpu', copy=False).sum()), float(b.from_data(r).sum()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0.0", "0.0"]


class _Recurrent(torch.nn.Module):
    """A recurrent layer or cell, its last output classified (4 classes)."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        make = {
            "lstm": lambda: torch.nn.LSTM(6, 8, num_layers=2, batch_first=True),
            "gru": lambda: torch.nn.GRU(6, 8, bidirectional=True, batch_first=True),
            "lstm_cell": lambda: torch.nn.LSTMCell(20, 8),
            "gru_cell": lambda: torch.nn.GRUCell(20, 8),
        }[kind]
        self.rnn = make()
        self.head = torch.nn.Linear(16 if kind == "gru" else 8, 4)

    def forward(self, x):
        out = self.rnn(x)
        if self.kind in ("lstm", "gru"):
            return self.head(out[0][:, -1])
        return self.head(out[0] if self.kind == "lstm_cell" else out)


@pytest.mark.parametrize(
    ("kind", "node"),
    [
        ("lstm", "lstm_layers"),
        ("gru", "gru_layers"),
        ("lstm_cell", "_thnn_fused_lstm_cell"),
        ("gru_cell", None),
    ],
)
def test_recurrent_layers_and_cells_train_as_eager(kind, node, fresh_metrics):
    """The recurrent nodes lower as many ops; each gets its own shapes (they failed on jax
    with the node's shapes, or with an op the table lacked: transpose.int, narrow...)."""
    torch.manual_seed(0)
    with index_zero_on("jax"):
        compare_training(
            "adam", steps=3, model=_Recurrent(kind), workload="mlp" if "cell" in kind else "lstm"
        )
    if node is not None:
        assert lr.metrics.counter_value(f"lazy::{node}")
    assert not lr.metrics.fallback_report().refused


def test_every_op_the_core_lowers_is_in_the_table_where_it_can_reach_jax():
    """``CORE_LOWERED_OPS`` are handed to a backend whatever its op list says: the jax table
    must have each one that can reach it (the collectives too: ``collectives_in_graph`` is
    on; not ``copy_``: ``writes_inputs`` is off; not the CPU flash kernels, which only the
    torch backends lower ``lazygen::attention`` to)."""
    backend = BACKENDS["jax"]
    assert backend.collectives_in_graph and not backend.writes_inputs
    unreachable = {"aten::copy_", *(op for op in CORE_LOWERED_OPS if "flash_attention" in op)}
    missing = [op for op in CORE_LOWERED_OPS if op not in unreachable and op_key(op) not in JAX_OPS]
    assert not missing, f"add to lazygen.runtime.backends.jax.ops: {missing}"


def test_a_compiled_program_keeps_no_input_data_alive():
    """A program with no numbers compiled in never lowers again, so its executable keeps no
    hold on the graph it was compiled from: its first inputs' arrays (a first step's
    parameters) are freed once nothing else reads them (and can be donated by the next
    step). Before, the executable's re-lowering closure held the graph's nodes."""
    import gc
    import weakref

    x = torch.randn(64, 33).to(JAX)
    lr.mark_step()
    array = weakref.ref(_native(x))
    y = torch.tanh(x * 3.0 - 1.0).sum(0)
    lr.mark_step()
    del x
    y.cpu()
    gc.collect()
    assert array() is None, "a compiled program held its input's data"
