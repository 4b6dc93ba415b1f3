"""torch's ``linalg.matrix_exp`` (also ``torch.matrix_exp`` and ``Tensor.matrix_exp``),
``linalg.cholesky_ex``, ``linalg.inv_ex`` and ``linalg.cond`` for ported code (Lie-group
and orthogonal parametrisations, continuous-time Markov models, a Cholesky that reports
instead of raising). ``matrix_exp``'s forward is SciPy's ``expm`` and its gradient the
Fréchet derivative at the adjoint (``expm_frechet(A^H, G)``), matrix by matrix; host arrays.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .autograd import Function, xp_of
from .ops_linalg import _as_tensor, _float, _square, cholesky, inv, matrix_norm, svdvals

__all__ = ["matrix_exp", "cholesky_ex", "inv_ex", "cond"]
_CholeskyEx = namedtuple("cholesky_ex", ["L", "info"])
_InvEx = namedtuple("inv_ex", ["inverse", "info"])


def _each(fn, *arrays):
    """``fn`` matrix by matrix on the host (SciPy's), the result on ``arrays[0]``'s device."""
    a0 = arrays[0]
    flat = [(a.get() if hasattr(a, "get") else np.asarray(a)).reshape((-1,) + a.shape[-2:])
            for a in arrays]
    out = np.stack([fn(*ms) for ms in zip(*flat)]) if flat[0].shape[0] else flat[0].copy()
    return xp_of(a0).asarray(out.reshape(a0.shape))


class _MatrixExp(Function):
    complex_aware = True  # the Frechet derivative at A^H is torch's gradient, real or complex

    def forward(self, a):
        from scipy.linalg import expm

        self.save_for_backward(a)
        return _each(expm, a).astype(a.dtype)

    def backward(self, g):
        from scipy.linalg import expm_frechet

        (a,) = self.saved
        return _each(lambda m, gm: expm_frechet(m.conj().T, gm, compute_expm=False),
                     a, g).astype(a.dtype)


def matrix_exp(A):
    """torch's ``linalg.matrix_exp``: ``exp`` of each square matrix of ``A`` (..., n, n)."""
    A = _float(_as_tensor(A))
    _square("matrix_exp", A)
    return _MatrixExp.apply(A)


def _info(lapack, A):
    from scipy.linalg import lapack as lp

    a = np.asarray(A.detach().numpy())
    fn = getattr(lp, ("d" if a.dtype == np.float64 else "s") + lapack)
    flat = a.reshape((-1,) + a.shape[-2:])
    infos = [int(fn(m, lower=1)[1]) if lapack == "potrf" else int(fn(m)[2]) for m in flat]
    return a, np.asarray(infos, np.int32).reshape(a.shape[:-2])


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """torch's ``linalg.cholesky_ex``: ``(L, info)``; ``info`` is 0, or the order of the
    first leading minor that is not positive definite (L is then not usable)."""
    A = _float(_as_tensor(A))
    _square("cholesky_ex", A)
    a, info = _info("potrf", A)
    if check_errors and info.any():
        raise RuntimeError(f"linalg.cholesky_ex: the factorization could not be completed "
                           f"because the input is not positive-definite (the leading minor "
                           f"of order {int(info.reshape(-1)[np.flatnonzero(info)[0]])} is not "
                           "positive-definite)")
    T = type(A)
    if not info.any():
        L = cholesky(A, upper=upper)
    else:
        L = T._make(np.full(a.shape, np.nan, a.dtype), False, None, 0)
    return _CholeskyEx(L, T._make(info, False, None, 0))


def inv_ex(A, *, check_errors=False, out=None):
    """torch's ``linalg.inv_ex``: ``(inverse, info)``; ``info`` > 0 marks a singular
    matrix (its inverse is then not usable)."""
    A = _float(_as_tensor(A))
    _square("inv_ex", A)
    a, info = _info("getrf", A)
    if check_errors and info.any():
        raise RuntimeError("linalg.inv_ex: The diagonal element "
                           f"{int(info.reshape(-1)[np.flatnonzero(info)[0]])} is zero, the "
                           "inversion could not be completed because the input matrix is "
                           "singular.")
    T = type(A)
    res = inv(A) if not info.any() else T._make(np.full(a.shape, np.nan, a.dtype), False,
                                                 None, 0)
    return _InvEx(res, T._make(info, False, None, 0))


def cond(A, p=None):
    """torch's ``linalg.cond``: ``sigma_max / sigma_min`` (``p`` None or 2), ``-2`` its
    inverse, else ``norm(A, p) * norm(inv(A), p)`` (``'fro'``, ``'nuc'``, ``inf``, 1, ...)."""
    A = _float(_as_tensor(A))
    if p is None or p in (2, -2):
        s = svdvals(A)
        r = s.max(dim=-1)[0] / s.min(dim=-1)[0]
        return 1 / r if p == -2 else r
    _square("cond", A)
    return matrix_norm(A, p) * matrix_norm(inv(A), p)
