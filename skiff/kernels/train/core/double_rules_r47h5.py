"""Round 47 (h5): double-backward rules found missing by the third-derivative sweep
(``tests/kernels/train/core/test_third_derivatives_r47h5.py``): ``einsum`` (its gradients as
einsums again, a diagonal's written back by a setitem node), the n-d pools (``PoolNdFn``:
average pooling with padding/``ceil_mode``/``count_include_pad``, 1-D/3-D max pooling; linear
in ``x`` with the window maxima's places fixed, so the gradient is an "adjoint" node whose own
gradient is the pooling again, to any order), ``conv3d``/``conv_transpose*d``
(``ConvNdFn``/``ConvTransposeNdFn``: their column maps as node pairs), bilinear/nearest
``grid_sample`` (2-D and 3-D), ``linalg.lu``/``lu_factor``, ``x[index] = v`` and ``ctc_loss``
(its gradient in the graph, a second differentiation refused with torch's words: torch has no
derivative of ``_ctc_loss_backward``)."""

from __future__ import annotations

import itertools
import math

from . import complex_r28 as CX
from . import linalg_r39 as LR
from . import ops_einsum as E
from . import tensor_torch as TT
from .autograd import Function, xp_of
from .double_helpers import input_t, output_t, tie_t, unbroadcast_t
from .double_rules import rule
from .double_rules_r46h8 import _DelayedError
from .nn import conv3d as CN
from .nn import grid_sample as GS
from .nn import grid_sample3d_r44 as GS3
from .nn.functional import conv_transpose_nd as CT
from .nn.functional import ctc as CTC
from .nn.functional import pool_nd as PN
from .ops_math import Sum
from .ops_shape import Expand, GetItem, Reshape
from .tensor import Tensor

__all__: list[str] = []


def _t(a):
    return a if isinstance(a, Tensor) else Tensor._make(a, False, None, 0)


# ---- einsum --------------------------------------------------------------------------------
@rule(E.EinsumFn)
def _einsum(self, want, g):
    """Input ``i``'s gradient ``einsum(out, others -> kept)`` of ``g`` and the other operands
    (conjugated where complex) as an einsum node, then the first-order rule's sums over
    broadcast length-1 axes and its broadcast back; a repeated letter (a diagonal) writes it
    onto the diagonal's places (a setitem node)."""
    arrays = self.saved
    ops = [input_t(self, j, a) for j, a in enumerate(arrays)]
    out = []
    for i, (sub, a) in enumerate(zip(self.ins, arrays)):
        if not want[i]:
            out.append(None)
            continue
        uniq = "".join(dict.fromkeys(sub))  # a repeated letter ('ii', 'bii') is a diagonal
        others = [(s, b) for j, (s, b) in enumerate(zip(self.ins, ops)) if j != i]
        seen = set(self.out).union(*(set(s) for s, _ in others))
        kept = "".join(c for c in uniq if c in seen)
        terms = [CX.Conj.apply(b) if _t(b).dtype.kind == "c" else b for _, b in others]
        gi = E.EinsumFn.apply(g, *terms, ins=[self.out] + [s for s, _ in others], out=kept)
        if gi.dtype.kind == "c" and a.dtype.kind != "c":
            gi = CX.Real.apply(gi)
        sizes = dict(zip(sub, a.shape))
        spread = tuple(k for k, c in enumerate(kept) if sizes[c] == 1 and gi.shape[k] != 1)
        if spread:
            gi = Sum.apply(gi, axis=spread, keepdims=True)
        got = dict(zip(kept, gi.shape))
        shape = tuple(got.get(c, 1) for c in uniq)
        ushape = tuple(sizes[c] for c in uniq)
        if tuple(gi.shape) != shape:
            gi = Reshape.apply(gi, shape=shape)
        if shape != ushape:
            gi = Expand.apply(gi, shape=ushape)
        if uniq != sub:  # written onto the diagonal's places of zeros (a setitem node)
            grid = E.sparse_grid(g.xp, ushape)
            place = tuple(grid[uniq.index(c)] for c in sub)
            gi = TT._SetItem.apply(g.xp.zeros(a.shape, dtype=a.dtype), gi, index=place)
        out.append(gi)
    return tuple(out)


# ---- n-d pooling: linear in x ----------------------------------------------------------------
def _pool_map(node, a):
    """The pooling ``node`` applied again to the array ``a`` (shaped as its input), with the
    forward's windows, divisor and (max) the window maxima's places."""
    xp = xp_of(a)
    xshape, pshape, offs, stride, padding, dilation, out, kind = node.geom
    ap = xp.zeros(pshape, dtype=a.dtype)
    ap[(slice(None), slice(None)) + tuple(slice(p, p + n) for p, n in
                                          zip(padding, xshape[2:]))] = a
    lead = (slice(None), slice(None))
    total = xp.zeros(tuple(xshape[:2]) + tuple(out), dtype=a.dtype)
    if kind == "max":
        (arg,) = node.saved
        for i, off in enumerate(offs):
            total += ap[lead + PN._slices(off, dilation, stride, out)] * (arg == i)
        return total
    for off in offs:
        total += ap[lead + PN._slices(off, dilation, stride, out)]
    return total / node.div


class PoolAdjointFn(Function):
    """A pooling node's gradient map (``node.backward``) as a node of its own; its gradient is
    the pooling (:class:`PoolAgainFn`), whose gradient is this again."""

    def forward(self, g, node=None):
        self.node = node
        return node.backward(g)

    def backward(self, gg):
        return _pool_map(self.node, gg)

    def backward_t(self, want, gg):
        return (PoolAgainFn.apply(gg, node=self.node),)


class PoolAgainFn(Function):
    """The pooling of ``node`` (its windows and maxima's places) applied to another input."""

    def forward(self, a, node=None):
        self.node = node
        return _pool_map(node, a)

    def backward(self, g):
        return self.node.backward(g)

    def backward_t(self, want, g):
        return (PoolAdjointFn.apply(g, node=self.node),)


@rule(PN.PoolNdFn)
def _pool_nd(self, want, g):
    """The gradient as a :class:`PoolAdjointFn` node, tied to the input (torch's
    ``avg_pool*d_backward``/``max_pool*d_with_indices_backward`` read ``self``: their
    gradient requires grad, its derivative zeros)."""
    xshape = self.geom[0]
    anchor = g.xp.broadcast_to(g.xp.zeros((), dtype=g.dtype), xshape)  # shape and dtype only
    return (tie_t(PoolAdjointFn.apply(g, node=self), input_t(self, 0, anchor)),)


# ---- ctc_loss: the gradient, not differentiable again (torch's) ------------------------------
_CTC = "derivative for aten::_ctc_loss_backward is not implemented"


@rule(CTC.CTCLossFn)
def _ctc(self, want, g):
    """The first-order gradient (a function of the log-probabilities: in the graph through
    them, as torch's), which refuses a further derivative with torch's message."""
    grads = self.backward(g._data)
    glp = _t(grads[0])
    p = self._parents[0]
    if p is not None:
        lp = input_t(self, 0, glp._data)  # stands where the input stood (the value unused)
        glp = _DelayedError.apply(tie_t(glp, lp), msg=_CTC)
    return (glp,) + (None,) * (len(self._parents) - 1)


# ---- n-d convolution (conv3d, conv1d/2d where they take ConvNdFn) ---------------------------
def _im2col(node, a):
    """The columns (N, groups, K, L) of the array ``a`` (shaped as the conv's input)."""
    xp = xp_of(a)
    xshape, pshape, k, stride, padding, dilation, groups, out, nd = node.geom
    ap = xp.zeros(pshape, dtype=a.dtype)
    ap[(slice(None), slice(None)) + tuple(slice(p, p + n) for p, n in
                                          zip(padding, xshape[2:]))] = a
    n, c = xshape[:2]
    cols = xp.empty((n, c) + tuple(k) + tuple(out), dtype=a.dtype)
    for off in itertools.product(*(range(kk) for kk in k)):
        cols[(slice(None), slice(None)) + off] = ap[
            (slice(None), slice(None)) + PN._slices(off, dilation, stride, out)]
    return cols.reshape(n, groups, -1, math.prod(out))


def _col2im(node, gc):
    """The columns' gradient added back into the input's places (ConvNdFn's backward)."""
    xp = xp_of(gc)
    xshape, pshape, k, stride, padding, dilation, groups, out, nd = node.geom
    gc = gc.reshape((xshape[0], xshape[1]) + tuple(k) + tuple(out))
    gp = xp.zeros(pshape, dtype=gc.dtype)
    for off in itertools.product(*(range(kk) for kk in k)):
        gp[(slice(None), slice(None)) + PN._slices(off, dilation, stride, out)] += \
            gc[(slice(None), slice(None)) + off]
    return PN._unpad(gp, padding, xshape[2:])


class Im2colFn(Function):
    """A conv node's columns of its input as a node (``cols``: the ones it saved, else
    computed); its gradient is :class:`Col2imFn`, whose gradient is this again."""

    def forward(self, a, node=None, cols=None):
        self.node = node
        return cols if cols is not None else _im2col(node, a)

    def backward(self, g):
        return _col2im(self.node, g)

    def backward_t(self, want, g):
        return (Col2imFn.apply(g, node=self.node),)


class Col2imFn(Function):
    def forward(self, gc, node=None):
        self.node = node
        return _col2im(node, gc)

    def backward(self, g):
        return _im2col(self.node, g)

    def backward_t(self, want, g):
        return (Im2colFn.apply(g, node=self.node),)


@rule(CN.ConvNdFn)
def _conv_nd(self, want, g):
    """``y = W cols(x)`` per group: ``gW = sum_n g cols(x)^T``, ``gx = col2im(W^T g)``, with
    ``cols(x)`` an :class:`Im2colFn` node on the input and ``col2im`` a :class:`Col2imFn`."""
    xshape, pshape, k, stride, padding, dilation, groups, out, nd = self.geom
    cm, wm = self.saved
    n, o = g.shape[:2]
    gm = Reshape.apply(g, shape=(n, groups, o // groups, math.prod(out)))
    gx = gw = None
    if want[1]:
        x_anchor = g.xp.broadcast_to(g.xp.zeros((), dtype=cm.dtype), xshape)  # value unused
        cols = Im2colFn.apply(input_t(self, 0, x_anchor), node=self, cols=cm)
        gw = (gm @ cols.transpose(-1, -2)).sum(0)
        gw = Reshape.apply(gw, shape=(o, xshape[1] // groups) + tuple(k))
    if want[0]:
        wshape = (o, xshape[1] // groups) + tuple(k)
        w_t = input_t(self, 1, wm.reshape(wshape))
        wm_t = Reshape.apply(w_t, shape=wm.shape) if isinstance(w_t, Tensor) else _t(wm)
        gx = Col2imFn.apply(wm_t.transpose(-1, -2) @ gm, node=self)
    return gx, gw


# ---- n-d transposed convolution --------------------------------------------------------------
def _tcut(node, a):
    """The output-shaped array ``a`` cut into the transposed conv's columns (N, g, K, L)."""
    xp = xp_of(a)
    xshape, full, crop, k, stride, dilation, groups, ins = node.geom
    n, co = a.shape[:2]
    buf = xp.zeros((n, co) + tuple(full), dtype=a.dtype)
    buf[crop] = a
    lead = (slice(None), slice(None))
    gc = xp.empty((n, co) + tuple(k) + tuple(ins), dtype=a.dtype)
    for off in itertools.product(*(range(kk) for kk in k)):
        gc[lead + off] = buf[lead + PN._slices(off, dilation, stride, ins)]
    return gc.reshape(n, groups, node.saved[1].shape[2], -1)


def _tadd(node, cols):
    """The columns added back into the output's places and cropped (the forward's scatter)."""
    xp = xp_of(cols)
    xshape, full, crop, k, stride, dilation, groups, ins = node.geom
    n = cols.shape[0]
    co = groups * node.saved[1].shape[2] // math.prod(k)
    c = cols.reshape((n, co) + tuple(k) + tuple(ins))
    buf = xp.zeros((n, co) + tuple(full), dtype=cols.dtype)
    lead = (slice(None), slice(None))
    for off in itertools.product(*(range(kk) for kk in k)):
        buf[lead + PN._slices(off, dilation, stride, ins)] += c[lead + off]
    return buf[crop]


class TransposedCutFn(Function):
    """:func:`_tcut` as a node; its gradient :class:`TransposedAddFn`, and back."""

    def forward(self, a, node=None):
        self.node = node
        return _tcut(node, a)

    def backward(self, g):
        return _tadd(self.node, g)

    def backward_t(self, want, g):
        return (TransposedAddFn.apply(g, node=self.node),)


class TransposedAddFn(Function):
    def forward(self, cols, node=None):
        self.node = node
        return _tadd(node, cols)

    def backward(self, g):
        return _tcut(self.node, g)

    def backward_t(self, want, g):
        return (TransposedCutFn.apply(g, node=self.node),)


@rule(CT.ConvTransposeNdFn)
def _conv_transpose_nd(self, want, g):
    """``gx = W cut(g)``, ``gW = sum_n x cut(g)^T`` per group, ``cut`` a
    :class:`TransposedCutFn` node (the forward's scatter its gradient)."""
    xshape, full, crop, k, stride, dilation, groups, ins = self.geom
    xm, wm = self.saved
    gcm = TransposedCutFn.apply(g, node=self)
    gx = gw = None
    if want[0]:
        w_t = input_t(self, 1, wm.reshape((xshape[1], -1) + tuple(k)))
        wm_t = Reshape.apply(w_t, shape=wm.shape) if isinstance(w_t, Tensor) else _t(wm)
        gx = Reshape.apply(wm_t @ gcm, shape=tuple(xshape))
    if want[1]:
        x_t = input_t(self, 0, xm.reshape(xshape))
        xm_t = Reshape.apply(x_t, shape=xm.shape) if isinstance(x_t, Tensor) else _t(xm)
        gw = (xm_t @ gcm.transpose(-1, -2)).sum(0)
        gw = Reshape.apply(gw, shape=(xshape[1], g.shape[1] // groups) + tuple(k))
    return gx, gw


# ---- LU: torch's linalg_lu_backward on tensors -------------------------------------------------
def _lu_backward_t(p, low, up, gl, gu):
    """``linalg_r39._lu_backward`` (torch's ``linalg_lu_backward``) written on tensors: ``L``
    and ``U`` the node's outputs, the triangular solves as nodes, ``P`` a constant."""
    from .ops_linalg import solve_triangular as st
    from .tensor import cat
    m, n = low.shape[-2], up.shape[-1]
    k = min(m, n)
    gl = (low * 0) if gl is None else gl.tril(-1)
    gu = (up * 0) if gu is None else gu.triu()
    if m <= n:
        u1, gu1, u2, gu2 = up[..., :, :k], gu[..., :, :k], up[..., :, k:], gu[..., :, k:]
        inner = (low.mH @ gl - gu2 @ u2.mH).tril(-1) + (gu1 @ u1.mH).triu()
        g1 = st(low.mH, st(u1.mH, inner, upper=False, left=False), upper=True,
                unitriangular=True)
        ga = cat([g1, st(low.mH, gu2, upper=True, unitriangular=True)], -1) if n > k else g1
    else:
        l1, gl1, l2, gl2 = low[..., :k, :], gl[..., :k, :], low[..., k:, :], gl[..., k:, :]
        inner = (l1.mH @ gl1).tril(-1) + (gu @ up.mH - l2.mH @ gl2).triu()
        g1 = st(l1.mH, st(up.mH, inner, upper=False, left=False), upper=True,
                unitriangular=True)
        g2 = st(up.mH, gl2, upper=False, left=False)
        ga = cat([g1, g2], -2)
    return _t(p) @ ga


@rule(LR._Lu)
def _lu(self, want, gp, gl, gu):
    # the factors are kept on the host: the graph's tensors on the gradients' device
    xp = next((t.xp for t in (gp, gl, gu) if t is not None), xp_of(self.saved[0]))
    p, low, up = (xp.asarray(v) for v in self.saved)
    return (_lu_backward_t(p, output_t(self, 1, low), output_t(self, 2, up), gl, gu),)


@rule(LR._LuFactor)
def _lu_factor(self, want, g):
    """The packed ``LU`` = ``tril(LU, -1) + triu(LU)``: ``lu``'s rule on its two triangles."""
    xp = g.xp  # the packed factor is kept on the host: its tensors on g's device
    lu_ = xp.asarray(self.saved[0])
    packed = output_t(self, 0, lu_)
    m, n = lu_.shape[-2:]
    k = min(m, n)
    low = packed[..., :, :k].tril(-1) + _t(xp.eye(m, k, dtype=lu_.dtype))
    up = packed[..., :k, :].triu()
    p = xp.asarray(LR._perm_matrix(self.piv, m, lu_.dtype))
    return (_lu_backward_t(p, low, up, g[..., :, :k], g[..., :k, :]),) + (None,) * (
        len(self._parents) - 1)


# ---- grid_sample (2-D, bilinear) -------------------------------------------------------------
class LinearMapFn(Function):
    """A linear map ``fwd`` of its input as a node (``value``: its result, when known), whose
    gradient is the adjoint map ``adj`` as a node, whose gradient is ``fwd`` again."""

    def forward(self, a, fwd=None, adj=None, value=None):
        self.fwd, self.adj = fwd, adj
        return value if value is not None else fwd(a)

    def backward(self, g):
        return self.adj(g)

    def backward_t(self, want, g):
        return (LinearMapFn.apply(g, fwd=self.adj, adj=self.fwd),)


@rule(GS.GridSample2dFn)
def _grid_sample(self, want, g):
    """Nearest: the input's gradient a scatter node, the grid's zeros. Bilinear: ``out =
    sum_corners w(fx, fy) x[corner]``. The corners' values are a gather
    node on the input (its gradient a scatter node, and back), the fractions ``fx``/``fy``
    linear nodes on the grid (slope torch's coordinate multiplier: border/reflection clip and
    flip it), so both first-order gradients (torch's) are written on tensors."""
    if self.mode not in ("bilinear", "nearest"):
        raise NotImplementedError(
            f"create_graph=True: grid_sample's double backward is written for "
            f"mode='bilinear' and 'nearest', not {self.mode!r}")
    xp = g.xp
    n, c, h, w = self.shape
    ho, wo = g.shape[2:]
    L = ho * wo
    dt = g.dtype
    base = (xp.arange(n * c) * (h * w)).reshape(n, c, 1)

    def gather(idx):
        ib = xp.broadcast_to(idx, (n, c, L))
        return lambda a: xp.take_along_axis(a.reshape(n, c, h * w), ib, axis=2)

    def scatter(idx):
        flat = (base + idx).reshape(-1)
        return lambda a: xp.bincount(flat, weights=a.reshape(-1), minlength=n * c * h * w
                                     ).reshape(n, c, h, w).astype(a.dtype)

    def frac(comp, mult):  # the fraction's derivative in grid[..., comp]
        m = mult.reshape(n, 1, L)

        def fwd(a):
            return a[..., comp].reshape(n, 1, L) * m

        def adj(b):
            out = xp.zeros((n, ho, wo, 2), dtype=b.dtype)
            out[..., comp] = (b * m).reshape(n, ho, wo)
            return out
        return fwd, adj

    gf = Reshape.apply(g, shape=(n, c, L))
    if self.mode == "nearest":  # the input's gradient a scatter node; the grid's zeros
        (idx, _, _), m_in = self.kept[0], self.inside[0].astype(dt)
        gx_in = LinearMapFn.apply(gf * _t(m_in), fwd=scatter(idx), adj=gather(idx)) \
            if want[0] else None
        g_grid = _t(xp.zeros((n, ho, wo, 2), dtype=dt)) if len(want) > 1 and want[1] else None
        return gx_in, g_grid
    fx, fy, mx, my = self.saved
    grid_anchor = xp.broadcast_to(xp.zeros((), dtype=dt), (n, ho, wo, 2))
    x_anchor = xp.broadcast_to(xp.zeros((), dtype=dt), (n, c, h, w))
    grid_t = input_t(self, 1, grid_anchor)
    x_t = input_t(self, 0, x_anchor)
    fwx, adx = frac(0, mx)
    fwy, ady = frac(1, my)
    fx_t = LinearMapFn.apply(grid_t, fwd=fwx, adj=adx, value=fx)
    fy_t = LinearMapFn.apply(grid_t, fwd=fwy, adj=ady, value=fy)
    vals, ins = [], [m_in.astype(dt) for m_in in self.inside]
    for (idx, _, v), m_in in zip(self.kept, ins):  # a corner's values, zero outside the input
        ga, sc = gather(idx), scatter(idx)
        vals.append(LinearMapFn.apply(x_t, fwd=lambda a, ga=ga, m_in=m_in: ga(a) * m_in,
                                      adj=lambda b, sc=sc, m_in=m_in: sc(b * m_in), value=v))
    gx_in = g_grid = None
    if want[0]:
        wts = [(1 - fx_t) * (1 - fy_t), fx_t * (1 - fy_t), (1 - fx_t) * fy_t, fx_t * fy_t]
        parts = [LinearMapFn.apply(gf * wt * _t(m_in), fwd=scatter(idx), adj=gather(idx))
                 for (idx, _, _), wt, m_in in zip(self.kept, wts, ins)]
        gx_in = parts[0] + parts[1] + parts[2] + parts[3]
    if len(want) > 1 and want[1]:
        v00, v10, v01, v11 = vals
        dx = (v10 - v00) * (1 - fy_t) + (v11 - v01) * fy_t
        dy = (v01 - v00) * (1 - fx_t) + (v11 - v10) * fx_t
        gix = Reshape.apply((gf * dx).sum(1) * _t(mx.reshape(n, L)), shape=(n, ho, wo, 1))
        giy = Reshape.apply((gf * dy).sum(1) * _t(my.reshape(n, L)), shape=(n, ho, wo, 1))
        from .tensor import cat
        g_grid = cat([gix, giy], -1)
    return gx_in, g_grid


# ---- x[index] = v (torch's copy_/index_put_ on a view) -----------------------------------------
@rule(TT._SetItem)
def _set_item(self, want, g):
    """``a``'s gradient ``g`` with the written cells zeroed (the same write, of zeros, as a
    node), ``v``'s the written cells of ``g`` summed back to its shape."""
    ga = gv = None
    if want[0]:
        ga = TT._SetItem.apply(g, g.xp.zeros((), dtype=g.dtype), index=self.index)
    if want[1]:
        gv = unbroadcast_t(GetItem.apply(g, index=self.index), self.vshape)
    return ga, gv


@rule(GS3.GridSample3dFn)
def _grid_sample3d(self, want, g):
    """The volume's: eight corners (trilinear) or one (nearest), as the 2-D rule."""
    xp = g.xp
    n, c, d, h, w = self.shape
    outs = tuple(g.shape[2:])
    L, size, dt = math.prod(outs), d * h * w, g.dtype
    base = (xp.arange(n * c) * size).reshape(n, c, 1)

    def gather(idx):
        ib = xp.broadcast_to(idx, (n, c, L))
        return lambda a: xp.take_along_axis(a.reshape(n, c, size), ib, axis=2)

    def scatter(idx):
        flat = (base + idx).reshape(-1)
        return lambda a: xp.bincount(flat, weights=a.reshape(-1), minlength=n * c * size
                                     ).reshape(n, c, d, h, w).astype(a.dtype)

    gf = Reshape.apply(g, shape=(n, c, L))
    ins = [_t(m.astype(dt)) for m in self.inside]
    if self.mode == "nearest":
        idx = self.kept[0][0]
        gx_in = LinearMapFn.apply(gf * ins[0], fwd=scatter(idx), adj=gather(idx)) \
            if want[0] else None
        g_grid = _t(xp.zeros((n,) + outs + (3,), dtype=dt)) if len(want) > 1 and want[1] \
            else None
        return gx_in, g_grid
    grid_t = input_t(self, 1, xp.broadcast_to(xp.zeros((), dtype=dt), (n,) + outs + (3,)))
    x_t = input_t(self, 0, xp.broadcast_to(xp.zeros((), dtype=dt), self.shape))
    fr_vals = self.kept[-1][3]  # the (1, 1, 1) corner's weights: the fractions

    def frac(comp):
        m = self.mults[comp].reshape(n, 1, L)

        def fwd(a):
            return a[..., comp].reshape(n, 1, L) * m

        def adj(b):
            out = xp.zeros((n,) + outs + (3,), dtype=b.dtype)
            out[..., comp] = (b * m).reshape((n,) + outs)
            return out
        return LinearMapFn.apply(grid_t, fwd=fwd, adj=adj,
                                 value=fr_vals[comp].reshape(n, 1, L).astype(dt))

    fr = [frac(k) for k in range(3)]
    corners = []
    for (idx, _, v, _, bits), m_in in zip(self.kept, ins):
        ws = [f if b else 1 - f for f, b in zip(fr, bits)]
        ga, sc = gather(idx), scatter(idx)
        v_t = LinearMapFn.apply(x_t, fwd=lambda a, ga=ga, m_in=m_in: ga(a) * m_in._data,
                                adj=lambda b, sc=sc, m_in=m_in: sc(b * m_in._data), value=v)
        corners.append((idx, ws, bits, v_t, m_in))
    gx_in = g_grid = None
    if want[0]:
        for idx, ws, _, _, m_in in corners:
            part = LinearMapFn.apply(gf * (ws[0] * ws[1] * ws[2]) * m_in, fwd=scatter(idx),
                                     adj=gather(idx))
            gx_in = part if gx_in is None else gx_in + part
    if len(want) > 1 and want[1]:
        parts = []
        for axis in range(3):
            dsum = None
            for _, ws, bits, v_t, _ in corners:
                o = [ws[k] for k in range(3) if k != axis]
                term = v_t * (o[0] * o[1]) * (1.0 if bits[axis] else -1.0)
                dsum = term if dsum is None else dsum + term
            gi = (gf * dsum).sum(1) * _t(self.mults[axis].reshape(n, L))
            parts.append(Reshape.apply(gi, shape=(n,) + outs + (1,)))
        from .tensor import cat
        g_grid = cat(parts, -1)
    return gx_in, g_grid
