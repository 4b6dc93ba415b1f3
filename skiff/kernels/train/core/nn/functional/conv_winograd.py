"""Winograd F(2x2, 3x3) for 3x3 stride-1 ``conv2d`` on the CPU (round 33, docs/convolution.md).

A 3x3 stride-1 convolution computes each 2x2 output tile from a 4x4 input tile with 16
multiplications per (in, out) channel pair instead of 36: the input tiles are transformed
(``V = B^T d B``), the weights once per call (``U = G g G^T``), the 16 products are 16 GEMMs
``M[k] = U[k] @ V[k]`` of shape (Cout, C) x (C, tiles), and ``Y = A^T M A`` gives the outputs.
The GEMMs hold 16/36 of im2col's multiply-adds; the transforms are two passes over 4x the
input and output. Backward's input gradient is the same transform (a 3x3 stride-1 convolution
of the output gradient with the flipped, transposed weight, padded by ``2 - p``); the weight
gradient stays im2col's GEMM (:class:`.conv.Conv2dFn`'s).

Custom ops (numba on the CPU, a plain ``xp`` reference twin anywhere):

* ``train.winograd_in(x, pt, pl, th, tw) -> V``: ``x`` channels-first (C, N, H, W) (any
  strides; zeros outside it), tiles starting at row ``2 * ty - pt``, column ``2 * tx - pl``;
  ``V`` (16, C, N * th * tw).
* ``train.winograd_out(m, ho, wo, th, tw, bias) -> y``: ``m`` (16, Co, N * th * tw) ->
  ``y`` (Co, N, ho, wo) (+ bias per channel when given).

The transforms' constants are 0, +-1 and 1/2 (exact in binary), so float32 results differ from
im2col's by rounding only (a few ulps of the accumulated sums).
"""

from __future__ import annotations

import functools

import numpy as np

from skiff.kernels.backend import custom_op, numba_available
from skiff.kernels.backend.split import split_rows

from ...autograd import xp_of
from ...gemm import mm

__all__ = ["winograd_in", "winograd_out", "winograd_out_t", "winograd_in_t", "winograd_weight",
           "winograd_weight_t", "winograd_conv3x3", "winograd_backward", "image_chunks",
           "use_winograd"]

_BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64)
_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float64)
_AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64)

MIN_CHANNELS = 16  # below this (a first layer on RGB or gray) im2col's one GEMM is as fast


def use_winograd(x, w, stride, padding) -> bool:
    """The fast path's domain for tensors ``x`` and ``w`` (read through their shape, dtype and
    backend, never their arrays: a vmap's batched tensor refuses those): numpy
    float32/float64, 3x3, stride 1, padding 0-2, enough channels for the GEMMs to dominate."""
    phys = x.__dict__.get("_phys", x) if hasattr(x, "__dict__") else x  # vmap's: its tensor
    xp = phys.xp if hasattr(phys, "_node") else xp_of(phys)  # a Tensor, or a plain array
    return (xp is np and np.dtype(x.dtype) in (np.float32, np.float64)
            and np.dtype(w.dtype) == np.dtype(x.dtype) and tuple(w.shape[2:]) == (3, 3)
            and tuple(stride) == (1, 1) and all(0 <= p <= 2 for p in padding)
            and min(x.shape[1], w.shape[0]) >= MIN_CHANNELS)


def winograd_weight(w):
    """(Co, C, 3, 3) -> U (16, Co, C) = G g G^T per channel pair, in w's dtype."""
    xp = xp_of(w)
    co, c = w.shape[:2]
    g = xp.asarray(_G, dtype=w.dtype)
    # two plain GEMMs (a batched product of Co * C 3x3 matrices is ~10x slower)
    t1 = g @ w.reshape(co * c, 3, 3).transpose(1, 0, 2).reshape(3, co * c * 3)  # (4, OC*3)
    u = t1.reshape(4 * co * c, 3) @ g.T  # (4 * OC, 4): [a, oc, b]
    return xp.ascontiguousarray(u.reshape(4, co * c, 4).transpose(0, 2, 1)).reshape(16, co, c)


@custom_op("train.winograd_in")
def winograd_in(x, pt, pl, th, tw):
    xp = xp_of(x)
    c, n, h, wd = x.shape
    hp, wp = 2 * th + 2, 2 * tw + 2
    d = xp.zeros((c, n, hp, wp), dtype=x.dtype)
    # the part of x the tiles cover (x may extend past the last tile, or fall short of it)
    y0, x0 = max(0, pt), max(0, pl)
    y1, x1 = min(hp, h + pt), min(wp, wd + pl)
    if y1 > y0 and x1 > x0:
        d[:, :, y0:y1, x0:x1] = x[:, :, y0 - pt : y1 - pt, x0 - pl : x1 - pl]
    bt = xp.asarray(_BT, dtype=x.dtype)
    tiles = xp.empty((c, n, th, tw, 4, 4), dtype=x.dtype)
    for i in range(4):
        for j in range(4):
            tiles[..., i, j] = d[:, :, i : i + 2 * th : 2, j : j + 2 * tw : 2]
    v = xp.einsum("ai,cntsij,bj->abcnts", bt, tiles, bt)
    return xp.ascontiguousarray(v.reshape(16, c, n * th * tw))


@custom_op("train.winograd_out")
def winograd_out(m, ho, wo, th, tw, bias=None):
    xp = xp_of(m)
    _, co, t = m.shape
    n = t // (th * tw)
    at = xp.asarray(_AT, dtype=m.dtype)
    y = xp.einsum("ai,ijonts,bj->ontasb", at, m.reshape(4, 4, co, n, th, tw), at)
    y = y.reshape(co, n, 2 * th, 2 * tw)[:, :, :ho, :wo]
    if bias is not None:
        y = y + bias.reshape(co, 1, 1, 1)
    return xp.ascontiguousarray(y)


@custom_op("train.winograd_out_t")
def winograd_out_t(g, th, tw):
    """The transpose of ``winograd_out`` (no bias): ``g`` (Co, N, ho, wo) -> dM (16, Co, T)."""
    xp = xp_of(g)
    co, n, ho, wo = g.shape
    gp = xp.zeros((co, n, 2 * th, 2 * tw), dtype=g.dtype)
    gp[:, :, :ho, :wo] = g
    at = xp.asarray(_AT, dtype=g.dtype)
    tiles = gp.reshape(co, n, th, 2, tw, 2)  # [o, n, t, a, s, b]
    dm = xp.einsum("ai,ontasb,bj->ijonts", at, tiles, at)
    return xp.ascontiguousarray(dm.reshape(16, co, n * th * tw))


@custom_op("train.winograd_in_t")
def winograd_in_t(dv, n, h, wd, pt, pl, th, tw):
    """The transpose of ``winograd_in``: dV (16, C, T) -> the (C, N, H, W) gradient of its
    input (overlapping tiles add)."""
    xp = xp_of(dv)
    c = dv.shape[1]
    bt = xp.asarray(_BT, dtype=dv.dtype)
    d = xp.einsum("ai,abcnts,bj->cntsij", bt, dv.reshape(4, 4, c, n, th, tw), bt)
    hp, wp = 2 * th + 2, 2 * tw + 2
    full = xp.zeros((c, n, max(hp, h + pt), max(wp, wd + pl)), dtype=dv.dtype)
    for i in range(4):
        for j in range(4):
            full[:, :, i : i + 2 * th : 2, j : j + 2 * tw : 2] += d[..., i, j]
    return xp.ascontiguousarray(full[:, :, pt : pt + h, pl : pl + wd])


@functools.lru_cache(maxsize=1)
def _kernels():
    import numba

    # row-wise: per (channel, image, tile row) the four input rows are copied (zero-padded)
    # into a buffer, B^T is applied down the rows as whole-row vector passes, then B across
    # each tile's columns writes 16 contiguous runs of V; the output side mirrors it
    @numba.njit(cache=True, fastmath=False, nogil=True)
    def k_in(x, lo, hi, pt, pl, th, tw, v):  # pragma: no cover - compiled
        _, n_, h, wd = x.shape
        wp = 2 * tw + 2
        d = np.zeros((4, wp), dtype=v.dtype)
        a = np.empty((4, wp), dtype=v.dtype)
        x0, x1 = max(0, pl), min(wp, wd + pl)
        for c in range(lo, hi):
            for n in range(n_):
                for ty in range(th):
                    for i in range(4):
                        yy = 2 * ty + i - pt
                        row = d[i]
                        if 0 <= yy < h:
                            src = x[c, n, yy]
                            row[:x0] = 0
                            for q in range(x0, x1):
                                row[q] = src[q - pl]
                            row[x1:] = 0
                        else:
                            row[:] = 0
                    for q in range(wp):
                        a[0, q] = d[0, q] - d[2, q]
                        a[1, q] = d[1, q] + d[2, q]
                        a[2, q] = d[2, q] - d[1, q]
                        a[3, q] = d[1, q] - d[3, q]
                    base = (n * th + ty) * tw
                    for i in range(4):
                        ai = a[i]
                        v0, v1 = v[4 * i, c], v[4 * i + 1, c]
                        v2, v3 = v[4 * i + 2, c], v[4 * i + 3, c]
                        for tx in range(tw):
                            q = 2 * tx
                            v0[base + tx] = ai[q] - ai[q + 2]
                            v1[base + tx] = ai[q + 1] + ai[q + 2]
                            v2[base + tx] = ai[q + 2] - ai[q + 1]
                            v3[base + tx] = ai[q + 1] - ai[q + 3]

    @numba.njit(cache=True, fastmath=False, nogil=True)
    def k_out(m, lo, hi, ho, wo, th, tw, bias, has_bias, y):  # pragma: no cover - compiled
        n_ = y.shape[1]
        s = np.empty((2, 4, tw), dtype=y.dtype)
        r = np.empty(2 * tw, dtype=y.dtype)
        for o in range(lo, hi):
            b = bias[o] if has_bias else 0
            for n in range(n_):
                for ty in range(th):
                    base = (n * th + ty) * tw
                    for j in range(4):  # A^T down the tile's rows, as runs over tx
                        m0 = m[j, o, base : base + tw]
                        m1 = m[4 + j, o, base : base + tw]
                        m2 = m[8 + j, o, base : base + tw]
                        m3 = m[12 + j, o, base : base + tw]
                        s0, s1 = s[0, j], s[1, j]
                        for tx in range(tw):
                            s0[tx] = m0[tx] + m1[tx] + m2[tx]
                            s1[tx] = m1[tx] - m2[tx] - m3[tx]
                    for a in range(2):
                        yy = 2 * ty + a
                        if yy >= ho:
                            break
                        sa = s[a]
                        for tx in range(tw):
                            r[2 * tx] = sa[0, tx] + sa[1, tx] + sa[2, tx] + b
                            r[2 * tx + 1] = sa[1, tx] - sa[2, tx] - sa[3, tx] + b
                        dst = y[o, n, yy]
                        for q in range(wo):
                            dst[q] = r[q]

    @numba.njit(cache=True, fastmath=False, nogil=True)
    def k_out_t(g, lo, hi, th, tw, dm):  # pragma: no cover - compiled
        _, n_, ho, wo = g.shape
        rows = np.zeros((2, 2 * tw + 2), dtype=dm.dtype)
        e = np.empty((4, 2 * tw + 2), dtype=dm.dtype)
        for o in range(lo, hi):
            for n in range(n_):
                for ty in range(th):
                    for a in range(2):
                        yy = 2 * ty + a
                        if yy < ho:
                            src = g[o, n, yy]
                            for q in range(wo):
                                rows[a, q] = src[q]
                        else:
                            rows[a, :wo] = 0
                    for q in range(wo):  # A down the rows: (g0, g0 + g1, g0 - g1, -g1)
                        g0, g1 = rows[0, q], rows[1, q]
                        e[0, q] = g0
                        e[1, q] = g0 + g1
                        e[2, q] = g0 - g1
                        e[3, q] = -g1
                    for i in range(4):
                        e[i, wo:] = 0
                    base = (n * th + ty) * tw
                    for i in range(4):
                        ei = e[i]
                        d0, d1 = dm[4 * i, o], dm[4 * i + 1, o]
                        d2, d3 = dm[4 * i + 2, o], dm[4 * i + 3, o]
                        for tx in range(tw):
                            u0, u1 = ei[2 * tx], ei[2 * tx + 1]
                            d0[base + tx] = u0
                            d1[base + tx] = u0 + u1
                            d2[base + tx] = u0 - u1
                            d3[base + tx] = -u1

    @numba.njit(cache=True, fastmath=False, nogil=True)
    def k_in_t(dv, lo, hi, pt, pl, th, tw, gx):  # pragma: no cover - compiled
        # per tile row: B^T across the columns and down the rows as runs over the tiles
        # (contiguous reads of dV), then each of the 4x4 offsets added into the plane's rows
        # with stride 2 (no two tiles of one offset touch the same element)
        _, n_, h, wd = gx.shape
        hp, wp = 2 * th + 2, 2 * tw + 2
        plane = np.empty((hp, wp), dtype=gx.dtype)
        z = np.empty((4, 4, tw), dtype=gx.dtype)
        rr = np.empty((4, 4, tw), dtype=gx.dtype)
        for c in range(lo, hi):
            for n in range(n_):
                plane[:, :] = 0
                for ty in range(th):
                    base = (n * th + ty) * tw
                    for a in range(4):
                        v0 = dv[4 * a, c, base : base + tw]
                        v1 = dv[4 * a + 1, c, base : base + tw]
                        v2 = dv[4 * a + 2, c, base : base + tw]
                        v3 = dv[4 * a + 3, c, base : base + tw]
                        za = z[a]
                        for tx in range(tw):
                            za[0, tx] = v0[tx]
                            za[1, tx] = v1[tx] - v2[tx] + v3[tx]
                            za[2, tx] = v1[tx] + v2[tx] - v0[tx]
                            za[3, tx] = -v3[tx]
                    for j in range(4):
                        for tx in range(tw):
                            z0, z1, z2, z3 = z[0, j, tx], z[1, j, tx], z[2, j, tx], z[3, j, tx]
                            rr[0, j, tx] = z0
                            rr[1, j, tx] = z1 - z2 + z3
                            rr[2, j, tx] = z1 + z2 - z0
                            rr[3, j, tx] = -z3
                    for i in range(4):
                        row = plane[2 * ty + i]
                        for j in range(4):
                            ri = rr[i, j]
                            for tx in range(tw):
                                row[2 * tx + j] += ri[tx]
                for yy in range(h):
                    py = yy + pt
                    dst = gx[c, n, yy]
                    if py < hp:
                        src = plane[py]
                        for xx in range(wd):
                            px = xx + pl
                            dst[xx] = src[px] if px < wp else 0
                    else:
                        dst[:] = 0

    return k_in, k_out, k_out_t, k_in_t


@winograd_in.implement("cpu", "numba", available=numba_available)
def _in_numba(x, pt, pl, th, tw):
    if not (isinstance(x, np.ndarray) and x.dtype in (np.float32, np.float64)):
        return winograd_in.reference(x, pt, pl, th, tw)
    c, n = x.shape[:2]
    v = np.empty((16, c, n * th * tw), dtype=x.dtype)
    k_in = _kernels()[0]
    split_rows(lambda lo, hi: k_in(x, lo, hi, pt, pl, th, tw, v), c, v.size)
    return v


@winograd_out.implement("cpu", "numba", available=numba_available)
def _out_numba(m, ho, wo, th, tw, bias=None):
    if not (isinstance(m, np.ndarray) and m.dtype in (np.float32, np.float64)
            and m.flags.c_contiguous):
        return winograd_out.reference(m, ho, wo, th, tw, bias)
    _, co, t = m.shape
    n = t // (th * tw)
    y = np.empty((co, n, ho, wo), dtype=m.dtype)
    has = bias is not None
    b = np.ascontiguousarray(bias, dtype=m.dtype) if has else np.zeros(1, m.dtype)
    k_out = _kernels()[1]
    split_rows(lambda lo, hi: k_out(m, lo, hi, ho, wo, th, tw, b, has, y), co, m.size)
    return y


@winograd_out_t.implement("cpu", "numba", available=numba_available)
def _out_t_numba(g, th, tw):
    if not (isinstance(g, np.ndarray) and g.dtype in (np.float32, np.float64)):
        return winograd_out_t.reference(g, th, tw)
    co, n = g.shape[:2]
    dm = np.empty((16, co, n * th * tw), dtype=g.dtype)
    k = _kernels()[2]
    split_rows(lambda lo, hi: k(g, lo, hi, th, tw, dm), co, dm.size)
    return dm


@winograd_in_t.implement("cpu", "numba", available=numba_available)
def _in_t_numba(dv, n, h, wd, pt, pl, th, tw):
    if not (isinstance(dv, np.ndarray) and dv.dtype in (np.float32, np.float64)
            and dv.flags.c_contiguous):
        return winograd_in_t.reference(dv, n, h, wd, pt, pl, th, tw)
    c = dv.shape[1]
    gx = np.empty((c, n, h, wd), dtype=dv.dtype)
    k = _kernels()[3]
    split_rows(lambda lo, hi: k(dv, lo, hi, pt, pl, th, tw, gx), c, dv.size)
    return gx


def winograd_weight_t(du):
    """The transpose of :func:`winograd_weight`: dU (16, Co, C) -> (Co, C, 3, 3)."""
    xp = xp_of(du)
    _, co, c = du.shape
    g = xp.asarray(_G, dtype=du.dtype)
    t1 = g.T @ du.reshape(4, 4 * co * c)  # (3, [b, oc])
    t2 = t1.reshape(3, 4, co * c).transpose(0, 2, 1) @ g  # (3, OC, 3): [i, oc, j]
    return xp.ascontiguousarray(t2.transpose(1, 0, 2)).reshape(co, c, 3, 3)


CHUNK_BYTES = 3 << 19  # a chunk's transformed tiles (16 x C x tiles) stay in cache
CHUNK_CHANNELS = 96  # wider layers are compute-bound: their GEMMs gain nothing from chunks
CHUNK_TILES = 256  # and a GEMM over fewer tiles runs slower


def image_chunks(n, c, th, tw, itemsize):
    """Image ranges whose transformed tiles take about ``CHUNK_BYTES`` (at least
    ``CHUNK_TILES`` tiles) when ``c`` (the wider side) is at most ``CHUNK_CHANNELS`` and one
    image's tiles fit: the 16 tile GEMMs then read V from cache instead of streaming it from
    memory (64->64 at 32x32, batch 32, fwd+bwd 93 -> 87 ms; 32->64 at 28x28, batch 64,
    82 -> 76); else one range."""
    image = 16 * c * th * tw * itemsize
    if c > CHUNK_CHANNELS or image > CHUNK_BYTES:  # (one 56x56 image at 64 channels: 3.2
        return [(0, n)]  # MB; chunks of it measured slower, 63 -> 68 ms, than one range)
    per = max(CHUNK_BYTES // image, -(-CHUNK_TILES // (th * tw)))
    return [(lo, min(n, lo + per)) for lo in range(0, n, per)]


def winograd_conv3x3(xcn, w, bias, pt, pl, ho, wo):
    """Channels-first (C, N, H, W) input (any strides) -> (Co, N, ho, wo) output of the 3x3
    stride-1 correlation with ``pt``/``pl`` zeros before the rows/columns (and as many as
    needed after), in image chunks."""
    th, tw = -(-ho // 2), -(-wo // 2)
    c, n = xcn.shape[:2]
    co = w.shape[0]
    u = winograd_weight(w)
    chunks = image_chunks(n, max(c, co), th, tw, xcn.dtype.itemsize)
    if len(chunks) == 1:
        return winograd_out(mm(u, winograd_in(xcn, pt, pl, th, tw)), ho, wo, th, tw, bias)
    y = xp_of(xcn).empty((co, n, ho, wo), dtype=xcn.dtype)
    for lo, hi in chunks:
        v = winograd_in(xcn[:, lo:hi], pt, pl, th, tw)
        y[:, lo:hi] = winograd_out(mm(u, v), ho, wo, th, tw, bias)  # 16 GEMMs (Co, C) x (C, T)
    return y


def winograd_backward(xt, w, g, geom, needs, padded=True):
    """Gradients (input, weight, bias) of :func:`winograd_conv3x3` as the forward's exact
    transpose: ``xt`` the padded channels-first input (``padded=False``: the input itself,
    channels-first, any strides; its tiles are read with the padding as zeros, round 39),
    ``g`` (N, Co, Ho, Wo), ``geom``
    :class:`.conv.Conv2dFn`'s 12 numbers, ``needs`` the three flags. Weight and input
    gradients are 16 GEMMs each, in image chunks (:func:`image_chunks`)."""
    n, c, h, wd, _, _, _, _, ph, pw, ho, wo = geom
    th, tw = -(-ho // 2), -(-wo // 2)
    nx, nw, nb = needs
    gcn = g.transpose(1, 0, 2, 3)  # (Co, N, Ho, Wo); C-contiguous when g is ours
    gx = gw = gb = None
    if nb:
        gb = gcn.sum(axis=(1, 2, 3))
    if not (nx or nw):
        return gx, gw, gb
    xp = xp_of(g)
    co = w.shape[0]
    u = winograd_weight(w) if nx else None
    du = xp.zeros((16, co, c), dtype=xt.dtype) if nw else None
    chunks = image_chunks(n, max(c, co), th, tw, xt.dtype.itemsize)
    gxc = xp.empty((c, n, h, wd), dtype=xt.dtype) if nx and len(chunks) > 1 else None
    for lo, hi in chunks:  # per image chunk, the tiles stay in cache between the steps
        dm = winograd_out_t(gcn[:, lo:hi], th, tw)  # (16, Co, T)
        if nw:
            v = winograd_in(xt[:, lo:hi], 0 if padded else ph, 0 if padded else pw, th,
                            tw)  # rebuilt, not kept
            du += mm(dm, v.transpose(0, 2, 1))
        if nx:
            part = winograd_in_t(mm(u.transpose(0, 2, 1), dm), hi - lo, h, wd, ph, pw,
                                 th, tw)
            if len(chunks) == 1:
                gxc = part
            else:
                gxc[:, lo:hi] = part
    if nw:
        gw = winograd_weight_t(du).reshape(w.shape)
    if nx:
        gx = gxc.transpose(1, 0, 2, 3)
    return gx, gw, gb
