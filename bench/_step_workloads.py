"""The three training steps ``bench/jax_backend.py`` and ``bench/captured_step.py`` time
(issue #48's workloads): an MLP with SGD, a TransformerEncoder with AdamW and a small
GPT-2 with AdamW, seeded, on the CPU; each script moves them where its route needs."""

from __future__ import annotations

WORKLOADS = ("mlp", "encoder", "gpt2")


def training_step(name: str, on_lazy_device: bool, foreach: bool | None = None):
    """The workload's whole training step as a function of nothing that returns the loss:
    forward, ``loss.backward()``, ``optimizer.step()``, ``zero_grad()``. Its model, batch and
    optimizer state live on the lazy device when ``on_lazy_device`` (the caller has called
    ``lr.init``), on the CPU otherwise. ``foreach``: the optimizer's ``foreach`` argument;
    None leaves torch's default for the device (the per-tensor loop on the CPU, the
    ``_foreach_*`` ops on the lazy device, a PrivateUse1 device)."""
    model, (x, y), make_optimizer, _, loss_of = make_workload(name)
    if on_lazy_device:
        model, x, y = model.to("lazygen"), x.to("lazygen"), y.to("lazygen")
    model.train()
    optimizer = make_optimizer(model.parameters())
    if foreach is not None:
        for group in optimizer.param_groups:
            group["foreach"] = foreach

    def step():
        loss = loss_of(model, x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    step.optimizer = optimizer  # for a caller that checks its settings
    return step


def make_workload(name: str):
    """``(model, (x, y), optimizer factory, optax optimizer factory, loss(model, x, y))``."""
    import torch

    torch.manual_seed(0)
    if name == "mlp":
        model = torch.nn.Sequential(
            torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
        )
        batch = (torch.randn(64, 784), torch.randint(0, 10, (64,)))
        sgd = lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9)  # noqa: E731
        return model, batch, sgd, ("sgd", 0.01, 0.9), classify
    if name == "encoder":

        class Encoder(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
                self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
                self.head = torch.nn.Linear(64, 10)

            def forward(self, x):
                return self.head(self.encoder(x).mean(1))

        batch = (torch.randn(8, 16, 64), torch.randint(0, 10, (8,)))
        adamw = lambda p: torch.optim.AdamW(p, lr=1e-3)  # noqa: E731
        return Encoder(), batch, adamw, ("adamw", 1e-3, 0.01), classify
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=128, n_positions=32, n_embd=64, n_layer=2, n_head=4,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )  # fmt: skip
    ids = torch.randint(0, 128, (4, 16))
    model = GPT2LMHeadModel(config)
    model.loss_type = "ForCausalLM"  # transformers warns (a graph break) without it
    adamw = lambda p: torch.optim.AdamW(p, lr=1e-3)  # noqa: E731
    return model, (ids, ids), adamw, ("adamw", 1e-3, 0.01), language_model


def classify(model, x, y):
    import torch

    return torch.nn.functional.cross_entropy(model(x), y)


def language_model(model, x, y):
    return model(input_ids=x, labels=y, use_cache=False).loss
