"""torch's ``torch.linalg`` on skiff tensors: norms, ``solve``, ``inv``, ``det``, ``slogdet``,
``cholesky``, ``qr``, ``eigh``, ``svd``, ``svdvals`` (public as :mod:`skiff.linalg`).

Each factorization is one autograd node over ``xp.linalg`` (numpy or cupy) on batches
``(..., n, n)``; its backward is the textbook matrix-calculus rule, the one torch uses:
``solve``: ``gB = A^-T g``, ``gA = -gB X^T``; ``inv``: ``-Y^T g Y^T``; ``det``: ``g det A^-T``;
``cholesky``: ``L^-T Phi(L^T gL) L^-1`` symmetrized; ``eigh``: ``V (diag gw + (V^T gV)/E) V^T``;
``svdvals``: ``U diag(g) Vh``; the reduced ``svd`` and ``qr``: torch's rules. ``pinv``,
``matrix_rank``, the full ``svd`` and ``qr`` give values only (their inputs must not need a
gradient: ``.detach()``). The norms are compositions of differentiable tensor ops.
tests/kernels/train/core/test_torch_gaps2_r26.py compares each with torch in float64.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .autograd import Function, is_grad_enabled, xp_of
from .ops_math import unbroadcast

__all__ = [
    "norm", "vector_norm", "matrix_norm", "solve", "inv", "det", "slogdet", "cholesky", "qr",
    "eigh", "eigvalsh", "svd", "svdvals", "multi_dot", "matrix_power", "vecdot", "cross",
    "matrix_rank", "pinv", "inverse", "logdet", "solve_triangular",
    "diagonal", "cdist", "lstsq", "eig", "eigvals",
]

_SlogDet = namedtuple("slogdet", ["sign", "logabsdet"])
_EighResult = namedtuple("eigh", ["eigenvalues", "eigenvectors"])
_QR = namedtuple("qr", ["Q", "R"])
_SVD = namedtuple("svd", ["U", "S", "Vh"])
_Lstsq = namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])


def _mT(a):
    return a.swapaxes(-1, -2)


def _mH(a):
    """The conjugate transpose (the transpose of a real array)."""
    t = a.swapaxes(-1, -2)
    return t.conj() if t.dtype.kind == "c" else t


def _sq(x):
    """``|x|^2`` of a tensor, real for a complex one (its gradient ``2 g x``: torch's)."""
    if x.dtype.kind == "c":
        return x.real * x.real + x.imag * x.imag
    return x * x


def _square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"linalg.{name} needs square matrices (..., n, n), got shape "
                         f"{tuple(a.shape)}")


def _float(t):
    return t.astype(np.float32) if t.dtype.kind in "iub" else t


class LinAlgError(RuntimeError, np.linalg.LinAlgError):
    """torch's ``torch.linalg.LinAlgError`` (a RuntimeError, caught by GP code to add jitter
    and retry); also numpy's (a ValueError), which skiff raised before round 38."""


def _lapack_info(a, routine):
    """The first nonzero LAPACK ``info`` over a batch (potrf: the leading minor that is not
    positive-definite; getrf: the zero diagonal element of U), for torch's messages."""
    from scipy.linalg import lapack

    flat = np.asarray(a).reshape((-1,) + a.shape[-2:])
    fn = getattr(lapack, ("z" if flat.dtype.kind == "c" else "d") + routine)
    for m in flat:
        out = fn(m, lower=1) if routine == "potrf" else fn(m)
        if out[-1]:
            return int(out[-1])
    return 0


class _Solve(Function):
    def forward(self, a, b, vec=False):
        xp = xp_of(a)
        self.sa, self.sb, self.vec = a.shape, b.shape, vec
        bb = b[..., None] if vec else b
        batch = np.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
        a = xp.broadcast_to(a, batch + a.shape[-2:])
        try:
            x = xp.linalg.solve(a, xp.broadcast_to(bb, batch + bb.shape[-2:]))
        except np.linalg.LinAlgError as e:
            raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix "
                              "is singular.") from e
        self.save_for_backward(a, x)
        return x[..., 0] if vec else x

    def backward(self, g):
        a, x = self.saved
        xp = xp_of(a)
        gg = g[..., None] if self.vec else g
        gb = xp.linalg.solve(_mT(a), gg)
        ga = -gb @ _mT(x) if self.needs_input_grad[0] else None
        gb_out = gb[..., 0] if self.vec else gb
        return (unbroadcast(ga, self.sa) if ga is not None else None,
                unbroadcast(gb_out, self.sb) if self.needs_input_grad[1] else None)


class _SolveTriangular(Function):
    """``X = A^-1 B`` reading only ``A``'s triangle; ``gA`` lives on that triangle too."""

    def forward(self, a, b, upper=False, unit=False):
        xp = xp_of(a)
        self.sa, self.sb, self.upper, self.unit = a.shape, b.shape, upper, unit
        t = xp.triu(a) if upper else xp.tril(a)
        if unit:
            idx = xp.arange(t.shape[-1])
            t[..., idx, idx] = 1.0
        batch = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
        t = xp.broadcast_to(t, batch + t.shape[-2:])
        x = xp.linalg.solve(t, xp.broadcast_to(b, batch + b.shape[-2:]))
        self.save_for_backward(t, x)
        return x

    def backward(self, g):
        t, x = self.saved
        xp = xp_of(t)
        gb = xp.linalg.solve(_mT(t), g)
        ga = None
        if self.needs_input_grad[0]:
            ga = -gb @ _mT(x)
            ga = xp.triu(ga, 1 if self.unit else 0) if self.upper else \
                xp.tril(ga, -1 if self.unit else 0)
            ga = unbroadcast(ga, self.sa)
        return ga, unbroadcast(gb, self.sb) if self.needs_input_grad[1] else None


class _Diagonal(Function):
    def forward(self, a, offset=0, dim1=0, dim2=1):
        self.shape, self.args = a.shape, (offset, dim1, dim2)
        return xp_of(a).diagonal(a, offset, dim1, dim2).copy()

    def backward(self, g):
        xp = xp_of(g)
        out = xp.zeros(self.shape, dtype=g.dtype)
        view = xp.diagonal(out, *self.args)  # read-only in numpy: write through its indices
        n = view.shape[-1]
        offset, d1, d2 = self.args
        d1, d2 = d1 % len(self.shape), d2 % len(self.shape)
        i = xp.arange(n)
        idx = [slice(None)] * len(self.shape)
        idx[d1], idx[d2] = i + max(-offset, 0), i + max(offset, 0)
        # the advanced indices (d1, d2) go first when they are not adjacent, else in place
        moved = xp.moveaxis(g, -1, 0) if abs(d1 - d2) != 1 else xp.moveaxis(g, -1, min(d1, d2))
        out[tuple(idx)] = moved
        return out


class _Svd(Function):
    """The reduced SVD with torch's backward (distinct singular values): the skew parts of
    ``U^H gU`` and ``V^H gV`` over ``E_ij = s_j^2 - s_i^2``, ``gS`` on the diagonal (complex:
    plus ``i Im(U^H gU)_ii / s_i``), plus the parts of ``gU`` (``gV``) outside ``U``'s
    (``V``'s) span."""

    complex_aware = True

    def forward(self, a, full=False):
        u, s, vh = xp_of(a).linalg.svd(a, full_matrices=full)
        k = s.shape[-1]
        self.full = full
        self.uv_full = (u, vh) if full else None  # the outputs, for the double backward
        self.save_for_backward(u[..., :k], s, vh[..., :k, :])
        return u, s, vh

    def backward(self, gu, gs, gvh):
        u, s, vh = self.saved
        xp = xp_of(s)
        m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
        if self.full:  # torch's: the columns past min(m, n) do not enter the gradient
            gu = gu[..., :k] if gu is not None else None
            gvh = gvh[..., :k, :] if gvh is not None else None
        if gu is None and gvh is None:
            return (u * gs[..., None, :]) @ vh
        v = _mH(vh)
        gv = _mH(gvh) if gvh is not None else None
        idx = xp.arange(k)
        s2 = s * s
        e = s2[..., None, :] - s2[..., :, None]
        e[..., idx, idx] = 1.0
        inner = xp.zeros(s.shape + (k,), dtype=u.dtype)
        uhgu = None
        if gu is not None:
            uhgu = _mH(u) @ gu
            inner = inner + (uhgu - _mH(uhgu)) * s[..., None, :]
        if gv is not None:
            vhgv = _mH(v) @ gv
            inner = inner + s[..., :, None] * (vhgv - _mH(vhgv))
        inner = inner / e
        diag = xp.zeros(s.shape, dtype=u.dtype) if gs is None else gs.astype(u.dtype)
        if uhgu is not None and u.dtype.kind == "c":
            diag = diag + 1j * uhgu.imag[..., idx, idx] / s
        inner[..., idx, idx] = diag
        if m > k and gu is not None:
            ga = u @ inner
            gus = gu / s[..., None, :]
            ga = (ga + gus - u @ (_mH(u) @ gus)) @ vh
        elif n > k and gv is not None:
            ga = inner @ vh
            sgvh = _mH(gv) / s[..., :, None]
            ga = u @ (ga + sgvh - (sgvh @ v) @ vh)
        else:
            ga = u @ inner @ vh
        return ga


class _Qr(Function):
    """The reduced QR of a tall or square matrix, with its backward
    ``(gQ + Q copyltu(M)) R^-T``, ``M = R gR^T - gQ^T Q`` (copyltu: the lower triangle
    mirrored up; complex: ``M = R gR^H - gQ^H Q``, the mirror conjugated, the real part of
    the diagonal)."""

    complex_aware = True

    def forward(self, a):
        q, r = xp_of(a).linalg.qr(a, mode="reduced")
        self.save_for_backward(q, r)
        return q, r

    def backward(self, gq, gr):
        q, r = self.saved
        xp = xp_of(q)
        gq = xp.zeros_like(q) if gq is None else gq
        gr = xp.zeros_like(r) if gr is None else gr
        m = r @ _mH(gr) - _mH(gq) @ q
        low = xp.tril(m, -1)
        idx = xp.arange(m.shape[-1])
        sym = low + _mH(low)
        sym[..., idx, idx] = m[..., idx, idx].real
        b = gq + q @ sym
        # b R^-H = (R^-1 b^H)^H
        return _mH(xp.linalg.solve(r, _mH(b)))


class _Inv(Function):
    def forward(self, a):
        try:
            y = xp_of(a).linalg.inv(a)
        except np.linalg.LinAlgError as e:
            raise LinAlgError(f"linalg.inv: The diagonal element {_lapack_info(a, 'getrf')} is "
                              "zero, the inversion could not be completed because the input "
                              "matrix is singular.") from e
        self.save_for_backward(y)
        return y

    def backward(self, g):
        (y,) = self.saved
        return -_mT(y) @ g @ _mT(y)


class _Det(Function):
    def forward(self, a):
        d = xp_of(a).linalg.det(a)
        self.save_for_backward(a, d)
        return d

    def backward(self, g):
        a, d = self.saved
        return (g * d)[..., None, None] * _mT(xp_of(a).linalg.inv(a))


class _LogAbsDet(Function):
    complex_aware = True  # g A^-H (torch's), A complex or real

    def forward(self, a):
        sign, logdet = xp_of(a).linalg.slogdet(a)
        self.save_for_backward(a)
        self.sign = sign
        return logdet

    def backward(self, g):
        (a,) = self.saved
        return g[..., None, None] * _mH(xp_of(a).linalg.inv(a))


class _Cholesky(Function):
    complex_aware = True  # L^-H Phi(L^H gL) L^-1 (torch's), real or complex

    def forward(self, a):
        xp = xp_of(a)
        try:
            low = xp.linalg.cholesky(a)
        except np.linalg.LinAlgError as e:
            raise LinAlgError(
                "linalg.cholesky: The factorization could not be completed because the input is "
                f"not positive-definite (the leading minor of order {_lapack_info(a, 'potrf')} "
                "is not positive-definite).") from e
        self.save_for_backward(low)
        return low

    def backward(self, g):
        (low,) = self.saved
        xp = xp_of(low)
        phi = xp.tril(_mH(low) @ g)
        phi = 0.5 * (phi + _mH(xp.tril(phi, -1)))  # torch's; Hermitian but for an imaginary
        # diagonal (complex input: torch's gradient is not made Hermitian)
        # L^-H phi L^-1 by two triangular solves (through solve: numpy has no trsm)
        linv = xp.linalg.inv(low)
        return _mH(linv) @ phi @ linv


class _Eigh(Function):
    complex_aware = True  # V (diag gw + (V^H gV)/E) V^H made Hermitian, real or complex

    def forward(self, a, upper=False):
        xp = xp_of(a)
        w, v = xp.linalg.eigh(a, UPLO="U" if upper else "L")
        self.save_for_backward(w, v)
        return w, v

    def backward(self, gw, gv):
        w, v = self.saved
        xp = xp_of(w)
        inner = xp.zeros(v.shape, dtype=v.dtype)
        if gv is not None:
            vtg = _mH(v) @ gv
            e = w[..., None, :] - w[..., :, None]  # E_ij = w_j - w_i
            n = w.shape[-1]
            idx = xp.arange(n)
            e[..., idx, idx] = 1.0
            inner = vtg / e
            inner[..., idx, idx] = 0.0
        if gw is not None:
            idx = xp.arange(w.shape[-1])
            inner[..., idx, idx] = gw
        ga = v @ inner @ _mH(v)
        return 0.5 * (ga + _mH(ga))


class _Svdvals(Function):
    complex_aware = True  # U diag(g) Vh, real or complex

    def forward(self, a):
        u, s, vh = xp_of(a).linalg.svd(a, full_matrices=False)
        self.save_for_backward(u, vh)
        self.s = s  # (for the double-backward rule: double_rules_r45h17)
        return s

    def backward(self, g):
        u, vh = self.saved
        return (u * g[..., None, :]) @ vh


def _T():
    from .tensor import Tensor, tensor
    return Tensor, tensor


def _as_tensor(x):
    Tensor, tensor = _T()
    return x if isinstance(x, Tensor) else tensor(np.asarray(x))


def _const(arr):
    """A tensor of ``arr`` as it is (dtype kept), outside the graph."""
    return _T()[0]._make(arr, False, None, 0)


def _values_only(name, a):
    if is_grad_enabled() and a.requires_grad:
        raise NotImplementedError(
            f"linalg.{name} has no gradient in skiff yet: call it on a.detach() for the values "
            "(linalg.svdvals, eigh, cholesky, solve, inv, det are differentiable)")


# ---- public functions --------------------------------------------------------------------------

def solve(A, B, *, left=True):
    """``X`` with ``A @ X = B`` (``B`` of shape ``(..., n)`` or ``(..., n, k)``)."""
    A, B = _float(_as_tensor(A)), _float(_as_tensor(B))
    _square("solve", A)
    if not left:  # X A = B  <=>  A^T X^T = B^T (torch's left=False)
        if B.ndim < 2:
            raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is "
                               "not supported for left=False. In this case linalg.solve is "
                               "equivalent to B / A.squeeze(-1)")
        return _Solve.apply(A.swapaxes(-1, -2), B.swapaxes(-1, -2)).swapaxes(-1, -2)
    vec = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    return _Solve.apply(A, B, vec=vec)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """torch's ``linalg.solve_triangular``: ``X`` with ``A @ X = B`` (``left=False``:
    ``X @ A = B``) from ``A``'s upper or lower triangle alone (``B`` is ``(..., n, k)``)."""
    A, B = _float(_as_tensor(A)), _float(_as_tensor(B))
    _square("solve_triangular", A)
    if B.ndim < 2:
        raise ValueError(f"linalg.solve_triangular needs B of shape (..., n, k), got "
                         f"{tuple(B.shape)} (use B[:, None] for a vector)")
    if not left:  # X A = B  <=>  A^T X^T = B^T, A^T's triangle is the other one
        out = _SolveTriangular.apply(A.swapaxes(-1, -2), B.swapaxes(-1, -2),
                                     upper=not upper, unit=bool(unitriangular))
        return out.swapaxes(-1, -2)
    return _SolveTriangular.apply(A, B, upper=bool(upper), unit=bool(unitriangular))


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """torch's ``linalg.diagonal`` (``Tensor.diagonal`` takes dims 0, 1 by default)."""
    A = _as_tensor(A)
    if A.ndim < 2:
        raise ValueError(f"diagonal needs at least 2 dims, got shape {tuple(A.shape)}")
    return _Diagonal.apply(A, offset=int(offset), dim1=int(dim1), dim2=int(dim2))


def _tensor_diagonal(self, offset=0, dim1=0, dim2=1):
    return diagonal(self, offset=offset, dim1=dim1, dim2=dim2)


def inv(A):
    A = _float(_as_tensor(A))
    _square("inv", A)
    return _Inv.apply(A)


def det(A):
    A = _float(_as_tensor(A))
    _square("det", A)
    return _Det.apply(A)


class _SlogDetComplex(Function):
    """``(sign, logabsdet)`` of complex matrices, both differentiable (torch's): with
    ``t = tr(A^-1 dA)``, ``d logabsdet = Re t`` and ``d sign = i Im(t) sign``, so the gradient
    is ``(g_l + i Im(g_s conj(sign))) A^-H``."""

    complex_aware = True

    def forward(self, a):
        sign, logdet = xp_of(a).linalg.slogdet(a)
        self.save_for_backward(a, sign)
        return sign, logdet

    def backward(self, gs, gl):
        a, sign = self.saved
        xp = xp_of(a)
        w = xp.zeros(sign.shape, dtype=a.dtype) if gl is None else gl.astype(a.dtype)
        if gs is not None:
            w = w + 1j * (gs * sign.conj()).imag
        return w[..., None, None] * _mH(xp.linalg.inv(a))


def slogdet(A):
    """``(sign, logabsdet)``; the gradient flows through ``logabsdet`` (and, for a complex
    matrix, through ``sign`` too, as torch's)."""
    A = _float(_as_tensor(A))
    _square("slogdet", A)
    if A.dtype.kind == "c":
        return _SlogDet(*_SlogDetComplex.apply(A))
    sign = _const(xp_of(A._data).linalg.slogdet(A._data)[0])
    return _SlogDet(sign, _LogAbsDet.apply(A))


def cholesky(A, *, upper=False):
    A = _float(_as_tensor(A))
    _square("cholesky", A)
    low = _Cholesky.apply(A)
    if not upper:
        return low
    return low.mH if low.dtype.kind == "c" else low.swapaxes(-1, -2)


def eigh(A, UPLO="L"):  # noqa: N803 - torch's name
    """Eigenvalues ascending and eigenvectors (columns) of a symmetric matrix."""
    A = _float(_as_tensor(A))
    _square("eigh", A)
    if UPLO not in ("L", "U"):
        raise ValueError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    w, v = _Eigh.apply(A, upper=UPLO == "U")
    return _EighResult(w, v)


def eigvalsh(A, UPLO="L"):  # noqa: N803
    return eigh(A, UPLO).eigenvalues


def svdvals(A):
    A = _float(_as_tensor(A))
    if A.ndim < 2:
        raise ValueError(f"linalg.svdvals needs matrices (..., m, n), got shape {A.shape}")
    return _Svdvals.apply(A)


def svd(A, full_matrices=True):
    """``(U, S, Vh)``, differentiable (torch's rule; with ``full_matrices=True`` the columns
    of ``U`` and rows of ``Vh`` past ``min(m, n)`` do not enter the gradient, as torch's)."""
    A = _float(_as_tensor(A))
    return _SVD(*_Svd.apply(A, full=bool(full_matrices)))


_EigResult = namedtuple("eig", ["eigenvalues", "eigenvectors"])


class _Eig(Function):
    """torch's ``linalg.eig`` (complex eigenvalues and unit eigenvectors of a general square
    matrix) with torch's backward: ``V^-H (diag gL + P(V^H gV) / conj(E)) V^H``, ``P``
    removing the part along each unit column's norm, ``E_ij = L_j - L_i``; a real input
    keeps the real part."""

    complex_aware = True

    def forward(self, a):
        xp = xp_of(a)
        ct = np.complex64 if a.dtype in (np.float32, np.complex64) else np.complex128
        w, v = xp.linalg.eig(a)
        w, v = w.astype(ct), v.astype(ct)
        self.real_in = a.dtype.kind != "c"
        self.save_for_backward(w, v)
        return w, v

    def backward(self, gw, gv):
        w, v = self.saved
        xp = xp_of(w)
        n = w.shape[-1]
        idx = xp.arange(n)
        vh = _mH(v)
        inner = xp.zeros(v.shape, dtype=v.dtype)
        if gv is not None:
            vhgv = vh @ gv
            vhgv = vhgv - vh @ (v * vhgv[..., idx, idx].real[..., None, :])
            e = (w[..., None, :] - w[..., :, None]).conj()
            e[..., idx, idx] = 1.0
            inner = vhgv / e
            inner[..., idx, idx] = 0.0
        if gw is not None:
            inner[..., idx, idx] = gw
        ga = xp.linalg.solve(vh, inner @ vh)
        return ga.real if self.real_in else ga


def eig(A):
    """torch's ``linalg.eig``: ``(eigenvalues, eigenvectors)``, complex, differentiable."""
    A = _float(_as_tensor(A))
    _square("eig", A)
    return _EigResult(*_Eig.apply(A))


def eigvals(A):
    """torch's ``linalg.eigvals``: the complex eigenvalues, differentiable."""
    return eig(A).eigenvalues


def qr(A, mode="reduced"):
    """``(Q, R)``; ``mode`` ``"reduced"`` (differentiable for a tall or square matrix),
    ``"complete"`` or ``"r"`` (values only)."""
    A = _float(_as_tensor(A))
    if mode == "reduced" and A.shape[-2] >= A.shape[-1]:
        return _QR(*_Qr.apply(A))
    _values_only("qr (mode='complete', 'r' or a wide matrix)", A)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    xp = xp_of(A._data)
    if mode == "r":
        r = xp.linalg.qr(A._data, mode="r")
        return _QR(_const(xp.zeros((0,), dtype=A.dtype)), _const(r))
    q, r = xp.linalg.qr(A._data, mode=mode)
    return _QR(_const(q), _const(r))


def _dims(dim):
    return tuple(dim) if isinstance(dim, (tuple, list)) else dim


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """torch's ``linalg.vector_norm``: ``ord`` any number, ``inf``, ``-inf`` or 0."""
    x = _float(_as_tensor(x))
    if dtype is not None:
        x = x.astype(dtype)
    dim = _dims(dim)
    ord = float(ord)  # noqa: A001
    if ord == 2.0:
        return _root(_sq(x).sum(dim, keepdim), 2.0)
    a = x.abs()
    if ord == 1.0:
        return a.sum(dim, keepdim)
    if ord == math.inf:
        return a.amax(dim, keepdim)
    if ord == -math.inf:
        return a.amin(dim, keepdim)
    if ord == 0.0:  # a count; requires grad with a zero gradient where x does (torch's)
        count = _const((a._data != 0).astype(a.dtype)).sum(dim, keepdim)
        return count + (a * 0).sum(dim, keepdim) if a.requires_grad else count
    if ord < 1.0:  # |x|^p has an infinite slope at 0: torch's gradient is 0 there
        from .tensor import where

        zero = a._data == 0
        safe = where(zero, 1.0, a) ** ord
        powered = where(zero, np.inf if ord < 0 else 0.0, safe) if zero.any() else a ** ord
        if ord < 0:
            return powered.sum(dim, keepdim) ** (1.0 / ord)
        return _root(powered.sum(dim, keepdim), ord)
    return _root((a ** ord).sum(dim, keepdim), ord)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False):  # noqa: A002
    """torch's ``linalg.matrix_norm``: ``"fro"``, ``"nuc"``, ``inf``, ``-inf``, 1, -1, 2, -2."""
    A = _float(_as_tensor(A))
    d0, d1 = (d % A.ndim for d in dim)
    if ord == "fro":
        return _root(_sq(A).sum((d0, d1), keepdim), 2.0)
    if ord in ("nuc", 2, -2):
        B = A.moveaxis((d0, d1), (-2, -1)) if (d0, d1) != (A.ndim - 2, A.ndim - 1) else A
        s = svdvals(B)
        out = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        if keepdim:
            out = out.reshape(out.shape + (1, 1)).moveaxis((-2, -1), (d0, d1))
        return out
    if ord in (1, -1, math.inf, -math.inf):
        summed, other = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(summed, True)
        red = s.amax if ord > 0 else s.amin
        out = red(other, True)
        if not keepdim:
            out = out.squeeze((d0, d1) if hasattr(out, "squeeze") else None)
        return out
    raise ValueError(f"linalg.matrix_norm: ord must be 'fro', 'nuc', +-1, +-2 or +-inf, "
                     f"got {ord!r}")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """torch's ``linalg.norm``: a vector norm for 1-D input or an int ``dim``, a matrix norm
    for 2-D input or a pair ``dim``; ``ord=None``: the 2-norm of everything."""
    A = _float(_as_tensor(A))
    if dtype is not None:
        A = A.astype(dtype)
    if ord is None:
        if dim is None:
            return vector_norm(A.reshape(-1) if not keepdim else A, 2, None, keepdim)
        return vector_norm(A, 2, dim, keepdim) if isinstance(dim, int) or len(dim) == 1 \
            else matrix_norm(A, "fro", dim, keepdim)
    if dim is None:
        if A.ndim == 1:
            return vector_norm(A, ord, None, keepdim)
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim)
        raise ValueError("linalg.norm with ord needs 1-D or 2-D input or dim=")
    if isinstance(dim, int) or len(dim) == 1:
        return vector_norm(A, ord, dim, keepdim)
    return matrix_norm(A, ord, dim, keepdim)


# ---- compositions of the above and of tensor ops -------------------------------------------------

def inverse(A):
    """torch's top-level ``inverse`` (``linalg.inv``)."""
    return inv(A)


def logdet(A):
    """torch's ``logdet``: ``log(det A)`` (nan for a negative determinant, as torch's)."""
    sign, logabs = slogdet(A)
    if sign.dtype.kind == "c":  # log det = log|det| + log(sign), both differentiable
        return logabs + sign.log()
    with np.errstate(invalid="ignore", divide="ignore"):  # log(-1): nan, log(0): -inf
        return logabs + _const(xp_of(sign._data).log(sign._data))


def multi_dot(tensors):
    """``A @ B @ C ...`` (a 1-D first or last operand is a row or column, as torch's)."""
    ts = [_float(_as_tensor(t)) for t in tensors]
    if len(ts) < 2:
        raise ValueError("linalg.multi_dot needs at least 2 tensors")
    first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_vec:
        ts[0] = ts[0].reshape(1, -1)
    if last_vec:
        ts[-1] = ts[-1].reshape(-1, 1)
    out = ts[0]
    for t in ts[1:]:
        out = out @ t
    if first_vec:
        out = out.squeeze(0)
    if last_vec:
        out = out.squeeze(-1)
    return out


def matrix_power(A, n):
    """``A`` to the integer power ``n`` (repeated squaring; negative through ``inv``)."""
    A = _float(_as_tensor(A))
    _square("matrix_power", A)
    n = int(n)
    if n < 0:
        A, n = inv(A), -n
    if n == 0:
        eye = xp_of(A._data).broadcast_to(xp_of(A._data).eye(A.shape[-1], dtype=A.dtype),
                                           A.shape)
        return _const(eye.copy())
    out, base = None, A
    while n:
        if n & 1:
            out = base if out is None else out @ base
        n >>= 1
        if n:
            base = base @ base
    return out


def vecdot(x, y, *, dim=-1):
    from . import autocast_ops as _ac
    x, y = _as_tensor(x), _as_tensor(y)
    if _ac.LOW is not None and x.dtype.itemsize == 4 and y.dtype.itemsize == 4:
        # torch's CPU autocast: the operands rounded to the 16-bit dtype, the products
        # summed in float32, the result rounded (bf16 sums would lose ~8 bits)
        lo = _ac.low(x, y)
        f32 = x.dtype
        return (lo[0].to(dtype=f32) * lo[1].to(dtype=f32)).sum(dim).to(dtype=_ac.LOW)
    return (x * y).sum(dim)


def cross(x, y, *, dim=-1):
    """The cross product of 3-vectors along ``dim``."""
    x, y = _as_tensor(x), _as_tensor(y)
    if x.shape[dim] != 3 or y.shape[dim] != 3:
        raise ValueError(f"linalg.cross needs size 3 along dim {dim}, got {tuple(x.shape)} "
                         f"and {tuple(y.shape)}")
    d = dim % x.ndim

    def c(t, i):
        return t[(slice(None),) * d + (slice(i, i + 1),)]

    from .tensor import cat
    return cat([c(x, 1) * c(y, 2) - c(x, 2) * c(y, 1), c(x, 2) * c(y, 0) - c(x, 0) * c(y, 2),
                c(x, 0) * c(y, 1) - c(x, 1) * c(y, 0)], axis=d)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """The number of singular values above ``max(atol, rtol * s_max)`` (torch's default
    ``rtol``: ``eps * max(m, n)``); int64, no gradient."""
    A = _float(_as_tensor(A))
    xp = xp_of(A._data)
    s = xp.linalg.svd(A._data, compute_uv=False)
    if rtol is None:
        rtol = 0.0 if atol not in (None, 0) else np.finfo(A.dtype).eps * max(A.shape[-2:])
    tol = xp.maximum(atol or 0.0, rtol * s.max(axis=-1, initial=0.0))
    return _const((s > tol[..., None]).sum(-1).astype(np.int64))


class _Pinv(Function):
    """The pseudo-inverse from the SVD (singular values at or below the tolerance dropped);
    the gradient is torch's ``pinv_backward`` (exact where the rank does not change)."""

    complex_aware = True  # the formula is torch's for complex inputs too

    def forward(self, a, atol=None, rtol=None):
        xp = xp_of(a)
        if rtol is None:
            rtol = 0.0 if atol not in (None, 0) else np.finfo(a.dtype).eps * max(a.shape[-2:])
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
        tol = xp.maximum(atol or 0.0, rtol * s.max(axis=-1, initial=0.0))[..., None]
        sinv = xp.where(s > tol, 1.0 / xp.where(s > tol, s, 1.0), 0.0).astype(a.dtype)
        p = _mT(vh).conj() @ (sinv[..., :, None] * _mT(u).conj())
        self.save_for_backward(a, p)
        return p

    def backward(self, g):
        a, p = self.saved
        ph, gh = _mT(p).conj(), _mT(g).conj()
        if a.shape[-2] <= a.shape[-1]:
            k = gh @ p
            kph = k @ ph
            return -_mT(p @ k).conj() + kph - (a @ p) @ kph + (ph @ p) @ (gh - k @ a)
        k = p @ gh
        phk = ph @ k
        return -_mT(k @ p).conj() + (gh - a @ k) @ p @ ph + phk - phk @ p @ a


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse, differentiable (torch's gradient, for a rank that
    does not change under the perturbation)."""
    A = _float(_as_tensor(A))
    return _Pinv.apply(A, atol=atol, rtol=rtol)


class _CountNonzero(Function):
    """The count of nonzeros along the last axis (``cdist``'s p = 0), gradient 0."""

    def forward(self, d):
        self.shape = d.shape
        return (d != 0).sum(-1).astype(d.dtype)

    def backward(self, g):
        return xp_of(g).zeros(self.shape, dtype=g.dtype)


class _InfDist(Function):
    """The largest absolute value along the last axis (``cdist``'s p = inf), torch's gradient:
    every element at the largest gets the whole ``g`` times its sign (round 45 h7: ``amax``
    shares ``g`` among ties, so two tied coordinates got half each; torch's full)."""

    def forward(self, d):
        xp = xp_of(d)
        a = xp.abs(d)
        out = a.max(-1) if d.shape[-1] else xp.zeros(d.shape[:-1], dtype=d.dtype)
        self.save = (d, a, out)
        return out

    def backward(self, g):
        d, a, out = self.save
        xp = xp_of(d)
        return (g[..., None] * xp.sign(d) * (a == out[..., None])).astype(d.dtype, copy=False)


def cdist(x1, x2, p=2.0, compute_mode=None):
    """torch's ``cdist``: ``(..., P, M)`` and ``(..., R, M)`` -> ``(..., P, R)`` p-norm
    distances; the gradient at a zero distance is 0, as torch's (a plain ``norm`` of the
    difference would give nan there)."""
    x1, x2 = _float(_as_tensor(x1)), _float(_as_tensor(x2))
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ValueError(f"cdist needs (..., P, M) and (..., R, M) with the same M, got "
                         f"{tuple(x1.shape)} and {tuple(x2.shape)}")
    p = float(p)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == math.inf:
        return _InfDist.apply(diff)
    if p == 0.0:  # round 44 (h12): in the graph with a zero gradient, as torch's (was a
        # constant: ``cdist(a, b, 0).sum().backward()`` raised)
        return _CountNonzero.apply(diff)
    if p == 1.0:
        return diff.abs().sum(-1)
    return _root((diff * diff).sum(-1) if p == 2.0 else (diff.abs() ** p).sum(-1), p)


def _root(s, p):
    """``s ** (1/p)`` with a zero gradient where ``s`` is 0 (torch's norms give 0 there; the
    plain root gives nan)."""
    from .tensor import where
    if getattr(s, "_batched", False):  # inside a batched vmap call (vmap_r30): always mask
        zero = s == 0
        safe = where(zero, 1.0, s)
        return where(zero, 0.0, safe.sqrt() if p == 2.0 else safe ** (1.0 / p))
    xp = xp_of(s._data)
    zero = s._data == 0  # (a nan stays nan: a norm or std of nan is nan, as torch's)
    if xp is np and not bool(zero.any()):  # on a GPU the test is a host read: always mask
        return s.sqrt() if p == 2.0 else s ** (1.0 / p)
    safe = where(zero, xp.ones((), dtype=s.dtype), s)
    root = safe.sqrt() if p == 2.0 else safe ** (1.0 / p)
    return where(zero, xp.zeros((), dtype=s.dtype), root)


def lstsq(A, B, rcond=None, *, driver=None):
    """torch's ``linalg.lstsq`` for full-rank ``A``: the least-squares solution (tall ``A``)
    or the minimum-norm one (wide ``A``), differentiable, through the normal equations'
    Cholesky factor; ``residuals`` and ``singular_values`` are empty and ``rank`` is given, as
    torch's default CPU driver (gelsy) returns them. A rank-deficient ``A`` is refused (use
    ``linalg.pinv(A) @ B`` for its values)."""
    drv = "gelsy" if driver is None else driver
    if drv not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           "gelsy, gelsd, gelss)")
    A, B = _float(_as_tensor(A)), _float(_as_tensor(B))
    if A.ndim < 2 or B.ndim < 1:
        raise ValueError(f"linalg.lstsq needs A (..., m, n) and B (..., m, k), got "
                         f"{tuple(A.shape)} and {tuple(B.shape)}")
    vec = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vec else B
    m, n = A.shape[-2:]
    rank = matrix_rank(A.detach())
    if bool((rank._data < min(m, n)).any()):
        raise ValueError("linalg.lstsq: A is rank-deficient; skiff solves the full-rank case "
                         "only (use linalg.pinv(A) @ B for the minimum-norm values)")
    cx = A.dtype.kind == "c" or B.dtype.kind == "c"
    At = A.mH if cx else A.swapaxes(-1, -2)
    if m >= n:
        C = cholesky(At @ A)
        y = solve_triangular(C, At @ Bm, upper=False)
        X = solve_triangular(C.mH if cx else C.swapaxes(-1, -2), y, upper=True)
    else:
        C = cholesky(A @ At)
        y = solve_triangular(C, Bm, upper=False)
        X = At @ solve_triangular(C.mH if cx else C.swapaxes(-1, -2), y, upper=True)
    # round 44 (h12): what each of torch's drivers returns (all four gave gelsy's): the
    # squared residuals (gels, gelsd, gelss; tall A), singular values (gelsd, gelss), the
    # rank (not gels: empty)
    xp = xp_of(A._data)
    real = xp.zeros((), dtype=A.dtype).real.dtype
    empty = _const(xp.zeros((0,), dtype=real))
    res = sv = empty
    if drv != "gelsy" and m > n:
        r = A @ X - Bm
        res = ((r.abs() ** 2) if cx else r * r).sum(-2)  # (..., k): k = 1 for a vector B
    if drv in ("gelsd", "gelss"):
        sv = svdvals(A.detach())
    if drv == "gels":
        rank = _const(xp.zeros((0,), dtype=np.int64))
    if vec:
        X = X.squeeze(-1)
    return _Lstsq(X, res, rank, sv)
