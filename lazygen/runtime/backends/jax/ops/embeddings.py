"""Embeddings of the jax backend's table: lookups, their gradients, ``max_norm``'s
renormalisation and embedding bags (sums, means or maxima of the rows each bag's indices
name); apart because a bag's rows are chosen by offsets into the index list. The bags
follow torch's CPU kernel: an index equal to ``padding_idx`` adds nothing and is not
counted; an empty bag is 0; a maximum remembers the first row that reaches it."""

from __future__ import annotations

import jax.numpy as jnp

from ..dtypes import as_dtype, dt
from .table import op, sizes


@op("embedding")
def _embedding(shapes, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return jnp.take(weight, indices, axis=0)


@op("embedding_dense_backward")
def _embedding_backward(shapes, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    d = dt(shapes)
    flat = indices.reshape(-1)
    rows = grad.reshape(flat.shape[0], -1).astype(d)
    if padding_idx >= 0:
        rows = jnp.where((flat == padding_idx)[:, None], jnp.zeros((), d), rows)
    if scale_grad_by_freq:
        counts = jnp.zeros((num_weights,), d).at[flat].add(1)
        rows = rows / counts[flat][:, None]
    return jnp.zeros((num_weights, rows.shape[1]), d).at[flat].add(rows)


@op("embedding_renorm")
def _embedding_renorm(shapes, weight, indices, max_norm, norm_type):
    """The rows ``indices`` names scaled to norm ``max_norm`` where theirs is larger (torch
    scales by ``max_norm / (norm + 1e-7)``)."""
    named = jnp.zeros((weight.shape[0],), bool).at[jnp.reshape(indices, (-1,))].set(True)
    norms = jnp.sum(jnp.abs(weight) ** norm_type, axis=1) ** (1.0 / norm_type)
    scale = jnp.where(named & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
    return (weight * scale[:, None].astype(weight.dtype)).astype(dt(shapes))


def _bags(indices, offsets, include_last_offset: bool, padding_idx: int):
    """``(number of bags, each index's bag, which indices count)``."""
    count = offsets.shape[0] - 1 if include_last_offset else offsets.shape[0]
    positions = jnp.arange(indices.shape[0], dtype=offsets.dtype)
    bag = jnp.searchsorted(offsets[:count], positions, side="right") - 1
    return count, bag.astype(jnp.int64), indices != padding_idx


@op("_embedding_bag", "_embedding_bag_forward_only", reads_sizes=True)
def _embedding_bag(
    shapes, weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
    per_sample_weights=None, include_last_offset=False, padding_idx=-1,
):  # fmt: skip
    count, bag, kept = _bags(indices, offsets, include_last_offset, padding_idx)
    rows = jnp.take(weight, indices, axis=0)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights[:, None].astype(rows.dtype)
    width = weight.shape[1]
    sizes_ = jnp.zeros((count,), jnp.int64).at[bag].add(kept.astype(jnp.int64))
    zero = jnp.zeros((), rows.dtype)
    if mode == 2:
        low = jnp.asarray(-jnp.inf, rows.dtype)
        out = jnp.full((count, width), low).at[bag].max(jnp.where(kept[:, None], rows, low))
        out = jnp.where(sizes_[:, None] > 0, out, zero)
        reaches = kept[:, None] & (rows == out[bag])
        positions = jnp.arange(indices.shape[0])[:, None]
        first = (
            jnp.full((count, width), indices.shape[0])
            .at[bag]
            .min(jnp.where(reaches, positions, indices.shape[0]))
        )
        padded = jnp.concatenate([indices, jnp.zeros((1,), indices.dtype)])
        maxima = jnp.where(sizes_[:, None] > 0, padded[first], 0).astype(jnp.int64)
    else:
        out = (
            jnp.zeros((count, width), rows.dtype).at[bag].add(jnp.where(kept[:, None], rows, zero))
        )
        if mode == 1:
            out = out / jnp.maximum(sizes_, 1)[:, None].astype(out.dtype)
        maxima = jnp.zeros(sizes(shapes, 3), jnp.int64)
        if mode == 0:
            sizes_ = jnp.zeros_like(sizes_)
    # torch's meta kernel gives a bag size per offset, the last one's included
    sizes_ = jnp.pad(sizes_, (0, offsets.shape[0] - count))
    return out.astype(dt(shapes)), bag, sizes_, maxima


def _bag_backward(shapes, grad, indices, bag, bag_size, maxima, num_weights, scale_by_freq,
                  mode, per_sample_weights, padding_idx):  # fmt: skip
    d = dt(shapes)
    grad = as_dtype(grad, d)
    if mode == 2:
        columns = jnp.broadcast_to(jnp.arange(grad.shape[1]), maxima.shape)
        live = (bag_size[: grad.shape[0]] > 0)[:, None]  # one more with include_last_offset
        return (
            jnp.zeros((num_weights, grad.shape[1]), d)
            .at[maxima, columns]
            .add(jnp.where(live, grad, jnp.zeros((), d)))
        )
    rows = grad[bag]
    if per_sample_weights is not None:
        rows = rows * per_sample_weights[:, None].astype(d)
    if mode == 1:
        rows = rows / jnp.maximum(bag_size[bag], 1)[:, None].astype(d)
    rows = jnp.where((indices == padding_idx)[:, None], jnp.zeros((), d), rows)
    if scale_by_freq:
        counts = jnp.zeros((num_weights,), d).at[indices].add(1)
        rows = rows / counts[indices][:, None]
    return jnp.zeros((num_weights, grad.shape[1]), d).at[indices].add(rows)


@op("_embedding_bag_backward")
def _embedding_bag_backward(
    shapes, grad, indices, offsets, offset2bag, bag_size, maxima, num_weights, scale_by_freq,
    mode, sparse, per_sample_weights, padding_idx=-1,
):  # fmt: skip
    return _bag_backward(shapes, grad, indices, offset2bag, bag_size, maxima, num_weights,
                         scale_by_freq, mode, per_sample_weights, padding_idx)  # fmt: skip


@op("_embedding_bag_dense_backward")
def _embedding_bag_dense_backward(
    shapes, grad, indices, offset2bag, bag_size, maxima, num_weights, scale_by_freq, mode,
    per_sample_weights, padding_idx=-1,
):  # fmt: skip
    return _bag_backward(shapes, grad, indices, offset2bag, bag_size, maxima, num_weights,
                         scale_by_freq, mode, per_sample_weights, padding_idx)  # fmt: skip


@op("_embedding_bag_per_sample_weights_backward")
def _per_sample_weights_backward(
    shapes, grad, weight, indices, offsets, offset2bag, mode, padding_idx=-1
):  # fmt: skip
    d = dt(shapes)
    dots = jnp.sum(as_dtype(grad, d)[offset2bag] * as_dtype(weight, d)[indices], axis=1)
    return jnp.where(indices == padding_idx, jnp.zeros((), d), dots)
