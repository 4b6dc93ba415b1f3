"""The complex test matrix of the row split's complex tests (round 47: h4's and h12's files)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def helmholtz(n: int, k: float, layer: float) -> sp.csr_matrix:
    """``-Laplace u - k^2 (1 + i sigma) u`` on the unit square's n x n interior grid, ``sigma``
    rising to 1 in an absorbing layer of width ``layer`` along the edges: complex symmetric,
    indefinite."""
    h = 1.0 / (n + 1)
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)) / h ** 2
    x = np.arange(1, n + 1) * h
    X, Y = np.meshgrid(x, x, indexing="ij")
    d = np.maximum.reduce([layer - X, X - 1 + layer, layer - Y, Y - 1 + layer, 0 * X])
    sigma = np.clip(d / layer, 0, 1) ** 2
    return sp.csr_matrix(sp.kronsum(T, T) - k * k * sp.diags((1 + 1j * sigma).ravel()))
