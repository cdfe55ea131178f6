"""Copying and serialising lazy tensors behaves as for CUDA tensors (issue #12): deepcopy,
pickle, torch.save/torch.load with every kind of map_location, state-dict and optimizer
round trips."""

import copy
import io
import pickle

import pytest
import torch
from support.training import make_mlp

import lazygen.runtime as lr

DEVICE = "lazygen"


def _saved(obj) -> io.BytesIO:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


def test_deepcopy_of_a_lazy_tensor_copies_on_the_device():
    """Was a SIGSEGV: torch cloned the functional wrapper's placeholder storage."""
    x = torch.randn(4, 4, device=DEVICE)
    y = copy.deepcopy(x)
    assert y.device == x.device and y is not x
    torch.testing.assert_close(y.cpu(), x.cpu())
    y.add_(1)  # a copy, not an alias
    torch.testing.assert_close(y.cpu(), x.cpu() + 1)


def test_deepcopy_keeps_requires_grad_grad_and_attributes():
    p = torch.randn(3, device=DEVICE, requires_grad=True)
    p.grad = torch.ones(3, device=DEVICE)
    p.note = "kept"
    q = copy.deepcopy(p)
    assert q.requires_grad and q.is_leaf and q.note == "kept"
    torch.testing.assert_close(q.grad.cpu(), torch.ones(3))


def test_deepcopy_of_a_state_dict_and_a_module():
    model = make_mlp().to(DEVICE)
    state = copy.deepcopy(model.state_dict())
    assert all(t.device.type == DEVICE for t in state.values())
    clone = copy.deepcopy(model)
    for (name, a), b in zip(model.state_dict().items(), clone.state_dict().values(), strict=True):
        torch.testing.assert_close(a.cpu(), b.cpu(), msg=name)


def test_pickle_round_trip():
    x = torch.randn(2, 3, device=DEVICE)
    y = pickle.loads(pickle.dumps(x))
    assert y.device == x.device
    torch.testing.assert_close(y.cpu(), x.cpu())


@pytest.mark.parametrize(
    "map_location, expected",
    [
        (None, "lazygen"),
        ("cpu", "cpu"),
        (torch.device("cpu"), "cpu"),
        ({"lazygen:0": "cpu"}, "cpu"),
        (lambda storage, location: storage, "cpu"),  # callable: as for CUDA checkpoints
        ("lazygen", "lazygen"),
    ],
    ids=["none", "cpu", "torch_device", "dict", "callable", "lazy"],
)
def test_save_load_lazy_state_dict(map_location, expected):
    model = make_mlp().to(DEVICE)
    state = model.state_dict()
    loaded = torch.load(_saved(state), map_location=map_location)
    assert list(loaded) == list(state)
    for name, tensor in loaded.items():
        assert tensor.device.type == expected, name
        torch.testing.assert_close(tensor.cpu(), state[name].cpu(), msg=name)


def test_checkpoint_is_tagged_like_a_cuda_checkpoint():
    """Storages of lazy tensors are written with their device as location, so torch's own
    location machinery (map_location) applies to them."""
    locations = []

    def record(storage, location):
        locations.append(location)
        return storage

    torch.load(_saved({"w": torch.randn(2, device=DEVICE)}), map_location=record)
    assert locations == ["lazygen:0"]


def test_load_host_checkpoint_onto_the_lazy_device():
    state = make_mlp().state_dict()
    loaded = torch.load(_saved(state), map_location="lazygen")
    for name, tensor in loaded.items():
        assert tensor.device == torch.device(DEVICE, 0), name
        torch.testing.assert_close(tensor.cpu(), state[name], msg=name)
    # ... and straight into a lazy model
    model = make_mlp(seed=1).to(DEVICE)
    model.load_state_dict(loaded)
    torch.testing.assert_close(model[0].weight.cpu(), state["0.weight"])


def test_load_keeps_requires_grad_and_parameters():
    p = torch.nn.Parameter(torch.randn(3, device=DEVICE))
    loaded = torch.load(_saved({"p": p, "t": p.detach()}), weights_only=False)
    assert isinstance(loaded["p"], torch.nn.Parameter) and loaded["p"].requires_grad
    assert loaded["p"].is_leaf and loaded["p"].device.type == DEVICE
    assert not loaded["t"].requires_grad


def test_load_onto_a_missing_lazy_device_index_says_what_to_do():
    with pytest.raises(RuntimeError, match="map_location"):
        torch.load(_saved(torch.randn(2)), map_location="lazygen:99")


def _train(model, optimizer, batches):
    for x, y in batches:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        lr.mark_step()


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
        lambda p: torch.optim.Adam(p, lr=1e-2),
    ],
    ids=["sgd_momentum", "adam"],
)
def test_checkpoint_resume_equals_uninterrupted_training(make_optimizer):
    """Model and optimizer state (momentum buffers, Adam moments and steps) survive a
    torch.save / torch.load round trip: resuming equals never stopping."""
    torch.manual_seed(0)
    batches = [
        (torch.randn(8, 20, device=DEVICE), torch.randn(8, 4, device=DEVICE)) for _ in range(4)
    ]
    model = make_mlp().to(DEVICE)
    optimizer = make_optimizer(model.parameters())
    _train(model, optimizer, batches[:2])
    checkpoint = _saved({"model": model.state_dict(), "optimizer": optimizer.state_dict()})
    _train(model, optimizer, batches[2:])

    loaded = torch.load(checkpoint)
    resumed = make_mlp(seed=5).to(DEVICE)
    resumed.load_state_dict(loaded["model"])
    resumed_optimizer = make_optimizer(resumed.parameters())
    resumed_optimizer.load_state_dict(loaded["optimizer"])
    _train(resumed, resumed_optimizer, batches[2:])
    for (name, a), b in zip(model.state_dict().items(), resumed.state_dict().values(), strict=True):
        torch.testing.assert_close(b.cpu(), a.cpu(), msg=name)


def test_storages_cannot_be_allocated_on_the_lazy_device():
    """Were SIGSEGVs (C++ allocated with PrivateUse1's null allocator)."""
    x = torch.randn(4, device=DEVICE)
    for make in (
        lambda: torch.UntypedStorage(4, device=DEVICE),
        lambda: x.untyped_storage().clone(),
        lambda: copy.deepcopy(x.untyped_storage()),
        lambda: torch.randn(4).untyped_storage().to(device=DEVICE),
    ):
        with pytest.raises(RuntimeError, match="storages cannot be allocated"):
            make()
    assert torch.UntypedStorage(4).device.type == "cpu"  # other devices unaffected


def test_device_module_device_context():
    module = torch.get_device_module(DEVICE)
    with module.device(1):
        assert module.current_device() == 1
    assert module.current_device() == 0
    with module.device(None):
        assert module.current_device() == 0
