"""Round 46 (h8): double-backward rules of complex ``slogdet``, ``linalg.eig`` (values
and vectors), ``linalg.svd``'s ``U``/``S``/``Vh``, ``angle``, ``index_put`` (with or without
``accumulate``), the rotary embedding (``RotaryFn``) and ``scatter_reduce(reduce='prod')``
where a group holds a zero factor: each first-order gradient written again on tensors, so a
gradient of a gradient through them matches torch's.

(Complex ``inv``/``det``/``solve``/``solve_triangular``/``eigh`` take round 45's rules: the
first four are not ``complex_aware``, so the engine conjugates around their holomorphic rules;
eigh's uses ``mH``.)"""

from __future__ import annotations

import numpy as np

from . import complex_r28 as CX
from . import ops_linalg as LA
from . import ops_scatter as OS
from . import ops_stats as OST
from .autograd import Function, xp_of
from .double_helpers import input_t, output_t, unbroadcast_t
from .double_rules import rule
from .nn.functional import dense as DN
from .tensor import Tensor, cat, where

__all__: list[str] = []


def _t(a):
    return a if isinstance(a, Tensor) else Tensor._make(a, False, None, 0)


def _eye(like, n):
    return _t(xp_of(like).eye(n, dtype=like.dtype))


@rule(LA._SlogDetComplex)
def _slogdet_complex(self, want, gs, gl):
    """``(g_l + i Im(g_s conj(sign))) A^-H``, ``sign`` the node's output, the inverse a node."""
    a, sign = self.saved
    s_t = output_t(self, 0, sign)
    w = gl + 1j * (gs * s_t.conj()).imag
    return (w[..., None, None] * LA._Inv.apply(input_t(self, 0, a)).mH,)


@rule(LA._Eig)
def _eig(self, want, gw, gv):
    """torch's ``V^-H (diag gL + P(V^H gV) / conj(E)) V^H`` (a solve node), ``P`` removing
    the part along each unit column, ``E_ij = L_j - L_i``; ``L`` and ``V`` the node's outputs;
    a real input keeps the real part."""
    w, v = self.saved
    w_t, v_t = output_t(self, 0, w), output_t(self, 1, v)
    n = w.shape[-1]
    eye = _eye(v, n)
    off = _t(1.0 - xp_of(w).eye(n))
    vh = v_t.mH
    vhgv = vh @ gv
    vhgv = vhgv - vh @ (v_t * vhgv.diagonal(dim1=-2, dim2=-1).real.unsqueeze(-2))
    e = (w_t.unsqueeze(-2) - w_t.unsqueeze(-1)).conj() + eye
    inner = vhgv / e * off + gw.unsqueeze(-2) * eye
    ga = LA._Solve.apply(vh, inner @ vh)
    return (ga.real if self.real_in else ga,)


@rule(LA._Svd)
def _svd(self, want, gu, gs, gvh):
    """The first-order rule (skew parts of ``U^H gU``, ``V^H gV`` over ``s_j^2 - s_i^2``,
    ``gS`` on the diagonal, the parts outside the spans) on the node's outputs (distinct
    nonzero singular values, as torch's)."""
    u, s, vh = self.saved
    m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
    s_t = output_t(self, 1, s)
    if self.full:  # the columns past min(m, n) do not enter the gradient (torch's)
        u_t = output_t(self, 0, self.uv_full[0])[..., :k]
        vh_t = output_t(self, 2, self.uv_full[1])[..., :k, :]
        gu, gvh = gu[..., :k], gvh[..., :k, :]
    else:
        u_t, vh_t = output_t(self, 0, u), output_t(self, 2, vh)
    v_t, gv = vh_t.mH, gvh.mH
    eye = xp_of(s).eye(k, dtype=s.dtype)
    s2 = s_t * s_t
    e = s2.unsqueeze(-2) - s2.unsqueeze(-1) + _t(eye)
    uhgu = u_t.mH @ gu
    vhgv = v_t.mH @ gv
    inner = ((uhgu - uhgu.mH) * s_t.unsqueeze(-2) + s_t.unsqueeze(-1) * (vhgv - vhgv.mH)) / e
    diag = gs
    if u.dtype.kind == "c":
        diag = diag + 1j * uhgu.diagonal(dim1=-2, dim2=-1).imag / s_t
    inner = inner * _t(1.0 - eye) + diag.unsqueeze(-2) * _t(eye)
    if m > k:
        gus = gu / s_t.unsqueeze(-2)
        return ((u_t @ inner + gus - u_t @ (u_t.mH @ gus)) @ vh_t,)
    if n > k:
        sgvh = gv.mH / s_t.unsqueeze(-1)
        return (u_t @ (inner @ vh_t + sgvh - (sgvh @ v_t) @ vh_t),)
    return (u_t @ inner @ vh_t,)


@rule(CX.Angle)
def _angle(self, want, g):
    """``g i a / |a|^2`` (0 at ``a = 0``); a real input's angle is flat (zeros)."""
    (a,) = self.saved
    xp = xp_of(a)
    if a.dtype.kind != "c":
        return (g * 0.0,)
    a_t = _t(input_t(self, 0, a))
    mag2 = (a * a.conj()).real
    nz = mag2 > 0
    inv = _t(xp.where(nz, 1.0, 0.0).astype(mag2.dtype))
    den = (a_t * a_t.conj()).real + _t(xp.where(nz, 0.0, 1.0).astype(mag2.dtype))
    return (g * 1j * a_t / den * inv,)


@rule(OST._IndexPut)
def _index_put(self, want, g):
    """``g`` (zeros at the written places unless accumulating) and ``g[index]`` summed back to
    the values' shape."""
    ga = gv = None
    if want[0]:
        if self.acc:
            ga = g
        else:
            keep = g.xp.ones(tuple(g.shape), dtype=g.dtype)
            keep[self.index] = 0
            ga = g * _t(keep)
    if want[1]:
        gv = unbroadcast_t(g[self.index], self.sv)
    return ga, gv


@rule(DN.RotaryFn)
def _rotary(self, want, g):
    """The rotation back by the negative angle (linear: a rotary node again)."""
    return (DN.RotaryFn.apply(g, cos=self.cos, sin=-self.sin),)


class _DelayedError(Function):
    """``t`` itself; differentiating through it raises (torch's ``DelayedError``)."""

    def forward(self, t, msg=""):
        self.msg = msg
        return t.copy()

    def backward(self, g):
        raise RuntimeError(self.msg)

    def backward_t(self, want, g):
        raise RuntimeError(self.msg)


_TWO_ZEROS = ("scatter_reduce(): Double backward is unsupported for src when >1 zeros in src "
              "are scattered to the same position in self")


def scatter_prod_zeros(self, want, g, part):
    """``scatter_reduce(reduce='prod')``'s gradient where a touched group holds a zero factor,
    as torch's ``scatter_reduce_backward`` writes it: ``g prod(masked self) / masked self``
    (a zero self set to 1), a lone zero source ``g`` times the product with it set to 1, the
    others ``g out / src``; two zero sources in one group give the gradient but refuse to be
    differentiated again (torch's error)."""
    touched, _, x, src_part, out = self.saved
    xp = g.xp
    sl = tuple(slice(0, n) for n in part)
    x_t = _t(input_t(self, 0, x))
    src = xp.ones(self.shape, dtype=g.dtype)
    src[sl] = src_part
    src_t = _t(input_t(self, 1, src))[sl]

    def prod(a, b):
        return OS.ScatterReduceFn.apply(a, b, dim=self.dim, index=self.index, reduce="prod",
                                        include_self=self.inc)

    gx = gs = None
    if want[0]:
        if self.inc:
            masked = where(x == 0, _t(xp.ones((), dtype=g.dtype)), x_t)
            gx = g * prod(masked, src_t) / masked
        else:
            gx = g * _t((~touched).astype(g.dtype))
    if want[1]:
        zero = src_part == 0
        count = xp.zeros(x.shape, dtype=np.int64)
        (np.add.at if xp is np else OS._add_at)(count, self.where, zero.astype(np.int64))
        count = count[self.where]
        single = zero & (count == 1)
        one = _t(xp.ones((), dtype=g.dtype))
        lone = (g * prod(x_t, where(single, one, src_t)))[self.where]
        rest = (g * output_t(self, 0, out))[self.where] / where(zero, one, src_t)
        gs = where(single, lone, rest)
        if bool((zero & (count > 1)).any()):
            gs = _DelayedError.apply(gs, msg=_TWO_ZEROS)
        gs = pad_to(gs, part, self.shape, xp, g.dtype)
    return gx, gs


def pad_to(gs, part, shape, xp, dtype):
    """``gs``, the gradient of a scatter's first ``part`` source entries along each axis,
    padded with zeros to the source's ``shape`` (the entries the index never reached)."""
    for d, (n, m) in enumerate(zip(part, shape)):
        if m > n:
            zs = list(gs.shape)
            zs[d] = m - n
            gs = cat([gs, _t(xp.zeros(tuple(zs), dtype=dtype))], d)
    return gs
