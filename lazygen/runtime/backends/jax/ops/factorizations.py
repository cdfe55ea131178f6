"""Matrix factorizations and solves of the jax backend's table (LU, QR, Cholesky, triangular
solves, inverses, determinants, the matrix exponential): ``jax.lax.linalg``'s, which call
the same LAPACK routines as torch's CPU kernels, with torch's conventions for what they
return: 1-based int32 pivots, an ``info`` that names the first zero pivot as LAPACK's
``getrf`` does (a singular matrix is not an error with ``check_errors=False``), ``P @ L @
U == A``, and empty tensors for parts not asked for."""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jax import lax

from ..dtypes import as_dtype, dt
from .table import op


def _lu(a):
    """``(LU, torch's 1-based int32 pivots, 0-based permutation)``."""
    lu, pivots, permutation = lax.linalg.lu(a)
    return lu, (pivots + 1).astype(jnp.int32), permutation


def _info(lu):
    """LAPACK ``getrf``'s info: the 1-based index of the first zero on U's diagonal, or 0."""
    return _first(jnp.diagonal(lu, axis1=-2, axis2=-1) == 0)


def _first(flags):
    """The 1-based index of the first true flag along the last dim, or 0."""
    if flags.shape[-1] == 0:  # an empty matrix: nothing failed
        return jnp.zeros(flags.shape[:-1], jnp.int32)
    return jnp.where(jnp.any(flags, -1), jnp.argmax(flags, -1) + 1, 0).astype(jnp.int32)


def _permutation(pivots, rows: int):
    return lax.linalg.lu_pivots_to_permutation(pivots.astype(jnp.int32) - 1, rows)


def _lu_solve(lu, permutation, b, left=True, adjoint=False):
    """``A X = B`` (``X A = B`` when not ``left``; ``A^H`` for ``adjoint``) from A's LU."""
    if not left:  # X A = B  <=>  A^H X^H = B^H
        b = jnp.conj(jnp.swapaxes(b, -1, -2))
        adjoint = not adjoint
    batch = jnp.broadcast_shapes(lu.shape[:-2], b.shape[:-2])
    lu = jnp.broadcast_to(lu, batch + lu.shape[-2:])
    b = jnp.broadcast_to(b, batch + b.shape[-2:])
    permutation = jnp.broadcast_to(permutation, batch + permutation.shape[-1:])
    solve = lax.linalg.triangular_solve
    if adjoint:  # A^H = U^H L^H P^T
        y = solve(lu, b, left_side=True, lower=False, transpose_a=True, conjugate_a=True)
        y = solve(lu, y, left_side=True, lower=True, transpose_a=True, conjugate_a=True,
                  unit_diagonal=True)  # fmt: skip
        inverse = jnp.argsort(permutation, axis=-1)
        x = jnp.take_along_axis(y, inverse[..., None], axis=-2)
    else:
        pb = jnp.take_along_axis(b, permutation[..., None], axis=-2)
        y = solve(lu, pb, left_side=True, lower=True, unit_diagonal=True)
        x = solve(lu, y, left_side=True, lower=False)
    return jnp.conj(jnp.swapaxes(x, -1, -2)) if not left else x


@op("linalg_lu_factor_ex")
def _lu_factor_ex(shapes, a, *, pivot=True, check_errors=False):
    lu, pivots, _ = _lu(a)
    return lu, pivots, _info(lu)


def _unpacked(lu, permutation, dtype):
    m, n = lu.shape[-2:]
    k = min(m, n)
    lower = jnp.tril(lu[..., :, :k], -1) + jnp.eye(m, k, dtype=dtype)
    upper = jnp.triu(lu[..., :k, :])
    p = jnp.swapaxes(jnp.eye(m, dtype=dtype)[permutation], -1, -2)  # A = P L U
    return p, lower, upper


@op("linalg_lu")
def _linalg_lu(shapes, a, *, pivot=True):
    lu, _, permutation = _lu(a)
    return _unpacked(lu, permutation, a.dtype)


@op("lu_unpack")
def _lu_unpack(shapes, lu, pivots, unpack_data=True, unpack_pivots=True):
    p, lower, upper = _unpacked(lu, _permutation(pivots, lu.shape[-2]), lu.dtype)
    empty = jnp.zeros((0,), lu.dtype)
    return (p if unpack_pivots else empty), *((lower, upper) if unpack_data else (empty, empty))


@op("linalg_lu_solve")
def _linalg_lu_solve(shapes, lu, pivots, b, *, left=True, adjoint=False):
    d = dt(shapes)
    permutation = _permutation(pivots, lu.shape[-2])
    return _lu_solve(as_dtype(lu, d), permutation, as_dtype(b, d), left, adjoint)


@op("_linalg_solve_ex")
def _solve_ex(shapes, a, b, *, left=True, check_errors=False):
    lu, pivots, permutation = _lu(a)
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    rhs = b[..., None] if vector else b
    x = _lu_solve(lu, permutation, rhs, left)
    return (x[..., 0] if vector else x), lu, pivots, _info(lu)


@op("linalg_inv_ex")
def _inv_ex(shapes, a, *, check_errors=False):
    lu, _, permutation = _lu(a)
    identity = jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    return _lu_solve(lu, permutation, identity), _info(lu)


def _sign_and_log(lu, pivots):
    diagonal = jnp.diagonal(lu, axis1=-2, axis2=-1)
    swaps = jnp.sum(pivots != jnp.arange(1, pivots.shape[-1] + 1, dtype=pivots.dtype), -1)
    parity = jnp.where(swaps % 2 == 1, -1, 1).astype(lu.dtype)
    magnitude = jnp.abs(diagonal)
    unit = jnp.where(magnitude == 0, 0, diagonal / jnp.where(magnitude == 0, 1, magnitude))
    return parity * jnp.prod(unit, -1), jnp.sum(jnp.log(magnitude), -1)


def _determinant_lu(a):
    """The LU that torch's ``_linalg_det`` and ``_linalg_slogdet`` return: of ``A^T`` for a
    real ``A`` (torch factors the transpose of a contiguous real matrix to spare LAPACK a
    copy, and a lazy tensor is always contiguous), of ``A`` for a complex one. Their
    backwards solve with this LU and choose ``adjoint`` by the same rule, so the LU of ``A``
    for a real ``A`` gives the transposed gradient."""
    return _lu(a if jnp.iscomplexobj(a) else jnp.swapaxes(a, -1, -2))


@op("_linalg_slogdet")
def _slogdet(shapes, a):
    lu, pivots, _ = _determinant_lu(a)
    sign, log = _sign_and_log(lu, pivots)
    return sign, log.astype(dt(shapes, 1)), lu, pivots


@op("_linalg_det")
def _det(shapes, a):
    lu, pivots, _ = _determinant_lu(a)
    diagonal = jnp.diagonal(lu, axis1=-2, axis2=-1)
    swaps = jnp.sum(pivots != jnp.arange(1, pivots.shape[-1] + 1, dtype=pivots.dtype), -1)
    parity = jnp.where(swaps % 2 == 1, -1, 1).astype(lu.dtype)
    return parity * jnp.prod(diagonal, -1), lu, pivots


@op("linalg_cholesky_ex")
def _cholesky_ex(shapes, a, *, upper=False, check_errors=False):
    lower = lax.linalg.cholesky(a)
    diagonal = jnp.real(jnp.diagonal(lower, axis1=-2, axis2=-1))
    info = _first(~(diagonal > 0))
    return (jnp.conj(jnp.swapaxes(lower, -1, -2)) if upper else lower), info


@op("cholesky_inverse")
def _cholesky_inverse(shapes, factor, upper=False):
    identity = jnp.broadcast_to(jnp.eye(factor.shape[-1], dtype=factor.dtype), factor.shape)
    return jsl.cho_solve((factor, not upper), identity)


@op("linalg_solve_triangular")
def _solve_triangular(shapes, a, b, *, upper, left=True, unitriangular=False):
    d = dt(shapes)
    a, b = as_dtype(a, d), as_dtype(b, d)
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a, b = jnp.broadcast_to(a, batch + a.shape[-2:]), jnp.broadcast_to(b, batch + b.shape[-2:])
    return lax.linalg.triangular_solve(
        a, b, left_side=left, lower=not upper, unit_diagonal=unitriangular
    )


@op("triangular_solve")
def _triangular_solve(shapes, b, a, upper=True, transpose=False, unitriangular=False):
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a, b = jnp.broadcast_to(a, batch + a.shape[-2:]), jnp.broadcast_to(b, batch + b.shape[-2:])
    x = lax.linalg.triangular_solve(
        a, b, left_side=True, lower=not upper, transpose_a=transpose, unit_diagonal=unitriangular
    )
    return x, a


@op("linalg_householder_product")
def _householder_product(shapes, a, tau):
    return lax.linalg.householder_product(a, tau)


@op("linalg_qr")
def _qr(shapes, a, mode="reduced"):
    if mode == "r":
        return jnp.zeros((0,), a.dtype), jnp.linalg.qr(a, mode="r")
    return jnp.linalg.qr(a, mode=mode)


@op("linalg_matrix_exp")
def _matrix_exp(shapes, a):
    return jsl.expm(a)


@op("_cholesky_solve_helper")
def _cholesky_solve(shapes, b, factor, upper):
    """``cholesky_solve``'s kernel (``b`` and ``factor`` broadcast by torch already):
    ``A^-1 b`` for ``A = L L^H`` (or ``U^H U``), as two triangular solves."""
    d = dt(shapes)
    return jsl.cho_solve((as_dtype(factor, d), not upper), as_dtype(b, d))


@op("ormqr")
def _ormqr(shapes, reflectors, tau, c, left=True, transpose=False):
    """``Q @ c`` (or ``Q^H``, or from the right) for the ``Q`` of ``geqrf``'s reflectors,
    without forming ``Q``: LAPACK's ``ormqr``, as torch's kernel calls it."""
    d = dt(shapes)
    reflectors, tau, c = as_dtype(reflectors, d), as_dtype(tau, d), as_dtype(c, d)
    return lax.linalg.ormqr(reflectors, tau, c, left=left, transpose=transpose)
