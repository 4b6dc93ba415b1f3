"""Block Jacobi over the ranks of a row split (round 40 h7): each rank preconditions with its
own diagonal block ``A[lo:hi, lo:hi]`` (the ghosts' columns dropped), as PETSc's
``-pc_type bjacobi`` does, the block's solve being

* ``"ilu"``: ILU(0), the incomplete LU on the block's own pattern (PETSc's default
  ``-sub_pc_type ilu``); on a symmetric block it is IC(0) in ``L D L^T`` form (``U = D L^T``),
  so CG takes it;
* ``"ilut"`` (round 45 h4): the threshold ILU with fill of one rank's ``precond='ilut'``
  (:class:`~..solver.ILUTPrecond`: SciPy spilu's ``drop_tol`` / ``fill_factor``, the block
  in reverse Cuthill-McKee order) of each block; not symmetric, so GMRES / BiCGStab;
* ``"amg"``: one V-cycle of skiff's smoothed aggregation set up on the block (PETSc's
  ``-sub_pc_type gamg``; symmetric positive definite for an SPD block: CG takes it).

No communication: the preconditioner is the same linear map each iteration, so CG, BiCGStab
and right-preconditioned GMRES run as with Jacobi.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..ilu0 import ILU0  # the kernel (one rank's precond='ilu' too, round 40 h10)

__all__ = ["BLOCK_PRECONDS", "ILU0", "block_preconditioner", "own_block"]

BLOCK_PRECONDS = ("ilu", "ilut", "amg")
# the names a PETSc / SciPy user gives for them
ALIASES = {"ilu0": "ilu", "ic": "ilu", "ic0": "ilu", "ichol": "ilu", "bjacobi": "ilu",
           "bjacobi-ilu": "ilu", "block-ilu": "ilu", "bjacobi-amg": "amg", "block-amg": "amg",
           "bjacobi-ilut": "ilut", "block-ilut": "ilut"}


def own_block(local: sp.csr_matrix, m: int) -> sp.csr_matrix:
    """A rank's diagonal block: the plan's local rows (own columns ``0..m-1``, then the
    ghosts) without the ghosts' columns."""
    return sp.csr_matrix(local[:, :m])


def block_preconditioner(block: sp.csr_matrix, kind: str, rank: int = 0, contrast=None,
                         ilut_options=None):
    """``r -> M^-1 r`` for the rank's diagonal block: ``kind`` 'ilu' (ILU(0) = IC(0) on a
    symmetric block), 'ilut' (ILUT with ``ilut_options``, spilu's names) or 'amg' (one
    smoothed-aggregation V-cycle from zero; ``contrast``: the whole matrix's high-contrast
    answer, ``SmoothedAggregation``'s, the same on every rank)."""
    what = f"precond={kind!r} on rank {rank}'s block"
    if kind == "ilu":
        return ILU0(block, what).solve
    if kind == "ilut":
        from ..solver import ILUTPrecond

        try:
            pc = ILUTPrecond(sp.csr_matrix(block), np, **(ilut_options or {}))
        except ValueError as e:   # a zero row of the block: name the rank
            raise ValueError(f"{what}: {e}") from None

        dt = np.complex128 if np.iscomplexobj(block.data) else np.float64

        def ilut(r):
            out = np.empty(r.shape[0], dtype=dt)
            return pc(np.asarray(r, dtype=dt), out)

        ilut.ilut = pc
        return ilut
    if kind == "amg":
        from ..amg import SmoothedAggregation

        if block.shape[0] == 0:
            return lambda r: np.zeros(0)
        ml = SmoothedAggregation(sp.csr_matrix(block), contrast=contrast)
        op = ml.aspreconditioner()

        dt = np.complex128 if np.iscomplexobj(block.data) else np.float64

        def vcycle(r):
            return np.asarray(op.matvec(r), dtype=dt).ravel()

        vcycle.amg = ml   # the coarse level across the ranks reuses its grids (round 41)
        return vcycle
    raise ValueError(f"block preconditioner {kind!r}: 'ilu', 'ilut' or 'amg'")
