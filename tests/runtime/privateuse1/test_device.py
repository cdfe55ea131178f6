import threading

import pytest
import torch
from support.training import OPTIMIZERS, compare_training

import lazygen.runtime as lr


def test_init_is_idempotent_and_device():
    lr.init()
    lr.init()
    assert lr.device() == torch.device("lazygen", 0)
    assert lr.device(1) == torch.device("lazygen", 1)


def test_factories_land_on_lazygen():
    for t in (
        torch.randn(3, device="lazygen"),
        torch.zeros(2, 3, device="lazygen"),
        torch.ones(4, device="lazygen"),
        torch.tensor([1, 2, 3], device="lazygen"),
        torch.arange(5, device="lazygen"),
        torch.full((2,), 3.0, device="lazygen"),
        torch.eye(2, device="lazygen"),
    ):
        assert t.device == torch.device("lazygen", 0)
    assert torch.zeros(2, 3, device="lazygen").cpu().sum().item() == 0
    assert torch.arange(5, device="lazygen").cpu().tolist() == [0, 1, 2, 3, 4]
    assert torch.tensor([1, 2, 3], device="lazygen").dtype == torch.int64


def test_randn_matches_cpu_generator():
    torch.manual_seed(3)
    lazy = torch.randn(5, device="lazygen")
    torch.manual_seed(3)
    eager = torch.randn(5)
    torch.testing.assert_close(lazy.cpu(), eager)


def test_to_and_back():
    cpu = torch.randn(3, 4)
    lazy = cpu.to("lazygen")
    assert lazy.device.type == "lazygen"
    back = lazy.cpu()
    assert back.device.type == "cpu"
    torch.testing.assert_close(back, cpu)
    torch.testing.assert_close(lazy.to(torch.float64).cpu(), cpu.double())
    torch.testing.assert_close(lazy.to("cpu", torch.float64), cpu.double())


def test_item_and_scalars():
    x = torch.tensor([1.5, 2.5], device="lazygen")
    assert x.sum().item() == 4.0
    assert float(x[0]) == 1.5
    assert bool((x > 2).any())


def test_repr_reads_like_a_device():
    x = torch.tensor([1.0, 2.0], device="lazygen")
    assert repr(x) == "tensor([1., 2.], device='lazygen:0')"
    assert str(torch.tensor([1, 2], device="lazygen")) == "tensor([1, 2], device='lazygen:0')"
    w = torch.ones(2, device="lazygen", requires_grad=True)
    assert repr(w) == "tensor([1., 1.], device='lazygen:0', requires_grad=True)"
    assert "grad_fn=<MulBackward0>" in repr(w * 2)
    assert "_to_functional_tensor" not in repr(torch.zeros(2, 2, device="lazygen"))


def test_numpy_refuses_like_cuda():
    with pytest.raises(TypeError, match="lazygen"):
        torch.ones(2, device="lazygen").numpy()


def test_module_to_and_forward():
    model = torch.nn.Linear(4, 2)
    expected = model(torch.ones(1, 4))
    model.to("lazygen")
    assert model.weight.device.type == "lazygen"
    assert isinstance(model.weight, torch.nn.Parameter)
    out = model(torch.ones(1, 4, device="lazygen"))
    torch.testing.assert_close(out.cpu(), expected.detach())


def test_views_and_inplace_alias():
    x = torch.zeros(4, device="lazygen")
    y = x.view(2, 2)
    y.add_(1)
    y[0, 1] = 5
    assert x.cpu().tolist() == [1.0, 5.0, 1.0, 1.0]
    lr.mark_step()
    y.mul_(2)
    lr.mark_step()
    assert x.cpu().tolist() == [2.0, 10.0, 2.0, 2.0]
    x.add_(1)
    assert y.cpu().tolist() == [[3.0, 11.0], [3.0, 3.0]]


def test_item_mid_graph_then_continue():
    x = torch.ones(3, device="lazygen")
    y = x * 2
    assert y.sum().item() == 6.0
    z = y + 1
    assert z.cpu().tolist() == [3.0, 3.0, 3.0]


def test_fallback_ops_and_counters(fresh_metrics):
    # Whether or not lazy kernels exist:
    lr.config.set_force_fallback(["nonzero", "split_copy"])
    x = torch.tensor([0.0, 1.0, 0.0, 2.0], device="lazygen")
    nz = torch.nonzero(x)
    assert nz.cpu().flatten().tolist() == [1, 3]
    values, indices = torch.sort(torch.tensor([3.0, 1.0, 2.0], device="lazygen"))
    assert values.cpu().tolist() == [1.0, 2.0, 3.0]
    assert indices.cpu().tolist() == [1, 2, 0]
    parts = torch.tensor([1, 2, 3, 4], device="lazygen").split(2)
    assert [p.cpu().tolist() for p in parts] == [[1, 2], [3, 4]]
    assert fresh_metrics.counter_value("aten::nonzero") == 1
    assert "aten::split_copy" in fresh_metrics.counter_names()


def test_out_and_inplace_variants():
    a = torch.ones(3, device="lazygen")
    out = torch.empty(3, device="lazygen")
    torch.add(a, a, out=out)
    assert out.cpu().tolist() == [2.0, 2.0, 2.0]
    torch.mul(a, 3, out=out)
    assert out.cpu().tolist() == [3.0, 3.0, 3.0]
    out.clamp_(max=2.5)
    assert out.cpu().tolist() == [2.5, 2.5, 2.5]


def test_concurrent_syncs_from_threads():
    errors = []

    def work(seed):
        try:
            for step in range(5):
                x = torch.full((8, 8), float(seed), device="lazygen")
                y = (x * 2 + step).sum()
                assert y.item() == 64 * (2 * seed + step)
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_training_matches_eager(optimizer):
    compare_training(optimizer, steps=5)


def test_rng_api_forwards_to_the_backing_generator():
    """torch helpers such as freeze_rng_state call the device module's RNG API."""
    from torch.testing._utils import freeze_rng_state

    lr.init()
    state = torch.lazygen.get_rng_state()
    assert torch.equal(state, torch.get_rng_state())
    with freeze_rng_state():
        torch.rand(3)
    assert torch.equal(torch.lazygen.get_rng_state(), state)
    torch.manual_seed(7)
    first = torch.bernoulli(torch.full((64,), 0.5, device="lazygen")).cpu()
    torch.manual_seed(7)
    assert torch.equal(torch.bernoulli(torch.full((64,), 0.5)), first)


def test_device_option_of_generated_factory_kernels_is_honoured():
    """Regression: generated `*_like` kernels ignored `device=` and stayed lazy."""
    lr.init()
    x = torch.ones(3, device="lazygen")
    for make in (torch.ones_like, torch.zeros_like):
        y = make(x, device="cpu")
        assert y.device.type == "cpu"
        assert repr(y) == repr(make(torch.ones(3)))
    assert torch.full_like(x, 2.0, device="cpu").sum().item() == 6.0
    assert torch.ones_like(x).device.type == "lazygen"
    assert torch.zeros_like(x, dtype=torch.float64).device.type == "lazygen"


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
def test_quantized_storage_on_the_device_is_a_clear_error():
    """``q.to(<lazy device>)`` and quantized factories failed with torch's "Could not run
    'aten::empty_quantized' with arguments from the 'Quantizedlazygen' backend"."""
    q = torch.quantize_per_tensor(torch.randn(4), 0.1, 0, torch.quint8)
    for make in (
        lambda: q.to("lazygen"),
        lambda: torch.empty(3, dtype=torch.qint8, device="lazygen"),
        lambda: torch._empty_affine_quantized(
            [3], scale=0.1, zero_point=0, dtype=torch.quint8, device="lazygen"
        ),
    ):
        with pytest.raises(RuntimeError, match=r"call \.dequantize\(\) first"):
            make()
    # Quantizing a lazy tensor still works (through the eager fallback).
    lazy = torch.quantize_per_tensor(q.dequantize().to("lazygen"), 0.1, 0, torch.quint8)
    assert torch.equal(lazy.int_repr().cpu(), q.int_repr())
