"""A singular symmetric matrix's null space, as the user's ``near_nullspace`` gives it.

A pure-Neumann elasticity problem (no support) has the rigid-body modes as its null space,
six in 3-D: its rows sum to zero, so the constants' test (``Solver._singular``) took it for a
problem whose only null vector is the constants. A right-hand side with a net torque (no
solution) then passed the mean test, CG broke down and GMRES stagnated at |r|/|b| = 0.25
without a word, and ``compatibility='project'`` removed only the mean. Here the columns of
``near_nullspace`` that the matrix annihilates (to round-off) are taken as its null space:
``b`` must be orthogonal to them (else it is refused naming ``compatibility='project'``,
which projects ``b`` onto the range, ``range(A) = null(A)^T`` for a symmetric ``A``, and
``x`` onto the null space's complement: the minimum-norm least-squares solution, lstsq's).
"""

from __future__ import annotations

import numpy as np

# |A q| <= NULL_RTOL |A| for a unit q counts as A q = 0 (round-off of a FEM assembly: 1e-13
# relative on the rigid-body modes of a P1 elasticity matrix)
NULL_RTOL = 1e-9


def annihilated(matvec, B: np.ndarray, norm_a: float) -> np.ndarray | None:
    """An orthonormal basis (n, k) of the span of ``B``'s columns that ``matvec`` maps to
    zero (``|A q| <= NULL_RTOL |A|``), or None when no direction of it is.

    ``matvec(v) -> A v`` takes and returns host vectors; ``norm_a`` bounds ``|A|_2`` (the
    largest absolute row sum). A mix (``[1, x]`` for a Neumann Laplacian: only the ones are
    null) keeps the null directions: the right singular vectors of ``A Q`` whose singular
    values are below the tolerance."""
    if B is None or norm_a <= 0 or not np.isfinite(norm_a):
        return None
    Q, R = np.linalg.qr(np.asarray(B, dtype=np.float64))
    keep = np.abs(np.diag(R)) > 1e-12 * max(np.abs(np.diag(R)).max(), 1e-300)
    Q = Q[:, keep]                      # dependent columns dropped
    if Q.shape[1] == 0:
        return None
    AQ = np.column_stack([matvec(Q[:, j]) for j in range(Q.shape[1])])
    _, s, Vt = np.linalg.svd(AQ, full_matrices=False)
    null = s <= NULL_RTOL * norm_a
    if not null.any():
        return None
    Z = Q @ Vt[null].T
    Z, _ = np.linalg.qr(Z)              # orthonormal again (round-off)
    return Z


def component(Z: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``Z^T v``: the coordinates of ``v`` along the null space (``Z`` orthonormal)."""
    return Z.T @ v


def remove(Z, v, xp=np):
    """``v - Z Z^T v`` (in place when ``v`` is writable), on ``xp``'s arrays."""
    Zd = xp.asarray(Z)
    v -= Zd @ (Zd.T @ v)
    return v
