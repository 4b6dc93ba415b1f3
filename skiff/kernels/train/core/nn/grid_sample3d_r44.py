"""Round 44 (h12): torch's ``F.grid_sample`` on 5-D volumes, (N, C, D, H, W) input and an
(N, Do, Ho, Wo, 3) grid (x, y, z in [-1, 1]): ``"bilinear"`` (trilinear: the 8 corners) and
``"nearest"`` (torch's round-half-to-even), each padding mode and ``align_corners`` as the 2-D
node (:mod:`.grid_sample`), one node with torch's gradients for the input and the grid (was a
ValueError: volumes not supported; torch has no bicubic for volumes either)."""

from __future__ import annotations

import itertools

import numpy as np

from ..autograd import Function, xp_of

__all__ = ["GridSample3dFn"]


class GridSample3dFn(Function):
    """``source``: the 2-D node's coordinate map (:func:`.grid_sample._source`, passed in:
    that module imports this one)."""

    def forward(self, x, grid, mode="bilinear", padding="zeros", align=False, source=None):
        xp = xp_of(x)
        n, c, d, h, w = x.shape
        outs = grid.shape[1:4]
        flat = x.reshape(n, c, d * h * w)
        self.shape, self.mode = x.shape, mode
        pix = [source(xp, grid[..., k], size, padding, align)
               for k, size in enumerate((w, h, d))]  # (coordinate, d coordinate / d grid)
        if mode == "nearest":
            cs = [xp.rint(p).astype(np.int64) for p, _ in pix]
            corners = [(cs, [xp.ones_like(pix[0][0])] * 3, (0, 0, 0))]
        else:
            lows = [xp.floor(p) for p, _ in pix]
            fr = [p - lo for (p, _), lo in zip(pix, lows)]
            lows = [lo.astype(np.int64) for lo in lows]
            corners = []
            for bits in itertools.product((0, 1), repeat=3):  # x, y, z: low or high
                cs = [lo + b for lo, b in zip(lows, bits)]
                ws = [f if b else 1 - f for f, b in zip(fr, bits)]
                corners.append((cs, ws, bits))
        out = xp.zeros((n, c, int(np.prod(outs))), dtype=x.dtype)
        kept, self.inside = [], []  # (the masks: the double-backward rule's, round 47)
        for (cx, cy, cz), ws, bits in corners:
            inside = (cx >= 0) & (cx < w) & (cy >= 0) & (cy < h) & (cz >= 0) & (cz < d)
            self.inside.append(inside.reshape(n, 1, -1))
            idx = ((xp.clip(cz, 0, d - 1) * h + xp.clip(cy, 0, h - 1)) * w
                   + xp.clip(cx, 0, w - 1)).reshape(n, 1, -1)
            m = (ws[0] * ws[1] * ws[2] * inside).reshape(n, 1, -1).astype(x.dtype)
            v = xp.take_along_axis(flat, xp.broadcast_to(idx, (n, c, idx.shape[2])), axis=2)
            v = v * inside.reshape(n, 1, -1)
            out += v * m
            kept.append((idx, m, v, ws, bits))
        self.kept, self.mults = kept, [g for _, g in pix]
        return out.reshape(n, c, *outs)

    def backward(self, g):
        xp = xp_of(g)
        n, c, d, h, w = self.shape
        outs = g.shape[2:]
        gf = g.reshape(n, c, -1)
        gx_in = None
        if self.needs_input_grad[0]:
            base = (xp.arange(n * c) * (d * h * w)).reshape(n, c, 1)
            idx = xp.concatenate([(base + k[0]).reshape(-1) for k in self.kept])
            wts = xp.concatenate([(gf * k[1]).reshape(-1) for k in self.kept])
            gx_in = xp.bincount(idx, weights=wts, minlength=n * c * d * h * w).reshape(
                self.shape).astype(g.dtype)
        g_grid = None
        if len(self.needs_input_grad) > 1 and self.needs_input_grad[1]:
            if self.mode == "nearest":
                return gx_in, xp.zeros((n, *outs, 3), dtype=g.dtype)
            parts = []
            for axis in range(3):  # d out / d coordinate: the weight's factor on it is +-1
                dsum = 0
                for _, _, v, ws, bits in self.kept:
                    others = [ws[k] for k in range(3) if k != axis]
                    sign = 1.0 if bits[axis] else -1.0
                    dsum = dsum + v * (sign * others[0] * others[1]).reshape(n, 1, -1)
                parts.append((gf * dsum).sum(1).reshape(n, *outs) * self.mults[axis])
            g_grid = xp.stack(parts, axis=-1).astype(g.dtype)
        return gx_in, g_grid
