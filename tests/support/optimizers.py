"""Every ``torch.optim`` optimizer class with its options, trained on the lazy device or
under ``torch.compile(backend="lazygen")`` against eager (``tests/runtime/test_optimizers.py``,
``tests/dynamo/test_optimizers.py``).

``CASES`` is the matrix: per class its options that change the math (SGD's nesterov,
maximize, dampening; Adam/AdamW's amsgrad and weight decay; NAdam/RAdam's decoupled weight
decay; Adagrad's lr_decay; RMSprop centered with momentum...), each with ``foreach`` on and
off, ``fused=True`` where eager has a fused kernel (Adam, AdamW, SGD, Adagrad),
``capturable=True`` where the class has it, and ``lr`` as a tensor. ``ONE_PER_CLASS`` picks
one case per class (the richest in options) for the default run.

The eager reference runs without ``capturable`` and ``differentiable``: they do not change
the math, and eager refuses ``capturable`` on the CPU.
"""

from __future__ import annotations

import copy

import torch

import lazygen.runtime as lr

from .training import make_mlp

optim = torch.optim

#: Per class: options that change the math (the first is the class's default-run case).
_MATH = {
    optim.SGD: [
        dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
        dict(lr=0.1),
        dict(lr=0.1, momentum=0.9, dampening=0.1, maximize=True),
    ],
    optim.Adam: [dict(lr=1e-2, amsgrad=True, weight_decay=0.1), dict(lr=1e-2, maximize=True)],
    optim.AdamW: [dict(lr=1e-2, amsgrad=True, weight_decay=0.1), dict(lr=1e-2)],
    optim.Adamax: [dict(lr=1e-2, weight_decay=0.1)],
    optim.NAdam: [
        dict(lr=1e-2, decoupled_weight_decay=True, weight_decay=0.1),
        dict(lr=1e-2),
    ],
    optim.RAdam: [
        dict(lr=1e-2, decoupled_weight_decay=True, weight_decay=0.1),
        dict(lr=1e-2),
    ],
    optim.Adagrad: [dict(lr=0.1, lr_decay=0.01, weight_decay=0.1), dict(lr=0.1)],
    optim.Adadelta: [dict(lr=1.0, weight_decay=0.1)],
    optim.RMSprop: [dict(lr=1e-2, centered=True, momentum=0.9), dict(lr=1e-2)],
    optim.Rprop: [dict(lr=1e-2)],
    optim.ASGD: [dict(lr=1e-2, weight_decay=0.01)],
    optim.Adafactor: [dict(lr=1e-2, weight_decay=0.1, maximize=True), dict(lr=1e-2)],
    optim.Muon: [dict(lr=1e-2, nesterov=True), dict(lr=1e-2, nesterov=False, weight_decay=0.0)],
}
#: Classes without ``foreach`` (one implementation).
NO_FOREACH = (optim.Muon,)
#: Classes that take only matrices (``Muon``): the MLP's weights, not its biases.
MATRICES_ONLY = (optim.Muon,)
#: Classes eager has a fused CPU kernel for (``fused=True``).
FUSED = (optim.Adam, optim.AdamW, optim.SGD, optim.Adagrad)
#: Classes with a ``capturable`` option (lazygen is in torch's capturable device list).
CAPTURABLE = (
    optim.Adam,
    optim.AdamW,
    optim.Adamax,
    optim.NAdam,
    optim.RAdam,
    optim.RMSprop,
    optim.Rprop,
    optim.ASGD,
)
#: Options that leave the math alone; the eager reference runs without them.
NOT_MATH = ("capturable", "differentiable")


def _cases() -> dict[str, tuple[type, dict]]:
    cases = {}
    for cls, variants in _MATH.items():
        for i, math in enumerate(variants):
            impls = [{}] if cls in NO_FOREACH else [dict(foreach=True), dict(foreach=False)]
            if cls in FUSED:
                impls.append(dict(fused=True))
            if cls in CAPTURABLE:
                impls.append(dict(capturable=True, foreach=i % 2 == 0))
            for impl in impls:
                kwargs = {**math, **impl}
                cases[_name(cls, kwargs)] = (cls, kwargs)
    # lr as a tensor: with the for-loop and the fused implementations (torch refuses a
    # tensor lr with foreach unless capturable).
    for cls, impl in ((optim.Adam, dict(foreach=False)), (optim.AdamW, dict(fused=True))):
        kwargs = dict(lr=torch.tensor(1e-2), **impl)
        cases[_name(cls, kwargs)] = (cls, kwargs)
    kwargs = dict(lr=torch.tensor(1e-2), capturable=True, foreach=True)
    cases[_name(optim.Adam, kwargs)] = (optim.Adam, kwargs)
    return cases


def _name(cls, kwargs) -> str:
    def show(v):
        return "tensor" if isinstance(v, torch.Tensor) else v

    return cls.__name__ + "-" + ",".join(f"{k}={show(v)}" for k, v in kwargs.items())


CASES = _cases()
#: The implementation of each class's case in the default run (its first, richest math):
#: fused, capturable, foreach and the for-loop each for a few classes.
_DEFAULT_IMPL = {
    optim.SGD: dict(fused=True),
    optim.Adam: dict(fused=True),
    optim.AdamW: dict(capturable=True, foreach=True),
    optim.Adamax: dict(foreach=False),
    optim.NAdam: dict(capturable=True, foreach=True),
    optim.RAdam: dict(foreach=True),
    optim.Adagrad: dict(fused=True),
    optim.Adadelta: dict(foreach=False),
    optim.RMSprop: dict(foreach=True),
    optim.Rprop: dict(capturable=True, foreach=True),
    optim.ASGD: dict(foreach=False),
    optim.Adafactor: dict(foreach=True),
    optim.Muon: {},
}
ONE_PER_CLASS = [_name(cls, {**_MATH[cls][0], **impl}) for cls, impl in _DEFAULT_IMPL.items()]


def reads_on_host(cls, kwargs: dict) -> bool:
    """Whether torch's own step reads values of the device with ``.item()`` (a sync on any
    device, CUDA's too): Adafactor (its step count, parameter and update norms) and ASGD
    without ``capturable`` (its eta, mu and step count, kept on the device)."""
    return cls is optim.Adafactor or (cls is optim.ASGD and not kwargs.get("capturable"))


def reference_options(kwargs: dict) -> dict:
    """``kwargs`` for eager's reference run: without the options that leave the math alone
    (and with the for-loop for a tensor ``lr``, which foreach takes only when capturable)."""
    reference = {k: v for k, v in kwargs.items() if k not in NOT_MATH}
    if isinstance(reference["lr"], torch.Tensor) and reference.get("foreach"):
        reference["foreach"] = False
    return reference


def train(
    cls, kwargs, mode: str, dtype=torch.float32, steps: int = 3, trained=None
) -> list[torch.Tensor]:
    """Train a small MLP for ``steps`` steps (mode ``"eager"``: on the CPU; ``"lazy"``: on
    the lazy device, ``mark_step`` after each step; ``"compile"``: the whole step under
    ``torch.compile(backend="lazygen")``, TorchScript backend). Returns the losses, the
    parameters and every tensor of the optimizer's state, on the host in float64;
    ``trained()`` is called after the steps, before anything is read."""
    model = make_mlp(seed=1, sizes=(6, 8, 3)).to(dtype)
    torch.manual_seed(2)
    x, y = torch.randn(5, 6).to(dtype), torch.randint(0, 3, (5,))
    if mode == "lazy":
        model, x, y = model.to("lazygen"), x.to("lazygen"), y.to("lazygen")
    kwargs = dict(kwargs)
    if isinstance(kwargs["lr"], torch.Tensor):
        kwargs["lr"] = kwargs["lr"].clone().to(dtype)  # never shared between runs
    params = [p for p in model.parameters() if p.dim() == 2 or cls not in MATRICES_ONLY]
    opt = cls(params, **kwargs)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        loss = loss.detach()  # lets Dynamo trace backward() into the forward's graph
        opt.step()
        return loss

    if mode == "compile":
        step = torch.compile(step, backend="lazygen", options={"backend": "torchscript"})
    losses = []
    for _ in range(steps):
        losses.append(step())
        if mode == "lazy":
            lr.mark_step()
    if trained is not None:
        trained()
    state = [p.detach() for p in model.parameters()]
    for p in params:
        for key in sorted(opt.state[p]):
            if opt.state[p][key] is not None:  # SGD without momentum keeps None
                state.append(torch.as_tensor(opt.state[p][key]).detach())
    return [copy.deepcopy(t.cpu()).double() for t in losses + state]
