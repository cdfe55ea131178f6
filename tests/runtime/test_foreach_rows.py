"""A foreach op on the lazy device runs its element op once per position
(``dispatch.decompositions``): lists by position, the other arguments the same each time,
keyword ones (``addcmul``'s ``value``, ``add``'s ``alpha``) passed by keyword. Each case
must match eager, element for element."""

from __future__ import annotations

import torch

import lazygen.runtime as lr

LAZY = "lazygen"


def _pairs(n: int = 3):
    host = [torch.randn(4, 2) for _ in range(n)]
    lazy = [t.to(LAZY) for t in host]
    lr.mark_step()
    return host, lazy


def _same(lazy, host):
    assert len(lazy) == len(host)
    for got, expected in zip(lazy, host, strict=True):
        torch.testing.assert_close(got.cpu(), expected)


def test_lists_and_a_scalar_by_position():
    (xs, lxs), (ys, lys) = _pairs(), _pairs()
    _same(torch._foreach_lerp(lxs, lys, 0.25), torch._foreach_lerp(xs, ys, 0.25))
    _same(torch._foreach_mul(lxs, [2.0, 3.0, 0.5]), torch._foreach_mul(xs, [2.0, 3.0, 0.5]))


def test_a_keyword_argument_reaches_every_element():
    (xs, lxs), (ys, lys), (zs, lzs) = _pairs(), _pairs(), _pairs()
    _same(
        torch._foreach_addcmul(lxs, lys, lzs, value=-0.5),
        torch._foreach_addcmul(xs, ys, zs, value=-0.5),
    )
    _same(torch._foreach_add(lxs, lys, alpha=3), torch._foreach_add(xs, ys, alpha=3))


def test_in_place_forms_as_an_optimizer_calls_them():
    (xs, lxs), (ys, lys), (zs, lzs) = _pairs(), _pairs(), _pairs()
    for args in ((xs, ys, zs), (lxs, lys, lzs)):
        torch._foreach_addcdiv_(args[0], args[1], torch._foreach_add(args[2], 2.0), value=0.1)
    _same(lxs, xs)
