"""Split a structured grid into one near-equal block per rank (a Cartesian process grid).

A 2D grid is ``(1, n0, n1)`` internally, so one code serves 2D and 3D; the axis of one cell is
never split. The process grid ``dims`` (ranks per axis, product = ranks) is the one with the
least halo (interface cells), ties broken by the most even blocks. Block boundaries are rounded
to a multiple of a power of two where that costs little balance, so that the blocks halve
with the multigrid levels for longer before the coarse grids are gathered.

>>> d = Decomposition((1, 64, 64), 4)
>>> d.dims, d.block(3)
((1, 2, 2), ((0, 1), (32, 64), (32, 64)))
>>> [s["index"] for s in d.subdomains(ndim=2)][:2]
[[[0, 32], [0, 32]], [[0, 32], [32, 64]]]
"""

from __future__ import annotations

import math

__all__ = ["Decomposition", "process_grid", "split_axis", "plan", "GATHER_CELLS_PER_RANK"]

# a coarse level with fewer cells than this per rank is gathered to every rank (below it,
# messages cost more than the work they save)
GATHER_CELLS_PER_RANK = 2048


def _factorisations(size: int, axes: int):
    """Every ordered tuple of ``axes`` positive integers whose product is ``size``."""
    if axes == 1:
        yield (size,)
        return
    for d in range(1, size + 1):
        if size % d == 0:
            for rest in _factorisations(size // d, axes - 1):
                yield (d,) + rest


def split_axis(n: int, parts: int) -> list[int]:
    """``parts + 1`` boundaries splitting ``n`` cells into near-equal pieces, each boundary a
    multiple of the largest power of two up to 16 that keeps every piece within 1/32 of the
    even share, or one cell (so the pieces coarsen along with the grid for longer)."""
    if parts > n:
        raise ValueError(f"cannot split {n} cells into {parts} blocks")
    even = [n * i // parts for i in range(parts + 1)]
    share = n / parts
    for align in (16, 8, 4, 2):
        bounds = [0] + [int(round(n * i / parts / align)) * align
                        for i in range(1, parts)] + [n]
        sizes = [b - a for a, b in zip(bounds, bounds[1:])]
        if min(sizes) > 0 and max(abs(s - share) for s in sizes) <= max(share / 32, 1):
            return bounds
    return even


def process_grid(shape3, size: int) -> tuple[int, int, int]:
    """Ranks per axis for ``size`` ranks on a grid of ``shape3`` cells: the fewest interface
    cells, then the most even blocks. Axes of one cell are not split."""
    shape3 = tuple(int(n) for n in shape3)
    best, best_key = None, None
    for dims in _factorisations(int(size), 3):
        if any(d > n for d, n in zip(dims, shape3)):
            continue
        total = math.prod(shape3)
        halo = sum((d - 1) * total // n for d, n in zip(dims, shape3))
        biggest = math.prod(math.ceil(n / d) for d, n in zip(dims, shape3))
        key = (halo, biggest, [-d for d in dims])   # ties: split the slowest axis
        if best_key is None or key < best_key:
            best, best_key = dims, key
    if best is None:
        raise ValueError(f"a grid of {'x'.join(map(str, shape3))} cells cannot be split into "
                         f"{size} blocks: use fewer ranks")
    return best


class Decomposition:
    """The blocks of a ``shape3`` grid over ``size`` ranks (``dims`` given or chosen)."""

    def __init__(self, shape3, size: int, dims=None, bounds=None):
        self.shape3 = tuple(int(n) for n in shape3)
        self.size = int(size)
        self.dims = tuple(dims) if dims is not None else process_grid(self.shape3, self.size)
        if math.prod(self.dims) != self.size:
            raise ValueError(f"process grid {self.dims} does not hold {self.size} ranks")
        self.bounds = bounds if bounds is not None else [
            split_axis(n, d) for n, d in zip(self.shape3, self.dims)]

    def coords(self, rank: int) -> tuple[int, int, int]:
        """The block indices of ``rank`` (C order over ``dims``)."""
        c2 = rank % self.dims[2]
        c1 = (rank // self.dims[2]) % self.dims[1]
        return (rank // (self.dims[1] * self.dims[2]), c1, c2)

    def rank_of(self, coords) -> int:
        return (coords[0] * self.dims[1] + coords[1]) * self.dims[2] + coords[2]

    def block(self, rank: int) -> tuple[tuple[int, int], ...]:
        """``((lo0, hi0), (lo1, hi1), (lo2, hi2))``: the cells of ``rank``, half-open."""
        c = self.coords(rank)
        return tuple((b[i], b[i + 1]) for b, i in zip(self.bounds, c))

    def neighbours(self, rank: int) -> list[tuple[int | None, int | None]]:
        """Per axis, the ranks below and above ``rank`` (None at the grid's edge)."""
        c = self.coords(rank)
        out = []
        for ax in range(3):
            pair = []
            for step in (-1, 1):
                k = c[ax] + step
                if 0 <= k < self.dims[ax]:
                    cc = list(c)
                    cc[ax] = k
                    pair.append(self.rank_of(cc))
                else:
                    pair.append(None)
            out.append(tuple(pair))
        return out

    def coarsen(self, f) -> Decomposition | None:
        """The same split of the grid coarsened by ``f`` per axis, or None when a block
        boundary does not halve (odd) or a block would be left with fewer than 2 cells."""
        bounds = []
        for b, fa, d in zip(self.bounds, f, self.dims):
            if fa == 1:
                bounds.append(list(b))
                continue
            if any(x % fa for x in b):
                return None
            nb = [x // fa for x in b]
            if d > 1 and min(y - x for x, y in zip(nb, nb[1:])) < 2:
                return None
            bounds.append(nb)
        shape = tuple(n // fa for n, fa in zip(self.shape3, f))
        return Decomposition(shape, self.size, self.dims, bounds)

    def subdomains(self, ndim: int = 3) -> list[dict]:
        """One entry per rank: ``{"rank", "index": [[lo, hi] per user axis], "cells"}``."""
        out = []
        for r in range(self.size):
            blk = self.block(r)[3 - ndim:]
            out.append({"rank": r, "index": [[lo, hi] for lo, hi in blk],
                        "cells": math.prod(hi - lo for lo, hi in blk)})
        return out

    def halo_cells(self, rank: int) -> int:
        """Cells this rank sends in one exchange: one layer on each side that has a peer,
        each face with the ghost cells around it (so edges and corners arrive too)."""
        blk = self.block(rank)
        padded = [hi - lo + (2 if n > 1 else 0) for (lo, hi), n in zip(blk, self.shape3)]
        total = 0
        for ax, (lo_peer, hi_peer) in enumerate(self.neighbours(rank)):
            face = math.prod(padded[b] for b in range(3) if b != ax)
            total += face * ((lo_peer is not None) + (hi_peer is not None))
        return total

    def describe(self, ndim: int = 3) -> str:
        dims = "x".join(map(str, self.dims[3 - ndim:]))
        sizes = sorted({"x".join(str(hi - lo) for lo, hi in self.block(r)[3 - ndim:])
                        for r in range(self.size)})
        return f"{self.size} ranks as {dims} blocks of {' / '.join(sizes)} cells"


def plan(grid, ranks: int, *, method: str = "cg", precond: str = "mg", restart: int = 30,
         variable: bool = False, whole: bool = True) -> dict:
    """What a distributed solve of ``grid`` over ``ranks`` ranks will hold: the blocks, the
    memory of the largest rank (the grid memory model of :mod:`..estimate` on its block with
    one ghost layer, plus the gathered coarse grid), the halo bytes of one exchange, and the
    host memory a rank needs while it builds the problem (a lower bound): the whole problem,
    or (``whole=False``: built per block, the built-in Poisson) its block."""
    from ..estimate import format_bytes, needed_bytes
    from ..stencil import to_3d_shape

    grid = tuple(int(n) for n in grid)
    shape3 = to_3d_shape(grid)
    dec = Decomposition(shape3, ranks)
    worst = cells = 0
    for r in range(ranks):
        padded = [hi - lo + (2 if n > 1 else 0) for (lo, hi), n in zip(dec.block(r), shape3)]
        cells = max(cells, math.prod(padded))
        worst = max(worst, needed_bytes(padded, method=method, precond=precond,
                                        restart=restart, variable=variable))
    gathered = 8 * 6 * min(math.prod(shape3), GATHER_CELLS_PER_RANK * ranks)
    halo = max(dec.halo_cells(r) for r in range(ranks)) * 8
    per_rank = worst + gathered
    # a rank builds the whole problem on its host before it keeps its block (source,
    # boundary term, right-hand side; the coefficients with their coarse levels), or only
    # its block's right-hand side and exact solution
    host = 8 * math.prod(shape3) * (3 + (6 if variable else 0)) if whole else 8 * cells * 2
    return {"ranks": ranks, "dims": list(dec.dims[3 - len(grid):]),
            "subdomains": dec.subdomains(len(grid)), "bytes_per_rank": per_rank,
            "halo_bytes_per_exchange": halo, "host_bytes_per_rank": host,
            "text": f"{dec.describe(len(grid))}; at least {format_bytes(per_rank)} per rank, "
                    f"{format_bytes(halo)} sent per halo exchange; at least "
                    f"{format_bytes(host)} of host memory per rank to build "
                    f"{'the whole problem' if whole else 'its block'}"}

