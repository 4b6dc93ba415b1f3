"""A block-diagonal preconditioner for a symmetric saddle-point matrix handed over whole, as
``scipy.sparse.bmat([[K, Bᵀ], [B, None]])`` builds it (Stokes, a constrained problem, mixed
Poisson): ``M = diag(AMG(K)⁻¹, diag(S)⁻¹)`` with ``S = B diag(K)⁻¹ Bᵀ``, the Schur complement
with K replaced by its diagonal. Symmetric positive definite when K is (MINRES's condition).

The blocks are found from the matrix alone: the rows whose diagonal is zero are the
constraint (pressure) block Z, the others U; the structure holds when ``A[Z, Z]`` is zero and
``A[U, U]`` has a positive diagonal (:func:`saddle_blocks`). The unknowns may come in any
order (interleaved too).

Measured (MINRES, rtol 1e-8, skiff's true-residual stop; ``benchmarks/bench_pde_user.py
--cases stokes``): Stokes P2/P1 36 483 unknowns 97 iterations against 4000 with no
preconditioner (what ``auto`` ran before; SciPy's ``minres`` 768, stopping at a true
|r|/|b| of 3.7e-3); a 40² Laplacian with 800 pair constraints 1040 against 5213. The
diagonal Schur approximation suits Stokes (an inf-sup stable pair: S is close to the pressure
mass matrix, whose diagonal is a good preconditioner); AMG on ``B diag(K)⁻¹ Bᵀ`` took 554
there (and 222 on the constraints): pass your own ``M=`` when you know S better.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .amg import SmoothedAggregation

__all__ = ["SaddlePrecond", "saddle_blocks"]


def _schur_diagonal(A: sp.csr_matrix, U, Z):
    """``diag(B diag(K)⁻¹ Bᴴ)`` and ``diag(C)`` for ``A = [[K, Bᴴ], [B, -C]]`` (U, Z)."""
    K_diag = A.diagonal()[U].real
    B = A[Z][:, U].tocsr()
    schur = np.asarray(abs(B).power(2) @ (1.0 / K_diag)).ravel()
    return schur, -A.diagonal()[Z].real, B


def saddle_blocks(A: sp.csr_matrix, positive: bool = False):
    """``(U, Z)``, the index sets of the positive- and the non-positive-diagonal rows, when
    ``A`` (symmetric, checked by the caller) has the saddle-point form ``[[K, Bᵀ], [B, -C]]``:
    Z not empty, ``K = A[U, U]`` with a positive (real) diagonal, every Z row coupled to U,
    and C either zero or a stabilisation (``diag(C)`` at most ``diag(B diag(K)⁻¹ Bᵀ)`` in
    the sum: stabilised P1/P1 Stokes, a penalised constraint; an indefinite Helmholtz matrix
    whose diagonal changes sign is not one); else None. ``positive``: ``[[K, Bᵀ], [B, +C]]``,
    C semi-definite and small (a penalty of the other sign; at most half the Schur diagonal
    on every row), its rows found as those whose diagonal is under 1e-3 of their largest
    off-diagonal entry: for a matrix CG has found indefinite."""
    d = A.diagonal().real
    if positive:
        off = abs(A - sp.diags(A.diagonal())).max(axis=1).toarray().ravel()
        neg = d <= 1e-3 * off
    else:
        neg = d <= 0
    if not neg.any() or neg.all():
        return None
    Z, U = np.flatnonzero(neg), np.flatnonzero(~neg)
    schur, c, B = _schur_diagonal(A, U, Z)
    if np.any(np.diff(B.indptr) == 0):
        return None
    if c.sum() > schur.sum():
        return None
    Azz = A[Z][:, Z]
    if positive:
        return (U, Z) if np.all(-c <= 0.5 * schur) and _semidefinite(Azz) else None
    if np.any(d[Z] != 0) and abs(Azz - sp.diags(Azz.diagonal())).sum() > c.sum() and (
            not _semidefinite(-Azz)):
        # C far from its diagonal and indefinite (a Laplacian-like block): no stabilisation.
        # A pressure mass matrix eps M_p is positive definite, though not diagonally dominant
        # (3-D P1: off-diagonal sums 1.5x the diagonal; 2-D 1x): it ran GMRES+AMG, which
        # stagnated at |r|/|b| = 1 on Stokes P2/P1 (4 515 unknowns) with C = 1e-6 M_p
        return None
    return U, Z


def _semidefinite(C, steps: int = 30) -> bool:
    """Whether symmetric ``C`` looks positive semi-definite: the smallest Ritz value of
    ``steps`` Lanczos steps (full reorthogonalisation; they find the extreme eigenvalues
    first) is not below -1e-8 of the largest."""
    n = C.shape[0]
    V = np.zeros((min(steps, n) + 1, n))
    v = np.random.default_rng(0).standard_normal(n)
    V[0] = v / np.linalg.norm(v)
    alphas, betas = [], []
    for k in range(min(steps, n)):
        w = np.asarray(C @ V[k]).real.ravel()
        alphas.append(float(V[k] @ w))
        w -= V[:k + 1].T @ (V[:k + 1] @ w)       # full reorthogonalisation
        beta = float(np.linalg.norm(w))
        if beta <= 1e-12 * max(abs(a) for a in alphas):
            break
        betas.append(beta)
        V[k + 1] = w / beta
    k = len(alphas)
    T = np.diag(alphas) + np.diag(betas[:k - 1], 1) + np.diag(betas[:k - 1], -1)
    ritz = np.linalg.eigvalsh(T)
    return bool(ritz[0] >= -1e-8 * max(abs(ritz[-1]), 1e-300))


class SaddlePrecond:
    """``M r``: AMG's V-cycle on K for the U part, ``diag(C + B diag(K)⁻¹ Bᴴ)⁻¹`` for the Z
    part (host vectors; the matrix and vectors on the CPU)."""

    def __init__(self, A: sp.csr_matrix, U: np.ndarray, Z: np.ndarray):
        A = A.tocsr()
        self.U, self.Z = U, Z
        K = A[U][:, U].tocsr()
        self.amg = SmoothedAggregation(K)
        # diag(C + B D^-1 B^H): row sums of |B|^2 D^-1, without forming the product
        schur, c, _ = _schur_diagonal(A, U, Z)
        self.sinv = 1.0 / (schur + c)
        self.bytes = 0
        nnz = sum(lv[0].nnz for lv in self.amg.levels)
        self.cycle_bytes = 12 * nnz * (2 * self.amg.degree + 1) + 24 * Z.size

    def __call__(self, r, out):
        flat, dst = r.reshape(-1), out.reshape(-1)
        u = np.ascontiguousarray(flat[self.U])
        zu = np.zeros_like(u)
        self.amg.precondition(u, zu)
        dst[self.U] = zu
        dst[self.Z] = self.sinv * flat[self.Z]
        self.bytes += self.cycle_bytes
        return out

    def describe(self):
        return (f"saddle-point block preconditioner: {self.U.size} unknowns by algebraic "
                f"multigrid {self.amg.describe()}, {self.Z.size} constraints by "
                f"diag(B diag(K)^-1 B^T)^-1")
