"""torch's ``torch.linalg`` on skiff tensors: norms, ``solve``, ``inv``, ``det``, ``slogdet``,
``cholesky``, ``qr``, ``eigh``, ``svd``, ``svdvals`` (public as :mod:`skiff.linalg`).

Each factorization is one autograd node over ``xp.linalg`` (numpy or cupy) on batches
``(..., n, n)``; its backward is the textbook matrix-calculus rule, the one torch uses:
``solve``: ``gB = A^-T g``, ``gA = -gB X^T``; ``inv``: ``-Y^T g Y^T``; ``det``: ``g det A^-T``;
``cholesky``: ``L^-T Phi(L^T gL) L^-1`` symmetrized; ``eigh``: ``V (diag gw + (V^T gV)/E) V^T``;
``svdvals``: ``U diag(g) Vh``. ``qr`` and the full ``svd`` give values only (their inputs
must not need a gradient: use ``svdvals`` or ``.detach()``). The norms are compositions of
differentiable tensor ops. tests/kernels/train/core/test_torch_gaps2_r26.py compares each with
torch in float64, values and gradients.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .autograd import Function, is_grad_enabled, xp_of
from .ops_math import unbroadcast

__all__ = [
    "norm", "vector_norm", "matrix_norm", "solve", "inv", "det", "slogdet", "cholesky", "qr",
    "eigh", "eigvalsh", "svd", "svdvals",
]

_SlogDet = namedtuple("slogdet", ["sign", "logabsdet"])
_EighResult = namedtuple("eigh", ["eigenvalues", "eigenvectors"])
_QR = namedtuple("qr", ["Q", "R"])
_SVD = namedtuple("svd", ["U", "S", "Vh"])


def _mT(a):
    return a.swapaxes(-1, -2)


def _square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"linalg.{name} needs square matrices (..., n, n), got shape "
                         f"{tuple(a.shape)}")


def _float(t):
    return t.astype(np.float32) if t.dtype.kind in "iub" else t


class _Solve(Function):
    def forward(self, a, b, vec=False):
        xp = xp_of(a)
        self.sa, self.sb, self.vec = a.shape, b.shape, vec
        bb = b[..., None] if vec else b
        x = xp.linalg.solve(a, xp.broadcast_to(bb, a.shape[:-2] + bb.shape[-2:])
                            if bb.ndim < a.ndim else bb)
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


class _Inv(Function):
    def forward(self, a):
        y = xp_of(a).linalg.inv(a)
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
    def forward(self, a):
        sign, logdet = xp_of(a).linalg.slogdet(a)
        self.save_for_backward(a)
        self.sign = sign
        return logdet

    def backward(self, g):
        (a,) = self.saved
        return g[..., None, None] * _mT(xp_of(a).linalg.inv(a))


class _Cholesky(Function):
    def forward(self, a):
        xp = xp_of(a)
        try:
            low = xp.linalg.cholesky(a)
        except np.linalg.LinAlgError as e:
            raise ValueError("linalg.cholesky: the input is not positive-definite (torch raises "
                             "too); add a multiple of the identity or use linalg.eigh") from e
        self.save_for_backward(low)
        return low

    def backward(self, g):
        (low,) = self.saved
        xp = xp_of(low)
        phi = xp.tril(_mT(low) @ g)
        idx = xp.arange(phi.shape[-1])
        phi[..., idx, idx] *= 0.5
        # L^-T phi L^-1 by two triangular solves (through solve: numpy has no trsm)
        linv = xp.linalg.inv(low)
        s = _mT(linv) @ phi @ linv
        return 0.5 * (s + _mT(s))


class _Eigh(Function):
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
            vtg = _mT(v) @ gv
            e = w[..., None, :] - w[..., :, None]  # E_ij = w_j - w_i
            n = w.shape[-1]
            idx = xp.arange(n)
            e[..., idx, idx] = 1.0
            inner = vtg / e
            inner[..., idx, idx] = 0.0
        if gw is not None:
            idx = xp.arange(w.shape[-1])
            inner[..., idx, idx] = gw
        ga = v @ inner @ _mT(v)
        return 0.5 * (ga + _mT(ga))


class _Svdvals(Function):
    def forward(self, a):
        u, s, vh = xp_of(a).linalg.svd(a, full_matrices=False)
        self.save_for_backward(u, vh)
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
    if not left:
        raise NotImplementedError("linalg.solve(left=False): solve A.mT X.mT = B.mT instead")
    _square("solve", A)
    vec = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    return _Solve.apply(A, B, vec=vec)


def inv(A):
    A = _float(_as_tensor(A))
    _square("inv", A)
    return _Inv.apply(A)


def det(A):
    A = _float(_as_tensor(A))
    _square("det", A)
    return _Det.apply(A)


def slogdet(A):
    """``(sign, logabsdet)``; the gradient flows through ``logabsdet``."""
    A = _float(_as_tensor(A))
    _square("slogdet", A)
    sign = _const(xp_of(A._data).linalg.slogdet(A._data)[0])
    return _SlogDet(sign, _LogAbsDet.apply(A))


def cholesky(A, *, upper=False):
    A = _float(_as_tensor(A))
    _square("cholesky", A)
    low = _Cholesky.apply(A)
    return low.swapaxes(-1, -2) if upper else low


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
    """``(U, S, Vh)`` (values only; ``svdvals`` has a gradient)."""
    A = _float(_as_tensor(A))
    _values_only("svd", A)
    u, s, vh = xp_of(A._data).linalg.svd(A._data, full_matrices=bool(full_matrices))
    return _SVD(_const(u), _const(s), _const(vh))


def qr(A, mode="reduced"):
    """``(Q, R)`` (values only); ``mode`` ``"reduced"``, ``"complete"`` or ``"r"``."""
    A = _float(_as_tensor(A))
    _values_only("qr", A)
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
        return (x * x).sum(dim, keepdim).sqrt()
    a = x.abs()
    if ord == 1.0:
        return a.sum(dim, keepdim)
    if ord == math.inf:
        return a.amax(dim, keepdim)
    if ord == -math.inf:
        return a.amin(dim, keepdim)
    if ord == 0.0:
        return _const((a._data != 0).astype(x.dtype)).sum(dim, keepdim)
    return (a ** ord).sum(dim, keepdim) ** (1.0 / ord)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False):  # noqa: A002
    """torch's ``linalg.matrix_norm``: ``"fro"``, ``"nuc"``, ``inf``, ``-inf``, 1, -1, 2, -2."""
    A = _float(_as_tensor(A))
    d0, d1 = (d % A.ndim for d in dim)
    if ord == "fro":
        return (A * A).sum((d0, d1), keepdim).sqrt()
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
