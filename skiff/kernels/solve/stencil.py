"""Cell-centred finite-volume stencils on structured grids, held matrix-free.

Every grid operator is stored in 3D form ``(n0, n1, n2)`` (a 2D grid is ``(1, n0, n1)``) as
the couplings of its faces::

    (A u)[c] = diag[c] * u[c] - sum_{faces f of c, f interior} coupling[f] * u[neighbour(c, f)]

Couplings already hold ``k_face / h**2``; a boundary face holds its Dirichlet coupling
``2 k / h**2`` (ghost value at h/2) or 0 (Neumann), so ``diag`` is the sum of a cell's six face
couplings. A cell whose couplings are all zero (masked out, inside a body) gets ``diag = 1``,
an identity row with a zero right-hand side. Two storages:

* :class:`VarStencil`: a coupling array per axis, shape ``n_a + 1`` along its axis;
* :class:`ConstStencil`: one interior coupling per axis plus the two boundary couplings, for
  uniform coefficients without a mask (reads only ``u``: the fast path of Poisson problems).

A periodic axis (``periodic[axis]``) keeps its wrap-around coupling (between the first and the
last cell) in both boundary faces, so ``diag`` already counts it; the fused kernels do not see
the wrap neighbour and :mod:`.periodic` adds its term as a slab correction (the assembled
:meth:`to_csr` holds it). Coarsening keeps it: the two end faces stay equal.

Coarse operators (:meth:`coarsen`) re-discretise by averaging the fine couplings that make up a
coarse face (the series/parallel estimate of the coarse transmissibility), scaled by
``(h/H)**2``. Masked regions and coefficient jumps carry over without a mask array.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["VarStencil", "ConstStencil", "coarsen_factors", "to_3d_shape"]


def to_3d_shape(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """The internal 3D shape of a 2D or 3D grid (a 2D grid gets a leading axis of 1)."""
    if len(shape) == 2:
        return (1, int(shape[0]), int(shape[1]))
    if len(shape) == 3:
        return tuple(int(s) for s in shape)
    raise ValueError(f"grids are 2D or 3D, got shape {shape!r}")


def coarsen_factors(shape3: tuple[int, int, int], strengths=None) -> tuple[int, int, int]:
    """Per axis 2 where the axis halves (even and at least 4 cells), else 1.

    With ``strengths`` (the mean coupling per axis) an axis coupled more than 4 times weaker
    than the strongest halvable one is not halved (semi-coarsening): on anisotropic grids the
    point smoother then still smooths the error along the coarsened axes, and halving the
    strong axis divides its coupling by 4 until the axes are balanced."""
    f = [2 if (n % 2 == 0 and n >= 4) else 1 for n in shape3]
    if strengths is not None and any(x == 2 for x in f):
        top = max(float(strengths[ax]) for ax in range(3) if f[ax] == 2)
        g = [2 if (f[ax] == 2 and float(strengths[ax]) * 4.0 > top * 0.999) else 1
             for ax in range(3)]
        if any(x == 2 for x in g):
            f = g
    return tuple(f)


def _face_avg(c: np.ndarray, axis: int, f: tuple[int, int, int]) -> np.ndarray:
    """Coarse couplings along ``axis``: every other fine face, averaged over the children in the
    other coarsened axes, scaled by (h/H)^2."""
    sl = [slice(None)] * 3
    sl[axis] = slice(None, None, f[axis])
    c = c[tuple(sl)]
    n0, n1, n2 = c.shape
    shape = []
    for ax, n in enumerate((n0, n1, n2)):
        fa = f[ax] if ax != axis else 1
        shape += [n // fa, fa]
    c = c.reshape(shape).mean(axis=(1, 3, 5))
    return c / (f[axis] ** 2)


@dataclass
class VarStencil:
    """Face couplings per axis (``c0`` shape (n0+1, n1, n2), …) and the diagonal."""

    c0: np.ndarray
    c1: np.ndarray
    c2: np.ndarray
    diag: np.ndarray
    extra: np.ndarray | None = None   # diagonal couplings to an embedded Dirichlet wall
    periodic: tuple[bool, bool, bool] = (False, False, False)   # wrap-around axes

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.diag.shape

    @classmethod
    def from_faces(cls, c0, c1, c2, extra=None, periodic=(False, False, False)) -> VarStencil:
        c0, c1, c2 = (np.ascontiguousarray(c, dtype=np.float64) for c in (c0, c1, c2))
        diag = c0[:-1] + c0[1:] + c1[:, :-1] + c1[:, 1:] + c2[:, :, :-1] + c2[:, :, 1:]
        if extra is not None:
            extra = np.ascontiguousarray(extra, dtype=np.float64)
            diag = diag + extra
        diag = np.ascontiguousarray(np.where(diag > 0, diag, 1.0))
        return cls(c0, c1, c2, diag, extra, tuple(bool(p) for p in periodic))

    def coarsen(self, f) -> VarStencil:
        extra = None
        if self.extra is not None:
            # a wall coupling scales as 1/h^2 like the Dirichlet side couplings: the mean of
            # the children (the part of the coarse cell the wall crosses) over 2
            n0, n1, n2 = self.shape
            extra = self.extra.reshape(n0 // f[0], f[0], n1 // f[1], f[1], n2 // f[2],
                                       f[2]).mean(axis=(1, 3, 5)) / 2.0
        return VarStencil.from_faces(_face_avg(self.c0, 0, f), _face_avg(self.c1, 1, f),
                                     _face_avg(self.c2, 2, f), extra, self.periodic)

    def arrays(self):
        return (self.c0, self.c1, self.c2, self.diag)

    def strengths(self) -> tuple[float, float, float]:
        """Mean interior coupling per axis (0 for an axis of one cell)."""
        out = []
        for ax, c in enumerate((self.c0, self.c1, self.c2)):
            inner = [slice(None)] * 3
            inner[ax] = slice(1, -1)
            w = c[tuple(inner)]
            out.append(float(w.mean()) if w.size else 0.0)
        return tuple(out)

    def to_var(self) -> VarStencil:
        return self

    def to_csr(self) -> sp.csr_matrix:
        """The assembled matrix (for references, AMG and the coarsest direct solve)."""
        n0, n1, n2 = self.shape
        idx = np.arange(n0 * n1 * n2).reshape(n0, n1, n2)
        rows = [idx.ravel()]
        cols = [idx.ravel()]
        vals = [self.diag.ravel()]
        for ax, c in enumerate((self.c0, self.c1, self.c2)):
            inner = [slice(None)] * 3
            inner[ax] = slice(1, -1)
            w = c[tuple(inner)]                       # interior faces along ax
            lo = [slice(None)] * 3
            hi = [slice(None)] * 3
            lo[ax] = slice(None, -1)
            hi[ax] = slice(1, None)
            a, b = idx[tuple(lo)].ravel(), idx[tuple(hi)].ravel()
            w = w.ravel()
            keep = w != 0
            rows += [a[keep], b[keep]]
            cols += [b[keep], a[keep]]
            vals += [-w[keep], -w[keep]]
            if self.periodic[ax] and c.shape[ax] > 2:   # the wrap face joins cells 0 and n-1
                first = [slice(None)] * 3
                last = [slice(None)] * 3
                first[ax], last[ax] = 0, -1
                a, b = idx[tuple(first)].ravel(), idx[tuple(last)].ravel()
                w = c[tuple(first)].ravel()
                keep = w != 0
                rows += [a[keep], b[keep]]
                cols += [b[keep], a[keep]]
                vals += [-w[keep], -w[keep]]
        n = idx.size
        return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(n, n))


@dataclass
class ConstStencil:
    """Uniform couplings ``a[axis]`` and boundary couplings ``blo[axis]``, ``bhi[axis]``."""

    shape: tuple[int, int, int]
    a: tuple[float, float, float]
    blo: tuple[float, float, float]
    bhi: tuple[float, float, float]
    periodic: tuple[bool, bool, bool] = (False, False, False)   # wrap-around axes

    def __post_init__(self):
        self.a3 = np.asarray(self.a, dtype=np.float64)
        self.d = []  # per axis: that axis' share of the diagonal, 1D
        for ax, n in enumerate(self.shape):
            d = np.full(n, 2 * self.a[ax])
            d[0] = self.a[ax] + self.blo[ax] if n > 1 else self.blo[ax] + self.bhi[ax]
            if n > 1:
                d[-1] = self.a[ax] + self.bhi[ax]
            self.d.append(d)

    @property
    def diag(self) -> np.ndarray:
        return self.d[0][:, None, None] + self.d[1][None, :, None] + self.d[2][None, None, :]

    def coarsen(self, f) -> ConstStencil:
        shape = tuple(n // fa for n, fa in zip(self.shape, f))
        s = [1.0 / fa**2 for fa in f]
        return ConstStencil(shape, tuple(a * k for a, k in zip(self.a, s)),
                            tuple(b * k for b, k in zip(self.blo, s)),
                            tuple(b * k for b, k in zip(self.bhi, s)), self.periodic)

    def arrays(self):
        return (self.a3, self.d[0], self.d[1], self.d[2])

    def strengths(self) -> tuple[float, float, float]:
        return tuple(float(a) if n > 1 else 0.0 for a, n in zip(self.a, self.shape))

    def to_var(self) -> VarStencil:
        n0, n1, n2 = self.shape
        faces = []
        for ax, n in enumerate(self.shape):
            fshape = [n0, n1, n2]
            fshape[ax] = n + 1
            c = np.full(fshape, self.a[ax])
            lo = [slice(None)] * 3
            hi = [slice(None)] * 3
            lo[ax], hi[ax] = 0, -1
            c[tuple(lo)] = self.blo[ax]
            c[tuple(hi)] = self.bhi[ax]
            faces.append(c)
        return VarStencil.from_faces(*faces, periodic=self.periodic)

    def to_csr(self) -> sp.csr_matrix:
        return self.to_var().to_csr()
