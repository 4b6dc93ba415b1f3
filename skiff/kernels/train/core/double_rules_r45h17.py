"""Round 45 (h17): double-backward rules of ``linalg.cholesky``, ``eigh``/``eigvalsh``,
``qr``, ``svdvals``, ``pinv``, ``matrix_exp``, ``index_add`` and ``scatter_reduce`` (each was
refused as ``NoDoubleBackward``; torch differentiates them to any order): the first-order
gradient written again on tensors, real matrices."""

from __future__ import annotations

from . import linalg_r29b as LB
from . import ops_linalg as LA
from . import ops_scatter as OS
from . import tensor_math_more as TM
from .autograd import xp_of
from .double_helpers import input_t, output_t
from .double_rules import rule
from .double_rules_r45 import _real_only
from .double_rules_r46h8 import pad_to, scatter_prod_zeros
from .tensor import Tensor, cat

__all__: list[str] = []


def _t(a):
    return a if isinstance(a, Tensor) else Tensor._make(a, False, None, 0)


@rule(LA._Cholesky)
def _cholesky(self, want, g):
    """``L^-T Phi(L^T g) L^-1`` (torch's), ``L`` the node's output, its inverse a node."""
    (low,) = self.saved
    _real_only(low, "_Cholesky")
    lt = output_t(self, 0, low)
    phi = (lt.mT @ g).tril()
    phi = 0.5 * (phi + phi.tril(-1).mT)
    linv = LA._Inv.apply(lt)
    return (linv.mT @ phi @ linv,)


@rule(LA._Eigh)
def _eigh(self, want, gw, gv):
    """``V (diag(gw) + (V^H gV) / E) V^H`` made Hermitian, ``E_ij = w_j - w_i`` off the
    diagonal; ``w`` and ``V`` the node's outputs (real or complex, round 46)."""
    w, v = self.saved
    w_t, v_t = output_t(self, 0, w), output_t(self, 1, v)
    n = w.shape[-1]
    eye = xp_of(w).eye(n, dtype=w.dtype)
    e = w_t.unsqueeze(-2) - w_t.unsqueeze(-1) + _t(eye)
    inner = (v_t.mH @ gv) / e * _t(1.0 - eye) + gw.unsqueeze(-2) * _t(eye)
    ga = v_t @ inner @ v_t.mH  # mH: complex too (round 46, h8)
    return (0.5 * (ga + ga.mH),)


@rule(LB._MatrixExp)
def _matrix_exp(self, want, g):
    """The upper-right block of ``exp([[A^T, g], [0, A^T]])`` (the Frechet derivative at
    ``A^T``, torch's) as a matrix_exp node, so each order takes this rule again."""
    (a,) = self.saved
    _real_only(a, "_MatrixExp")
    at = _t(input_t(self, 0, a)).mT
    n = a.shape[-1]
    z = _t(xp_of(a).zeros(a.shape, dtype=a.dtype))
    big = cat([cat([at, g], -1), cat([z, at], -1)], -2)
    return (LB._MatrixExp.apply(big)[..., :n, n:],)


@rule(TM._IndexAdd)
def _index_add(self, want, g):
    """``g`` for the input; ``alpha g`` taken at ``index`` along the axis for the source."""
    gs = None
    if want[1]:
        gs = g[(slice(None),) * (self.axis % g.ndim) + (self.index,)] * self.alpha
    return (g if want[0] else None), gs


@rule(OS.ScatterReduceFn)
def _scatter_reduce(self, want, g):
    """``sum``/``mean``/``amax``/``amin``/``replace``: the gradient is ``g`` times constants
    (the first-order rule's at a gradient of ones), ``g`` taken at the scattered places for the
    source, zeros past the index's extent. ``prod``: ``g out / x`` and ``g out / src`` on the
    tensors (no zero factor in a touched group; one is refused by name)."""
    part = self.where[0].shape
    if self.reduce == "prod":
        return _scatter_prod(self, want, g, part)
    mx, full = OS.ScatterReduceFn.backward(self, g.xp.ones(tuple(g.shape), dtype=g.dtype))
    gx = g * _t(mx) if want[0] else None
    gs = None
    if want[1]:
        gs = g[self.where] * _t(full[tuple(slice(0, n) for n in part)])
        for d, (n, m) in enumerate(zip(part, self.shape)):
            if m > n:
                zs = list(gs.shape)
                zs[d] = m - n
                gs = cat([gs, _t(g.xp.zeros(tuple(zs), dtype=g.dtype))], d)
    return gx, gs


@rule(LA._Svdvals)
def _svdvals(self, want, g):
    """``U diag(g) V^T`` written as ``A V diag(g / s) V^T`` (``V`` the eigenvectors of
    ``A^T A``, an eigh node; ``U diag(g / s) U^T A`` from ``A A^T`` for a wide ``A``), so it is
    differentiable again (distinct nonzero singular values, as torch's)."""
    u, vh = self.saved
    _real_only(vh, "_Svdvals")
    s = self.s
    a_t = _t(input_t(self, 0, (u * s[..., None, :]) @ vh))
    c = (g / output_t(self, 0, s)).flip(-1)  # eigh's order is ascending, svd's descending
    if u.shape[-2] >= vh.shape[-1]:
        _, v = LA._Eigh.apply(a_t.mT @ a_t)
        return (a_t @ (v * c.unsqueeze(-2)) @ v.mT,)
    _, v = LA._Eigh.apply(a_t @ a_t.mT)
    return ((v * c.unsqueeze(-2)) @ v.mT @ a_t,)


@rule(LA._Pinv)
def _pinv(self, want, g):
    """torch's ``pinv_backward`` on tensors (``P`` the node's output, real matrices)."""
    a, p = self.saved
    _real_only(a, "_Pinv")
    a_t, p_t = _t(input_t(self, 0, a)), output_t(self, 0, p)
    ph, gh = p_t.mT, g.mT
    if a.shape[-2] <= a.shape[-1]:
        k = gh @ p_t
        kph = k @ ph
        return (-(p_t @ k).mT + kph - (a_t @ p_t) @ kph + (ph @ p_t) @ (gh - k @ a_t),)
    k = p_t @ gh
    phk = ph @ k
    return (-(k @ p_t).mT + (gh - a_t @ k) @ p_t @ ph + phk - phk @ p_t @ a_t,)


@rule(LA._Qr)
def _qr(self, want, gq, gr):
    """``(gQ + Q copyltu(M)) R^-T``, ``M = R gR^T - gQ^T Q`` (the first-order rule), ``Q`` and
    ``R`` the node's outputs, ``R``'s inverse a node."""
    q, r = self.saved
    _real_only(q, "_Qr")
    q_t, r_t = output_t(self, 0, q), output_t(self, 1, r)
    m = r_t @ gr.mT - gq.mT @ q_t
    low = m.tril(-1)
    sym = low + low.mT + m * _t(xp_of(q).eye(m.shape[-1], dtype=q.dtype))
    return ((gq + q_t @ sym) @ LA._Inv.apply(r_t).mT,)


def _scatter_prod(self, want, g, part):
    touched, _, x, src_part, out = self.saved
    zeros, _ = self.prod_extra
    if bool((zeros[touched] > 0).any()):  # torch's formulas on tensors (round 46, h8)
        return scatter_prod_zeros(self, want, g, part)
    xp = g.xp
    out_t = output_t(self, 0, out)
    gx = gs = None
    if want[0]:
        keep = _t((~touched).astype(g.dtype))
        if self.inc:
            x_t = _t(input_t(self, 0, x))
            xs = _t(xp.where(touched, 0, 1).astype(g.dtype))
            gx = g * (keep + _t(touched.astype(g.dtype)) * out_t / (x_t + xs))
        else:
            gx = g * keep
    if want[1]:
        src = xp.ones(self.shape, dtype=g.dtype)
        sl = tuple(slice(0, n) for n in part)
        src[sl] = src_part
        src_t = _t(input_t(self, 1, src))[sl]
        gs = g[self.where] * out_t[self.where] / src_t
        gs = pad_to(gs, part, self.shape, xp, g.dtype)
    return gx, gs
