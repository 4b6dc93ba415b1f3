"""Near-null-space vectors for AMG on vector problems: the rigid-body modes of elasticity.

Smoothed aggregation with the constant alone coarsens a displacement field badly (CG+AMG on
2D P1 elasticity, 33 280 unknowns: 546 iterations); with the rigid-body modes as
``near_nullspace=`` (pyamg's ``B``) it takes 28 (pyamg 25). A user of scikit-fem gets them
from the basis' DOF locations, before removing the Dirichlet DOFs::

    B = rigid_body_modes(basis.doflocs.T)[I]   # I: the DOFs kept (ElementVector: x, y, ...)
    skiff.solve(K[I][:, I], f[I], method="cg", precond="amg", near_nullspace=B)
"""

from __future__ import annotations

import numpy as np

__all__ = ["rigid_body_modes"]


def rigid_body_modes(points, components=None) -> np.ndarray:
    """The rigid-body modes (translations, rotations) of a displacement field.

    Parameters
    ----------
    points : array (n, dim), dim 2 or 3
        Coordinates of the node each of the ``n`` unknowns lives at (one row per unknown,
        so a node appears ``dim`` times: scikit-fem's ``basis.doflocs.T``).
    components : array (n,) of ints in ``[0, dim)``, optional
        The displacement component each unknown carries; default interleaved
        ``0, 1, [2,] 0, 1, ...`` (scikit-fem's ``ElementVector``, pyamg.gallery's ordering).
        For a blocked ordering (all x, then all y) pass ``np.repeat(range(dim), nodes)``.

    Returns
    -------
    array (n, 3) in 2D (two translations, one rotation), (n, 6) in 3D (three of each);
    rotations about the centroid of the points (better conditioned than about the origin).
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] not in (2, 3):
        raise ValueError(f"rigid_body_modes: points must have shape (n, 2) or (n, 3), one row "
                         f"per unknown; got shape {pts.shape} (scikit-fem's basis.doflocs "
                         f"is (dim, n): pass basis.doflocs.T)")
    n, dim = pts.shape
    if components is None:
        if n % dim:
            raise ValueError(f"rigid_body_modes: {n} rows of points are not a multiple of "
                             f"dim={dim}: one row per unknown is wanted, a node repeated dim "
                             f"times (scikit-fem's basis.doflocs.T; from node coordinates, "
                             f"interleaved unknowns: np.repeat(nodes, {dim}, axis=0)); for "
                             f"another ordering pass components= (each unknown's "
                             f"displacement component)")
        comp = np.arange(n) % dim
    else:
        comp = np.asarray(components).reshape(-1)
        if comp.shape != (n,) or not np.issubdtype(comp.dtype, np.integer) or (
                comp.size and (comp.min() < 0 or comp.max() >= dim)):
            raise ValueError(f"rigid_body_modes: components must be {n} integers in "
                             f"[0, {dim}), one per row of points")
    x = pts - pts.mean(axis=0)
    B = np.zeros((n, 3 if dim == 2 else 6))
    for d in range(dim):
        B[comp == d, d] = 1.0
    # rotation about axis a moves component p by -x_q and component q by x_p
    planes = [(0, 1)] if dim == 2 else [(0, 1), (1, 2), (2, 0)]
    for k, (p, q) in enumerate(planes):
        col = dim + k
        B[comp == p, col] = -x[comp == p, q]
        B[comp == q, col] = x[comp == q, p]
    return B
