"""Round 39: torch's LU and LDL names: ``linalg.lu``, ``lu_factor``, ``lu_factor_ex``,
``lu_solve``, ``ldl_factor``, ``ldl_factor_ex``, ``ldl_solve``, ``householder_product``, and
the top-level ``lu_unpack``, ``lu`` and ``lu_solve(b, LU, pivots)`` (torch's deprecated order).

The factorizations are LAPACK's, as torch's CPU ones (``getrf`` with partial pivoting;
``sytrf``/``hetrf``, Bunch-Kaufman, lower): the same factors and the same 1-based int32
pivots. ``lu`` and ``lu_factor`` are differentiable (torch's rule: ``A = P L U``,
``gA = P L^-H [(L^H gL).tril(-1) + (gU U^H).triu()] U^-H``, with the wide and tall cases);
``lu_solve`` and ``lu_unpack`` are compositions of differentiable ops (triangular solves,
``tril``/``triu``), so they carry gradients to ``LU`` and ``B``; ``householder_product`` is
the product of the reflectors ``I - tau v v^H`` as differentiable ops. ``ldl_factor`` has no
gradient (torch's has none either)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import ops_linalg as _la
from .autograd import Function, is_grad_enabled, xp_of

__all__ = ["lu", "lu_factor", "lu_factor_ex", "lu_solve", "ldl_factor", "ldl_factor_ex",
           "ldl_solve", "householder_product", "lu_unpack"]

_LU = namedtuple("linalg_lu", ["P", "L", "U"])
_LUFactor = namedtuple("linalg_lu_factor", ["LU", "pivots"])
_LUFactorEx = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
_LUUnpack = namedtuple("lu_unpack", ["P", "L", "U"])
_LDLFactor = namedtuple("linalg_ldl_factor", ["LD", "pivots"])
_LDLFactorEx = namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


def _lapack(name, dtype):
    from scipy.linalg import lapack

    return getattr(lapack, {"f": "s", "d": "d", "F": "c", "D": "z"}[np.dtype(dtype).char] + name)


def _getrf(a):
    """LAPACK ``getrf`` over a batch: packed LU, 1-based int32 pivots, info."""
    a = np.asarray(a)
    m, n = a.shape[-2:]
    flat = a.reshape((-1, m, n))
    fn = _lapack("getrf", a.dtype)
    lus = np.empty_like(flat)
    pivs = np.empty((flat.shape[0], min(m, n)), np.int32)
    infos = np.zeros(flat.shape[0], np.int32)
    for i, mat in enumerate(flat):
        lu_, piv, info = fn(mat)
        lus[i], pivs[i], infos[i] = lu_, piv + 1, info
    batch = a.shape[:-2]
    return lus.reshape(a.shape), pivs.reshape(batch + (min(m, n),)), infos.reshape(batch)


def _perm_matrix(pivots, m, dtype):
    """``P`` (``A = P L U``) from 1-based LAPACK pivots: the rows swapped in order."""
    pivots = np.asarray(pivots)
    batch = pivots.shape[:-1]
    flat = pivots.reshape((-1, pivots.shape[-1]))
    out = np.zeros((flat.shape[0], m, m), dtype)
    for b, piv in enumerate(flat):
        perm = np.arange(m)
        for i, p in enumerate(piv):
            j = int(p) - 1
            if not 0 <= j < m:
                raise RuntimeError(f"torch.lu_unpack: pivots contain an index {int(p)} out of "
                                   f"range [1, {m}]")
            perm[i], perm[j] = perm[j], perm[i]
        out[b, perm, np.arange(m)] = 1  # P^T A = A[perm]
    return out.reshape(batch + (m, m))


def _unpack(lu_):
    m, n = lu_.shape[-2:]
    k = min(m, n)
    low = np.tril(lu_[..., :, :k], -1)
    idx = np.arange(k)
    low[..., idx, idx] = 1
    return low, np.triu(lu_[..., :k, :])


def _mH(a):
    return _la._mH(a)


def _tri_solve(t, b, *, upper, left=True, unit=False):
    """``t^-1 b`` (``left``) or ``b t^-1`` for batched triangular ``t`` (numpy)."""
    from scipy.linalg import solve_triangular

    if not left:
        return _mH(_tri_solve(_mH(t), _mH(b), upper=not upper, unit=unit))
    if b.size == 0:
        return np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                        np.result_type(t, b))
    batch = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    t = np.broadcast_to(t, batch + t.shape[-2:]).reshape((-1,) + t.shape[-2:])
    bb = np.broadcast_to(b, batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:])
    out = np.stack([solve_triangular(ti, bi, lower=not upper, unit_diagonal=unit)
                    for ti, bi in zip(t, bb)]) if len(t) else np.zeros_like(bb)
    return out.reshape(batch + b.shape[-2:])


def _lu_backward(p, low, up, gl, gu):
    """torch's ``linalg_lu_backward``: the gradient of ``A = P L U`` for square, wide
    (m < n) and tall (m > n) ``A``."""
    m, n = low.shape[-2], up.shape[-1]
    k = min(m, n)
    gl = np.zeros_like(low) if gl is None else np.tril(gl, -1)
    gu = np.zeros_like(up) if gu is None else np.triu(gu)
    if m <= n:  # wide or square: L is m x m, U = [U1 U2]
        u1, gu1, u2, gu2 = up[..., :, :k], gu[..., :, :k], up[..., :, k:], gu[..., :, k:]
        inner = np.tril(_mH(low) @ gl - gu2 @ _mH(u2), -1) + np.triu(gu1 @ _mH(u1))
        g1 = _tri_solve(_mH(low), _tri_solve(_mH(u1), inner, upper=False, left=False),
                        upper=True, unit=True)
        if n > k:
            ga = np.concatenate([g1, _tri_solve(_mH(low), gu2, upper=True, unit=True)], -1)
        else:
            ga = g1
    else:  # tall: L = [L1; L2], U is n x n
        l1, gl1, l2, gl2 = low[..., :k, :], gl[..., :k, :], low[..., k:, :], gl[..., k:, :]
        inner = np.tril(_mH(l1) @ gl1, -1) + np.triu(gu @ _mH(up) - _mH(l2) @ gl2)
        g1 = _tri_solve(_mH(l1), _tri_solve(_mH(up), inner, upper=False, left=False),
                        upper=True, unit=True)
        g2 = _tri_solve(_mH(up), gl2, upper=False, left=False)
        ga = np.concatenate([g1, g2], -2)
    return p @ ga


class _Lu(Function):
    """``(P, L, U)`` of LAPACK's partially pivoted LU; ``P`` is not differentiable."""

    complex_aware = True

    def forward(self, a):
        xp = xp_of(a)
        lu_, piv, _ = _getrf(_host(a))
        low, up = _unpack(lu_)
        p = _perm_matrix(piv, a.shape[-2], lu_.dtype)
        self.save_for_backward(p, low, up)
        return xp.asarray(p), xp.asarray(low), xp.asarray(up)

    def backward(self, gp, gl, gu):
        p, low, up = self.saved
        ga = _lu_backward(p, low, up, _opt_host(gl), _opt_host(gu))
        return xp_of(gl if gl is not None else gu).asarray(ga)  # on the gradient's device


class _LuFactor(Function):
    """The packed ``LU`` (unit-lower ``L`` below the diagonal, ``U`` on and above it), given
    by the caller with its pivots; the gradient of ``LU`` is ``lu``'s of its two triangles."""

    complex_aware = True

    def forward(self, a, lu_=None, piv=None):
        self.piv = piv
        self.save_for_backward(lu_)
        return xp_of(a).asarray(lu_)

    def backward(self, g):
        (lu_,) = self.saved
        low, up = _unpack(lu_)
        p = _perm_matrix(self.piv, lu_.shape[-2], lu_.dtype)
        xp, g = xp_of(g), _host(g)
        k = min(lu_.shape[-2:])
        return xp.asarray(_lu_backward(p, low, up, g[..., :, :k], g[..., :k, :]))


def _host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _opt_host(a):
    return None if a is None else _host(a)


def _check_matrix(name, A):
    if A.ndim < 2:
        raise RuntimeError(f"torch.linalg.{name}: The input tensor A must have at least 2 "
                           f"dimensions.")


def _pivot_check(name, pivot):
    if not pivot:
        raise RuntimeError(f"linalg.{name}: LU without pivoting is not implemented on the CPU")


def lu(A, *, pivot=True, out=None):  # noqa: ARG001 - torch's signature
    """torch's ``linalg.lu``: ``(P, L, U)`` with ``A = P @ L @ U`` (``L`` m x k unit lower,
    ``U`` k x n upper, k = min(m, n)); differentiable in ``A``."""
    A = _la._float(_la._as_tensor(A))
    _check_matrix("lu", A)
    _pivot_check("lu_factor", pivot)
    P, L, U = _Lu.apply(A)
    return _LU(P.detach(), L, U)


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):  # noqa: ARG001
    """torch's ``linalg.lu_factor_ex``: ``(LU, pivots, info)``; ``info`` is LAPACK's (k > 0:
    ``U[k-1, k-1]`` is zero)."""
    A = _la._float(_la._as_tensor(A))
    _check_matrix("lu_factor_ex", A)
    _pivot_check("lu_factor", pivot)
    lu_, piv, info = _getrf(_host(A.detach().numpy()))
    LU = _LuFactor.apply(A, lu_=lu_, piv=piv)
    T = type(A)
    if check_errors and np.any(info):
        _raise_singular("lu_factor_ex", info)
    return _LUFactorEx(LU, T._make(np.asarray(piv), False, None, 0),
                       T._make(np.asarray(info), False, None, 0))


def _raise_singular(name, info):
    info = np.asarray(info)
    flat = info.reshape(-1)
    b = int(np.flatnonzero(flat)[0])
    k = int(flat[b])  # torch prints LAPACK's info itself
    where = f"(Batch element {b}): " if info.ndim else ""
    raise _la.LinAlgError(f"torch.linalg.{name}: {where}U[{k},{k}] is zero and using it on "
                          "lu_solve would result in a division by zero. If you still want to "
                          "perform the factorization, consider calling linalg.lu(A, pivot) or "
                          "linalg.lu_factor_ex(A, pivot)")


def lu_factor(A, *, pivot=True, out=None):  # noqa: ARG001
    """torch's ``linalg.lu_factor``: ``(LU, pivots)``; raises torch's LinAlgError for a
    singular ``A`` (``lu_factor_ex`` reports it in ``info``)."""
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    if np.any(info.numpy()):
        _raise_singular("lu_factor", info.numpy())
    return _LUFactor(LU, piv)


def _unpack_tensors(LU):
    """``L`` (unit lower, m x k) and ``U`` (upper, k x n) of a packed ``LU`` as
    differentiable ops."""
    m, n = LU.shape[-2:]
    k = min(m, n)
    eye = np.eye(m, k, dtype=LU.dtype)
    L = LU[..., :, :k].tril(-1) + _la._const(eye)
    U = LU[..., :k, :].triu()
    return L, U


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):  # noqa: N803
    """torch's ``lu_unpack``: ``(P, L, U)`` from ``lu_factor``'s output (differentiable in
    ``LU_data``); an empty tensor for the part not unpacked."""
    LU = _la._as_tensor(LU_data)
    piv = np.asarray(_la._as_tensor(LU_pivots).numpy())
    empty = _la._const(np.zeros((0,), LU.dtype))
    P = _la._const(_perm_matrix(piv, LU.shape[-2], LU.dtype)) if unpack_pivots else empty
    if not unpack_data:
        return _LUUnpack(P, empty, empty)
    L, U = _unpack_tensors(LU)
    return _LUUnpack(P, L, U)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):  # noqa: ARG001
    """torch's ``linalg.lu_solve``: ``X`` with ``A X = B`` (``left=False``: ``X A = B``;
    ``adjoint``: ``A^H`` for ``A``) from ``lu_factor``'s ``(LU, pivots)``; differentiable in
    ``LU`` and ``B`` (triangular solves reading each triangle of ``LU``)."""
    LU, B = _la._float(_la._as_tensor(LU)), _la._float(_la._as_tensor(B))
    if LU.ndim < 2 or LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError("linalg.lu_solve: Expected LU to be a batch of square matrices, but "
                           f"got a matrix of shape {tuple(LU.shape)}")
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: Expected B to have at least 2 dimensions, but it "
                           f"has {B.ndim} dimensions instead")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({tuple(LU.shape)} and "
                           f"{tuple(B.shape)})")
    P = _la._const(_perm_matrix(np.asarray(_la._as_tensor(pivots).numpy()), n, LU.dtype))
    st = _la.solve_triangular
    if LU.dtype.kind == "c" and adjoint:
        LUh = LU.mH
    else:
        LUh = LU.swapaxes(-1, -2)
    if left and not adjoint:  # X = U^-1 L^-1 P^T B
        y = st(LU, P.swapaxes(-1, -2) @ B, upper=False, unitriangular=True)
        return st(LU, y, upper=True)
    if left:  # A^H X = B: U^H L^H P^T X = B -> X = P L^-H U^-H B
        y = st(LUh, B, upper=False)
        return P @ st(LUh, y, upper=True, unitriangular=True)
    if not adjoint:  # X P L U = B -> X = B U^-1 L^-1 P^T
        y = st(LU, B, upper=True, left=False)
        return st(LU, y, upper=False, left=False, unitriangular=True) @ P.swapaxes(-1, -2)
    # X A^H = B: X U^H L^H P^T = B -> X = B P L^-H U^-H
    y = st(LUh, B @ P, upper=True, left=False, unitriangular=True)
    return st(LUh, y, upper=False, left=False)


def lu_solve_legacy(b, LU_data, LU_pivots, *, out=None):  # noqa: N803, ARG001
    """torch's deprecated top-level ``lu_solve(b, LU_data, LU_pivots)`` (and its warning)."""
    import warnings

    warnings.warn("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be "
                  "removed in a future PyTorch release.\nNote that torch.linalg.lu_solve has "
                  "its arguments reversed.\nX = torch.lu_solve(B, LU, pivots)\nshould be "
                  "replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)", UserWarning,
                  stacklevel=2)
    return lu_solve(LU_data, LU_pivots, b)


def lu_legacy(A, pivot=True, get_infos=False, out=None):  # noqa: ARG001
    """torch's deprecated top-level ``lu(A, pivot=True, get_infos=False)``: ``(LU, pivots)``
    (and ``infos``), as ``linalg.lu_factor_ex``."""
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    return (LU, piv, info) if get_infos else (LU, piv)


def _ldl_check(name, A):
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.{name}: A must be batches of square matrices, but "
                           f"they are {A.shape[-2] if A.ndim >= 2 else A.ndim} by "
                           f"{A.shape[-1] if A.ndim else 0} matrices")


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):  # noqa: ARG001
    """torch's ``linalg.ldl_factor_ex``: LAPACK's Bunch-Kaufman ``sytrf`` (``hetrf`` when
    ``hermitian`` and complex), lower triangle: ``(LD, pivots, info)``; no gradient."""
    A = _la._float(_la._as_tensor(A))
    _ldl_check("ldl_factor_ex", A)
    if is_grad_enabled() and A.requires_grad:
        raise RuntimeError("derivative for aten::linalg_ldl_factor_ex is not implemented")
    a = _host(A.detach().numpy())
    n = a.shape[-1]
    flat = a.reshape((-1, n, n))
    kind = "hetrf" if hermitian and a.dtype.kind == "c" else "sytrf"
    fn = _lapack(kind, a.dtype)
    lds, pivs = np.empty_like(flat), np.empty((flat.shape[0], n), np.int32)
    infos = np.zeros(flat.shape[0], np.int32)
    for i, mat in enumerate(flat):
        ld, piv, info = fn(mat, lower=1)
        lds[i], pivs[i], infos[i] = np.tril(ld), piv, info
    batch = a.shape[:-2]
    info = infos.reshape(batch)
    if check_errors and info.any():
        raise _la.LinAlgError(f"torch.linalg.ldl_factor_ex: The factorization could not be "
                              f"completed because the input is not invertible: D[{int(info.reshape(-1)[np.flatnonzero(info.reshape(-1))[0]]) - 1}] is zero.")  # noqa: E501
    T = type(A)
    return _LDLFactorEx(T._make(lds.reshape(a.shape), False, None, 0),
                        T._make(pivs.reshape(batch + (n,)), False, None, 0),
                        T._make(info, False, None, 0))


def ldl_factor(A, *, hermitian=False, out=None):  # noqa: ARG001
    """torch's ``linalg.ldl_factor``: ``(LD, pivots)`` (see ``ldl_factor_ex``)."""
    LD, piv, _ = ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return _LDLFactor(LD, piv)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):  # noqa: ARG001
    """torch's ``linalg.ldl_solve``: ``X`` with ``A X = B`` from ``ldl_factor``'s
    ``(LD, pivots)`` (LAPACK's ``sytrs``/``hetrs``); no gradient."""
    LD, B = _la._as_tensor(LD), _la._float(_la._as_tensor(B))
    _ldl_check("ldl_solve", LD)
    if B.ndim < 2:
        raise RuntimeError("torch.linalg.ldl_solve: Expected B to have at least 2 dimensions")
    if is_grad_enabled() and (LD.requires_grad or B.requires_grad):
        raise RuntimeError("derivative for aten::linalg_ldl_solve is not implemented")
    ld, b = _host(LD.detach().numpy()), _host(B.detach().numpy())
    piv = np.asarray(_la._as_tensor(pivots).numpy()).astype(np.int32)
    n = ld.shape[-1]
    dtype = np.result_type(ld.dtype, b.dtype)
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    ldf = np.broadcast_to(ld, batch + (n, n)).reshape((-1, n, n)).astype(dtype)
    pf = np.broadcast_to(piv, batch + (n,)).reshape((-1, n))
    bf = np.broadcast_to(b, batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:]).astype(dtype)
    kind = "hetrs" if hermitian and dtype.kind == "c" else "sytrs"
    fn = _lapack(kind, dtype)
    out = np.stack([fn(ldf[i], pf[i], bf[i], lower=1)[0] for i in range(len(bf))]) \
        if len(bf) else bf.copy()
    return type(B)._make(out.reshape(batch + b.shape[-2:]), False, None, 0)


def householder_product(A, tau, *, out=None):  # noqa: ARG001
    """torch's ``linalg.householder_product`` (LAPACK's ``orgqr``): the first n columns of
    ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H``, ``v_i`` column i of ``A`` below the
    diagonal with a 1 on it; differentiable in ``A`` and ``tau``."""
    A, tau = _la._float(_la._as_tensor(A)), _la._float(_la._as_tensor(tau))
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.householder_product: input must have at least 2 "
                           "dimensions.")
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater "
                           "than or equal to input.shape[-1]")
    if k > n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater "
                           "than or equal to tau.shape[-1]")
    V = A[..., :, :k].tril(-1) + _la._const(np.eye(m, k, dtype=A.dtype))
    Q = _la._const(np.broadcast_to(np.eye(m, n, dtype=np.result_type(A.dtype, tau.dtype)),
                                   tuple(A.shape[:-2]) + (m, n)).copy())
    for i in range(k - 1, -1, -1):  # Q = H_i Q, from the last reflector back
        v = V[..., :, i:i + 1]
        vh = v.conj().swapaxes(-1, -2) if v.dtype.kind == "c" else v.swapaxes(-1, -2)
        Q = Q - (tau[..., i:i + 1].unsqueeze(-1) * v) @ (vh @ Q)
    return Q


# torch's top-level names (``torch.lu``, ``torch.lu_solve``, ``torch.lu_unpack``): for
# ``functions.py`` and ``skiff/api.py``'s ``_TORCH_NAMES`` (/work/round39/h4-requests.md)
TOPLEVEL = {"lu": lu_legacy, "lu_solve": lu_solve_legacy, "lu_unpack": lu_unpack}
