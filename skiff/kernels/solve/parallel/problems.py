"""Problems a rank builds block by block, without the whole grid's arrays.

:class:`PoissonBlocks` is the built-in ``poisson`` problem of a ``solve`` config (the
manufactured ``prod sin(pi x)`` with Dirichlet sides, or ``prod cos(pi x)`` with Neumann
sides), exactly as :func:`..problems.poisson` builds it, except that the source and the exact
solution are evaluated on one block at a time (``rhs_block``, ``exact_block``): its stencil is
uniform (a few numbers per axis), so a rank holds only its block on the host too. This is
what makes a 10^8-cell Poisson grid over 8 GPUs cost each rank its share, not the grid.

>>> from skiff.kernels.solve.problems import poisson
>>> p, q = PoissonBlocks((16, 8)), poisson((16, 8))
>>> blk = ((0, 1), (4, 12), (0, 8))
>>> bool((p.rhs_block(blk) == q.rhs[:, 4:12, :]).all()), p.stencil == q.stencil
(True, True)
"""

from __future__ import annotations

import numpy as np

from ..problems import SIDES
from ..stencil import ConstStencil, to_3d_shape

__all__ = ["PoissonBlocks"]


class PoissonBlocks:
    """The built-in Poisson problem on ``shape`` cells, evaluated per block.

    The attributes the distributed solver reads are those of a
    :class:`~..problems.GridProblem` (``shape``, ``shape3``, ``h``, ``stencil``, ``signs``,
    ``singular``, ``velocity``, ``name``, ``info``); ``rhs`` and ``exact`` come per block."""

    velocity = None
    mask = None
    name = "poisson"

    def __init__(self, shape, bc: str = "dirichlet", extent: float = 1.0):
        if bc not in ("dirichlet", "neumann"):
            raise ValueError(f"PoissonBlocks takes bc 'dirichlet' or 'neumann', got {bc!r}")
        self.shape = tuple(int(n) for n in shape)
        d = len(self.shape)
        self.ext = tuple(float(extent) for _ in range(d))
        self.h = tuple(e / n for e, n in zip(self.ext, self.shape))
        self.bc = bc
        # grid_problem's uniform stencil: k / h^2 inside, 2 k / h^2 (Dirichlet) or 0 (Neumann)
        side = (lambda hh: 2.0 / hh**2) if bc == "dirichlet" else (lambda hh: 0.0)
        pad = [0.0] * (3 - d)
        self.stencil = ConstStencil(to_3d_shape(self.shape),
                                    tuple(pad + [1.0 / hh**2 for hh in self.h]),
                                    tuple(pad + [side(hh) for hh in self.h]),
                                    tuple(pad + [side(hh) for hh in self.h]))
        self.signs = np.ones(6)
        if bc == "dirichlet":
            self.signs[2 * (3 - d):] = -1.0
        self.singular = bc == "neumann"
        self.dirichlet = bc == "dirichlet"
        self.info = {"extent": self.ext, "bc": dict.fromkeys(SIDES[:2 * d], bc),
                     "built": "per block"}

    @property
    def shape3(self):
        return to_3d_shape(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def unknowns(self) -> int:
        return int(np.prod(self.shape))

    @property
    def exact(self):
        return None   # per block: exact_block

    def _centres(self, block):
        """Cell centres of ``block`` (3D index ranges) per user axis, broadcastable."""
        d = self.ndim
        out = []
        for a, ((lo, hi), hh) in enumerate(zip(block[3 - d:], self.h)):
            x = (np.arange(lo, hi) + 0.5) * hh
            out.append(x.reshape([hi - lo if b == a else 1 for b in range(d)]))
        return out

    def _shape3(self, block):
        return tuple(hi - lo for lo, hi in block)

    def exact_block(self, block):
        """The exact solution on ``block`` (Dirichlet: ``prod sin(pi x / L)``), else None."""
        if self.bc != "dirichlet":
            return None
        out = 1.0
        for xa, la in zip(self._centres(block), self.ext):
            out = out * np.sin(np.pi * xa / la)
        return np.broadcast_to(out, self._shape3(block)[3 - self.ndim:]).reshape(
            self._shape3(block)).copy()

    def rhs_block(self, block):
        """The right-hand side on ``block`` (3D shaped; the boundary term is zero here)."""
        x = self._centres(block)
        if self.bc == "dirichlet":
            out = 1.0
            for xa, la in zip(x, self.ext):
                out = out * np.sin(np.pi * xa / la)
            out = sum((np.pi / la) ** 2 for la in self.ext) * out
        else:
            out = 1.0
            for xa in x:
                out = out * np.cos(np.pi * xa)
        shape = self._shape3(block)
        return np.broadcast_to(out, shape[3 - self.ndim:]).reshape(shape) + 0.0

    def __repr__(self) -> str:
        grid = "x".join(map(str, self.shape))
        return f"<PoissonBlocks {grid} ({self.unknowns} unknowns, built per block)>"
