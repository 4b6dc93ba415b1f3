"""torch's spatial-transformer pair: ``F.affine_grid(theta, size, align_corners)`` (on tensor
ops: the base grid times ``theta``; 2-D (N, 2, 3) and 3-D (N, 3, 4)) and
``F.grid_sample(input, grid, mode, padding_mode, align_corners)`` on 4-D input, one node
(``GridSample2dFn``) with torch's gradients for the input and the grid.

Modes ``"bilinear"`` and ``"nearest"`` (torch's round-half-to-even), padding ``"zeros"``,
``"border"`` and ``"reflection"`` (the coordinate folded back and forth, the sign of its
gradient flipped on each fold, as torch's). Every step is an ``xp`` expression (gathers with
``take_along_axis``, the input's gradient one ``bincount``): nothing is read back to the host.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, xp_of
from ..tensor import Tensor

__all__ = ["affine_grid", "grid_sample", "GridSample2dFn"]


def _fma_steps(xp, origin, step, m, dtype):
    """``origin + step * m`` rounded once (torch's linspace kernel fuses the multiply-add):
    the product's and the sum's rounding errors recovered exactly (Dekker's product on
    Veltkamp's split, Knuth's two-sum) and added back."""
    split = 134217729.0 if np.dtype(dtype).itemsize == 8 else 4097.0
    a = xp.full(m.shape, step, dtype=dtype)
    p = a * m
    c = a * split
    ah = c - (c - a)
    al = a - ah
    c = m * split
    mh = c - (c - m)
    ml = m - mh
    err = ((ah * mh - p) + ah * ml + al * mh) + al * ml
    total = origin + p  # and its rounding error (Knuth's two-sum)
    back = total - origin
    err2 = (origin - (total - back)) + (p - back)
    return total + (err2 + err)


def _base(xp, n, align, dtype):
    if n == 1:
        return xp.zeros(1, dtype=dtype)
    # torch's linspace: the first half counted up from -1, the second down from 1, each a
    # fused multiply-add (numpy counts every point from -1: an ulp apart, enough to move a
    # point across a border's kink, where the gradient jumps)
    i = xp.arange(n, dtype=dtype)
    step = 2.0 / (n - 1)
    v = xp.where(i < n // 2, _fma_steps(xp, -1.0, step, i, dtype),
                 _fma_steps(xp, 1.0, -step, (n - 1) - i, dtype)).astype(dtype)
    return v if align else v * (n - 1) / n  # torch: times n - 1, then over n


def affine_grid(theta, size, align_corners=False):
    """The sampling grid (N, H, W, 2) of ``theta`` (N, 2, 3) for an output of ``size``
    (N, C, H, W), or (N, D, H, W, 3) of (N, 3, 4) for (N, C, D, H, W); x first, as torch's."""
    size = tuple(int(s) for s in size)
    spatial = len(size) - 2
    if spatial not in (2, 3) or tuple(theta.shape[1:]) != (spatial, spatial + 1) or \
            theta.shape[0] != size[0]:
        raise ValueError(f"affine_grid: theta (N, 2, 3) with size (N, C, H, W), or (N, 3, 4) "
                         f"with (N, C, D, H, W); got theta {tuple(theta.shape)}, size {size}")
    xp, dt = theta.xp, theta.dtype
    axes = [_base(xp, s, align_corners, dt) for s in size[2:]]  # (D,) H, W
    mesh = xp.meshgrid(*axes, indexing="ij")
    cols = [m.reshape(1, -1, 1) for m in reversed(mesh)]  # x, y (, z)
    # torch's bmm of the base by theta^T rounds as plain multiply-adds in order,
    # ((x t0 + y t1) + t2); BLAS's fused ones differ by an ulp, enough to move a point
    # across a pixel centre, where grid_sample's gradient of the grid jumps
    grid = theta[:, None, :, spatial]
    terms = [Tensor(col, dtype=dt) * theta[:, None, :, j] for j, col in enumerate(cols)]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    grid = total + grid
    return grid.reshape(size[0], *size[2:], spatial)


def _unnormalize(c, size, align):
    """Pixel coordinates as torch's CPU kernel rounds them: ``fma(c + 1, scale, offset)``
    (one rounding, not ``((c + 1) size - 1) / 2``'s three). An identity ``affine_grid`` lands
    on pixel centres, where the bilinear gradient of the grid jumps from one neighbour's
    difference to the other's: an ulp there decided a spatial transformer's first step."""
    if align:
        return (c + 1) * ((size - 1) / 2), (size - 1) / 2
    return _fma_steps(xp_of(c), -0.5, size / 2, c + 1, c.dtype), size / 2


def _clip(xp, c, size):
    grad = ((c > 0) & (c < size - 1)).astype(c.dtype)
    return xp.clip(c, 0, size - 1), grad


def _reflect(xp, c, twice_low, twice_high):
    if twice_low == twice_high:
        return xp.zeros_like(c), xp.zeros_like(c)
    lo, span = twice_low / 2, (twice_high - twice_low) / 2
    c = c - lo
    sign = xp.where(c < 0, -1.0, 1.0).astype(c.dtype)
    c = xp.abs(c)
    extra = xp.fmod(c, span)
    odd = (xp.floor(c / span) % 2) == 1
    out = xp.where(odd, span - extra, extra) + lo
    return out, xp.where(odd, -sign, sign)


def _source(xp, c, size, padding, align):
    """Pixel coordinates of normalised ``c`` and d(pixel)/d(c) (torch's set_grad forms)."""
    pix, mult = _unnormalize(c, size, align)
    grad = xp.full(c.shape, mult, dtype=c.dtype)
    if padding == "border":
        pix, g = _clip(xp, pix, size)
        grad = grad * g
    elif padding == "reflection":
        pix, g = (_reflect(xp, pix, 0, 2 * (size - 1)) if align
                  else _reflect(xp, pix, -1, 2 * size - 1))
        pix2, g2 = _clip(xp, pix, size)
        pix, grad = pix2, grad * g * g2
    return pix, grad


_A = -0.75  # torch's bicubic convolution constant


def _cubic(t):
    """The four cubic-convolution weights of taps -1, 0, 1, 2 at fraction ``t`` and their
    derivatives in ``t`` (torch's ``get_cubic_upsample_coefficients``)."""
    def c1(x):
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    def d1(x):
        return (3 * (_A + 2) * x - 2 * (_A + 3)) * x

    def c2(x):
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A

    def d2(x):
        return (3 * _A * x - 10 * _A) * x + 8 * _A

    w = [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]
    dw = [d2(t + 1), d1(t), -d1(1 - t), -d2(2 - t)]
    return w, dw


def _tap(xp, k, size, padding, align):
    """torch's ``compute_coordinates`` of an integer tap (border: clipped; reflection:
    reflected then clipped; zeros: as it is), as int64."""
    k = k.astype(np.float64)
    if padding == "border":
        k = xp.clip(k, 0, size - 1)
    elif padding == "reflection":
        k = (_reflect(xp, k, 0, 2 * (size - 1)) if align else
             _reflect(xp, k, -1, 2 * size - 1))[0]
        k = xp.clip(k, 0, size - 1)
    return k.astype(np.int64)


class GridSample2dFn(Function):
    def forward(self, x, grid, mode="bilinear", padding="zeros", align=False):
        xp = xp_of(x)
        n, c, h, w = x.shape
        ho, wo = grid.shape[1:3]
        flat = x.reshape(n, c, h * w)
        self.shape, self.mode = x.shape, mode
        if mode == "bicubic":  # torch's: unnormalized only, the padding applies to each tap
            ix, mx = _unnormalize(grid[..., 0], w, align)
            iy, my = _unnormalize(grid[..., 1], h, align)
            x0, y0 = xp.floor(ix), xp.floor(iy)
            tx, ty = ix - x0, iy - y0
            (wx, dwx), (wy, dwy) = _cubic(tx), _cubic(ty)
            x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
            out = xp.zeros((n, c, ho * wo), dtype=x.dtype)
            kept, grads = [], []
            for j in range(4):
                cy = _tap(xp, y0 - 1 + j, h, padding, align)
                for i in range(4):
                    cx = _tap(xp, x0 - 1 + i, w, padding, align)
                    inside = (cx >= 0) & (cx < w) & (cy >= 0) & (cy < h)
                    idx = (xp.clip(cy, 0, h - 1) * w + xp.clip(cx, 0, w - 1)).reshape(n, 1, -1)
                    m = (wx[i] * wy[j] * inside).reshape(n, 1, -1).astype(x.dtype)
                    v = xp.take_along_axis(flat, xp.broadcast_to(idx, (n, c, idx.shape[2])),
                                           axis=2) * inside.reshape(n, 1, -1)
                    out += v * m
                    kept.append((idx, m, v))
                    grads.append(((dwx[i] * wy[j]).reshape(n, 1, -1),
                                  (wx[i] * dwy[j]).reshape(n, 1, -1)))
            self.kept, self.cubic_grads, self.mults = kept, grads, (mx, my)
            return out.reshape(n, c, ho, wo)
        ix, gx = _source(xp, grid[..., 0], w, padding, align)
        iy, gy = _source(xp, grid[..., 1], h, padding, align)
        if mode == "nearest":
            cx, cy = xp.rint(ix).astype(np.int64), xp.rint(iy).astype(np.int64)
            corners = [(cx, cy, xp.ones_like(ix))]
        else:
            x0, y0 = xp.floor(ix), xp.floor(iy)
            fx, fy = ix - x0, iy - y0
            x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
            corners = [(x0, y0, (1 - fx) * (1 - fy)), (x0 + 1, y0, fx * (1 - fy)),
                       (x0, y0 + 1, (1 - fx) * fy), (x0 + 1, y0 + 1, fx * fy)]
        out = xp.zeros((n, c, ho * wo), dtype=x.dtype)
        kept, self.inside = [], []  # (the masks: the double-backward rule's, round 47)
        for cx, cy, wt in corners:
            inside = (cx >= 0) & (cx < w) & (cy >= 0) & (cy < h)
            self.inside.append(inside.reshape(n, 1, -1))
            idx = (xp.clip(cy, 0, h - 1) * w + xp.clip(cx, 0, w - 1)).reshape(n, 1, -1)
            m = (wt * inside).reshape(n, 1, -1).astype(x.dtype)
            v = xp.take_along_axis(flat, xp.broadcast_to(idx, (n, c, idx.shape[2])), axis=2)
            v = v * inside.reshape(n, 1, -1)
            out += v * m
            kept.append((idx, m, v))
        if mode != "nearest":
            self.save_for_backward(fx.reshape(n, 1, -1), fy.reshape(n, 1, -1), gx, gy)
        self.kept = kept
        return out.reshape(n, c, ho, wo)

    def backward(self, g):
        xp = xp_of(g)
        n, c, h, w = self.shape
        ho, wo = g.shape[2:]
        gf = g.reshape(n, c, -1)
        gx_in = None
        if self.needs_input_grad[0]:
            base = (xp.arange(n * c) * (h * w)).reshape(n, c, 1)
            idx = xp.concatenate([(base + i).reshape(-1) for i, _, _ in self.kept])
            wts = xp.concatenate([(gf * m).reshape(-1) for _, m, _ in self.kept])
            gx_in = xp.bincount(idx, weights=wts, minlength=n * c * h * w).reshape(
                self.shape).astype(g.dtype)
        g_grid = None
        if len(self.needs_input_grad) > 1 and self.needs_input_grad[1]:
            if self.mode == "nearest":
                g_grid = xp.zeros((n, ho, wo, 2), dtype=g.dtype)
            elif self.mode == "bicubic":
                mx, my = self.mults
                dx = sum(v * ddx for (_, _, v), (ddx, _) in zip(self.kept, self.cubic_grads))
                dy = sum(v * ddy for (_, _, v), (_, ddy) in zip(self.kept, self.cubic_grads))
                gix = (gf * dx).sum(1).reshape(n, ho, wo) * mx
                giy = (gf * dy).sum(1).reshape(n, ho, wo) * my
                g_grid = xp.stack([gix, giy], axis=-1).astype(g.dtype)
            else:
                fx, fy, mx, my = self.saved
                (_, _, v00), (_, _, v10), (_, _, v01), (_, _, v11) = self.kept
                dx = (v10 - v00) * (1 - fy) + (v11 - v01) * fy
                dy = (v01 - v00) * (1 - fx) + (v11 - v10) * fx
                gix = (gf * dx).sum(1).reshape(n, ho, wo) * mx
                giy = (gf * dy).sum(1).reshape(n, ho, wo) * my
                g_grid = xp.stack([gix, giy], axis=-1)
        return gx_in, g_grid


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros",  # noqa: A002
                align_corners=None):
    """torch's ``F.grid_sample`` on (N, C, H, W) input and an (N, Ho, Wo, 2) grid in [-1, 1]
    (x, y), or (round 44) (N, C, D, H, W) and (N, Do, Ho, Wo, 3) (x, y, z);
    ``align_corners=None`` is False with no warning."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"grid_sample: mode must be 'bilinear', 'nearest' or 'bicubic', got "
                         f"{mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"grid_sample: padding_mode must be 'zeros', 'border' or "
                         f"'reflection', got {padding_mode!r}")
    volume = input.ndim == 5 and grid.ndim == 5 and grid.shape[-1] == 3
    if not volume and (input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2) or \
            grid.shape[0] != input.shape[0]:
        raise ValueError(f"grid_sample: input (N, C, H, W) and grid (N, Ho, Wo, 2), or "
                         f"(N, C, D, H, W) and (N, Do, Ho, Wo, 3); got {tuple(input.shape)} "
                         f"and {tuple(grid.shape)}")
    if volume and mode == "bicubic":
        raise ValueError("grid_sample: bicubic interpolation only supports 4D input (torch's)")
    if grid.dtype != input.dtype:
        raise TypeError(f"grid_sample: grid dtype {grid.dtype} differs from the input's "
                        f"{input.dtype}: cast one (torch's rule)")
    if volume:  # round 44 (h12)
        from .grid_sample3d_r44 import GridSample3dFn

        return GridSample3dFn.apply(input, grid, mode=mode, padding=padding_mode,
                                    align=bool(align_corners), source=_source)
    return GridSample2dFn.apply(input, grid, mode=mode, padding=padding_mode,
                                align=bool(align_corners))
