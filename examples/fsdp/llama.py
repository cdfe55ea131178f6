"""A small Llama-style decoder in plain torch (RMSNorm, causal attention with rotary
positions, SwiGLU MLP) for the FSDP2 example, its benchmark and lazygen's sharded-training
tests: tiny enough for 2 CPU cores, with every layer kind torchtitan shards."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class Config:
    vocab: int = 32
    dim: int = 16
    heads: int = 2
    hidden: int = 32
    layers: int = 2
    seq: int = 8


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Attention(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.heads = config.heads
        self.wq = nn.Linear(config.dim, config.dim, bias=False)
        self.wk = nn.Linear(config.dim, config.dim, bias=False)
        self.wv = nn.Linear(config.dim, config.dim, bias=False)
        self.wo = nn.Linear(config.dim, config.dim, bias=False)

    def forward(self, x, cos, sin):
        batch, seq, _ = x.shape
        # -1 heads: under tensor parallelism each rank holds a slice of them
        q = self.wq(x).view(batch, seq, -1, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(batch, seq, -1, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(batch, seq, -1, self.head_dim).transpose(1, 2)
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(batch, seq, -1))

    @property
    def head_dim(self) -> int:
        return self.wq.in_features // self.heads


class FeedForward(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.w1 = nn.Linear(config.dim, config.hidden, bias=False)
        self.w3 = nn.Linear(config.dim, config.hidden, bias=False)
        self.w2 = nn.Linear(config.hidden, config.dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(config.dim)
        self.attention = Attention(config)
        self.ffn_norm = RMSNorm(config.dim)
        self.feed_forward = FeedForward(config)

    def forward(self, x, cos, sin):
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        self.tok_embeddings = nn.Embedding(config.vocab, config.dim)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.norm = RMSNorm(config.dim)
        self.output = nn.Linear(config.dim, config.vocab, bias=False)

    def forward(self, tokens):
        head_dim = self.config.dim // self.config.heads
        seq = tokens.shape[1]
        # rotary tables: made on the host each call (no buffer to shard), moved to the
        # activations' device
        inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
        angles = torch.outer(torch.arange(seq, dtype=torch.float64), inv)
        angles = torch.cat((angles, angles), dim=-1)
        h = self.tok_embeddings(tokens)
        cos = angles.cos().to(h.dtype).to(h.device)
        sin = angles.sin().to(h.dtype).to(h.device)
        for layer in self.layers:
            h = layer(h, cos, sin)
        return self.output(self.norm(h))


def loss_of(model: nn.Module, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    logits = model(tokens).flatten(0, 1)
    if logits.dtype == torch.bfloat16:  # mixed precision: the loss in float32
        logits = logits.float()
    return F.cross_entropy(logits, targets.flatten())


def batches(config: Config, steps: int, global_batch: int, seed: int = 0):
    """The same global batches on every rank: (tokens, next tokens)."""
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        data = torch.randint(0, config.vocab, (global_batch, config.seq + 1), generator=gen)
        yield data[:, :-1], data[:, 1:]
