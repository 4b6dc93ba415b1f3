"""Smoothed-aggregation algebraic multigrid: setup on the CPU (numpy, scipy.sparse, one numba
loop for the aggregation), cycles on the device (``A @ x`` of scipy or cupyx sparse matrices).

Setup per level: strength of connection (the evolution measure of ``amg_strength`` for a
scalar problem, ``|a_ij| >= theta sqrt(|a_ii a_jj|)`` for several candidates), greedy
aggregation (seed aggregates of untouched neighbourhoods, attach the rest to a neighbouring
aggregate, group what is left), a tentative prolongator whose columns are an orthonormal basis
of the near-null-space candidates on each aggregate (the constant, or ``B=``: the rigid-body
modes of ``amg_modes.rigid_body_modes``; on the finest level first improved by 4 symmetric
Gauss-Seidel sweeps on ``A x = 0``, pyamg's default), one damped-Jacobi smoothing step
``P = (I - w D^-1 A) T`` with ``w = 4/3 / rho(D^-1 A)`` (``A`` filtered to its strong
entries, the weak ones lumped, where the finest evolution strength shows anisotropy:
:func:`filtered`, ``FILTER_WEAK``), and the Galerkin product
``A_c = P^T A P``. The cycle smooths with a Chebyshev polynomial in ``D^-1 A`` (symmetric,
so the V-cycle is a valid CG preconditioner); the coarsest level is inverted densely, or by
a sparse LU when coarsening stalled above 1000 unknowns. ``aspreconditioner()`` gives the
V-cycle as a scipy ``LinearOperator`` (a block of a preconditioner you write, e.g. Stokes'
velocity block).

A non-symmetric matrix (convection) is treated as pyamg's ``symmetry='nonsymmetric'`` does:
its eigenvalues may be complex, so neither a Rayleigh quotient (the estimate of ``rho``
above) nor a Chebyshev polynomial on a real interval is valid. ``rho(D^-1 A)`` is bounded by
the norm ``||D^-1 A||_inf``; the prolongator is smoothed with ``A``, the restriction with
``A^T`` (``R = ((I - w D^-1 A^T) T)^T``), ``A_c = R A P``, and the cycle smooths with
symmetric Gauss-Seidel sweeps (numba, on the CPU; damped Jacobi with ``w = 4/3 / ||D^-1
A||_inf`` elsewhere). Before (2026), the Chebyshev cycle stalled GMRES on a central-difference
convection-diffusion matrix (|r|/|b| = 0.82 after 3000 iterations) and on upwind convection
at Peclet 1000 (0.63 after 20000). A real non-symmetric matrix whose diagonal spans more than
``ROW_SCALE_SPREAD`` is set up as ``D^-1 A`` (D its diagonal) and cycled on ``D^-1 r``
(round 31: rows scaled apart by 10^U(-6, 6), GMRES+AMG 1 861 iterations -> 9).

A complex matrix (round 27) follows the same two paths: a Hermitian one the symmetric
(Chebyshev, R = P^H), a complex symmetric one (Helmholtz with an absorbing boundary) or any
other the non-symmetric (Gauss-Seidel in complex arithmetic; R from A^T, which is P^T when A is
complex symmetric), as pyamg's complex SA; candidates get a unitary basis per aggregate.

>>> import scipy.sparse as sp
>>> A = sp.diags([-1, 2, -1], [-1, 0, 1], shape=(2000, 2000)).tocsr()
>>> amg = SmoothedAggregation(A)
>>> amg.nlevels >= 2
True
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .amg_schwarz import BlockInverse, block_inverse, rho_sa
from .amg_strength import evolution_strength, rho_dinv_a
from .cancel import checkpoint

__all__ = ["SmoothedAggregation", "aggregate", "strength"]


class Level(tuple):
    """One level of a hierarchy, pyamg's way: ``lv.A``, ``lv.P``, ``lv.R`` (SciPy sparse, the
    matrices the cycle uses) and still the tuple ``(A, dinv, lmax, P, R)`` skiff code unpacks.
    The coarsest level (pyamg's ``ml.levels[-1]``) carries ``A`` only (the rest None).
    Round 40 (h7), set by :func:`finish_levels`: ``lv.presmoother(A, x, b)`` /
    ``lv.postsmoother(A, x, b)`` (every level but the coarsest: the V-cycle's relaxation,
    in place on x, as pyamg's) and, on smoothed aggregation, ``lv.B`` (the near null space
    the level's aggregates are fit to; the coarsest's is the last fit's coarse candidates)."""

    def __new__(cls, A, dinv=None, lmax=None, P=None, R=None):
        return super().__new__(cls, (A, dinv, lmax, P, R))

    def __getnewargs__(self):   # pickle / copy rebuild it from its five entries
        return tuple(self)

    A = property(lambda self: self[0])
    P = property(lambda self: self[3])
    R = property(lambda self: self[4])

    def __repr__(self) -> str:
        return f"Level(A={self[0].shape}, nnz={self[0].nnz})"


class Complexity(float):
    """A number that is also pyamg's method: ``ml.operator_complexity`` (skiff) and
    ``ml.operator_complexity()`` (pyamg) read the same value."""

    def __call__(self) -> float:
        return float(self)


class LevelSmoother:
    """pyamg's ``ml.levels[k].presmoother(A, x, b)`` / ``postsmoother``: the relaxation the
    V-cycle runs on level k (Chebyshev, Gauss-Seidel, the block smoothers: whichever the
    hierarchy was set up with), in place on ``x`` (host vectors). ``A`` must be the level's
    matrix (``ml.levels[k].A``); the smoother is set up for it."""

    def __init__(self, amg, level: int, post: bool):
        self.amg, self.level, self.post = amg, level, post

    def __call__(self, A, x, b) -> None:
        amg, k = self.amg, self.level
        Ak, dinv, lmax = amg._dev[k][:3]
        name = f"levels[{k}].{'post' if self.post else 'pre'}smoother"
        if amg.xp is not np:
            raise ValueError(f"{name}: this hierarchy runs on the GPU; build it with "
                             f"xp=numpy to call its smoothers on host vectors")
        if getattr(A, "shape", None) != Ak.shape:
            raise ValueError(f"{name}(A, x, b): A is {getattr(A, 'shape', None)}, the level's "
                             f"matrix is {Ak.shape}: give ml.levels[{k}].A")
        if not (isinstance(x, np.ndarray) and x.shape in ((Ak.shape[0],), (Ak.shape[0], 1))):
            raise ValueError(f"{name}(A, x, b): x must be a numpy array of {Ak.shape[0]} "
                             f"values, changed in place (pyamg's)")
        xv = x.reshape(-1)
        bv = np.asarray(b).reshape(-1)
        sgs = amg._sgs[k] if amg._sgs is not None else None
        if sgs is not None:
            out = sgs.post(xv, bv) if self.post else sgs.pre(xv, bv, False)[0]
        else:
            out = amg._smooth(Ak, dinv, lmax, xv, bv, amg.degree)
        if out is not xv:
            xv[...] = out

    def __repr__(self) -> str:
        return (f"<{'post' if self.post else 'pre'}smoother of level {self.level}: "
                f"{getattr(self.amg, 'smoother', 'chebyshev')}, degree {self.amg.degree}>")


def _cycle_flops(nnz: list, cycle: str) -> float:
    """pyamg's ``cycle_complexity`` sums: each level's pre- and post-smoothing cost its nnz,
    the coarsest its nnz once; W visits the next level twice, F an F then a V."""
    last = len(nnz) - 1

    def v(k):
        return nnz[k] if k == last else 2 * nnz[k] + v(k + 1)

    def w(k):
        return nnz[k] if k == last else 2 * nnz[k] + (w(k + 1) if k + 1 == last
                                                       else 2 * w(k + 1))

    def f(k):
        return nnz[k] if k == last else 2 * nnz[k] + (f(k + 1) if k + 1 == last
                                                       else f(k + 1) + v(k + 1))

    return {"V": v, "W": w, "AMLI": w, "F": f}[cycle](0)


def cycle_complexity(amg, cycle="V") -> float:
    """pyamg's ``ml.cycle_complexity(cycle)``: the nonzeros a (1,1) cycle reads over all its
    levels, over the finest level's (its estimate: smoothing costs one product a sweep).
    This hierarchy runs V-cycles; W and F are pyamg's measure of its levels."""
    c = str(cycle).upper()
    if c not in ("V", "W", "F", "AMLI"):
        raise ValueError(f"cycle_complexity(cycle={cycle!r}): 'V', 'W', 'F' or 'AMLI' "
                         f"(pyamg's)")
    nnz = [lv.A.nnz for lv in amg.levels]
    return float(_cycle_flops(nnz, c)) / float(max(nnz[0], 1))


def finish_levels(amg, A, B=None) -> None:
    """Append the coarsest level ``A`` to ``amg.levels`` (pyamg's ``levels``: every level, the
    coarsest last) and set both complexities as pyamg defines them (sum over the levels of
    nnz / rows, over the finest level's). Each level but the coarsest gets pyamg's
    ``presmoother`` / ``postsmoother``; ``B`` (a list: each level's near null space, the
    coarsest's last) sets ``lv.B``."""
    amg.levels = [Level(*lv) for lv in amg.levels] + [Level(A)]
    for k, lv in enumerate(amg.levels[:-1]):
        lv.presmoother = LevelSmoother(amg, k, False)
        lv.postsmoother = LevelSmoother(amg, k, True)
    if B is not None:
        for lv, Bk in zip(amg.levels, B):
            lv.B = Bk
    first = amg.levels[0].A
    amg.operator_complexity = Complexity(sum(lv.A.nnz for lv in amg.levels) / max(first.nnz, 1))
    amg.grid_complexity = Complexity(sum(lv.A.shape[0] for lv in amg.levels)
                                     / max(first.shape[0], 1))


def level_table(amg) -> str:
    """pyamg's ``print(ml)`` table (its MultilevelSolver.__repr__ layout)."""
    total = sum(lv.A.nnz for lv in amg.levels) or 1
    coarse = "dense inverse" if amg.coarse_inv is not None else "sparse LU"
    out = (f"{type(amg).__name__}\n{amg.describe()}\n"
           f"Number of Levels:     {len(amg.levels)}\n"
           f"Operator Complexity:  {amg.operator_complexity:6.3f}\n"
           f"Grid Complexity:      {amg.grid_complexity:6.3f}\n"
           f"Coarse Solver:        {coarse}\n"
           "  level   unknowns     nonzeros\n")
    for n, lv in enumerate(amg.levels):
        out += f"{n:>6} {lv.A.shape[1]:>11} {lv.A.nnz:>12} [{100 * lv.A.nnz / total:2.2f}%]\n"
    return out


def _strength_py(indptr, indices, v, d, theta):
    """:func:`strength`'s kept entries in one pass (``v``: ``|a_ij|``, ``d``: ``|a_ii|``),
    and whether their pattern is symmetric: each entry's mirror is the next unvisited entry
    of its column's row, rows being visited in order (no transpose). Round 37: the numpy
    form (:func:`_strength_numpy`) took 0.12 s of pyamg-equal SA's 0.2 s setup on a 27-point
    40^3 Laplacian (pyamg's C++ 0.007)."""
    n = indptr.shape[0] - 1
    out_ptr = np.zeros_like(indptr)
    out_idx = np.empty_like(indices)
    m = 0
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            c = indices[p]
            if c != i and v[p] > 0 and (theta <= 0 or v[p] >= theta * np.sqrt(d[i] * d[c])):
                out_idx[m] = c
                m += 1
        out_ptr[i + 1] = m
    cursor = out_ptr[:n].copy()
    for i in range(n):
        for p in range(out_ptr[i], out_ptr[i + 1]):
            j = out_idx[p]
            q = cursor[j]
            if q == out_ptr[j + 1] or out_idx[q] != i:
                return out_ptr, out_idx[:m], False
            cursor[j] = q + 1
    return out_ptr, out_idx[:m], True


_STRENGTH_JIT = []


def strength(A: sp.csr_matrix, theta: float = 0.0) -> sp.csr_matrix:
    """Strong connections (off-diagonal, ``|a_ij| >= theta sqrt(|a_ii a_jj|)``) as a
    symmetrised pattern: :func:`_strength_py` under numba, else :func:`_strength_numpy`."""
    from skiff.kernels.backend import numba_available

    from .fused import deferring

    if deferring() or not numba_available():
        return _strength_numpy(A, theta)
    if not _STRENGTH_JIT:
        from numba import njit

        _STRENGTH_JIT.append(njit(cache=True)(_strength_py))
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    n = A.shape[0]
    indptr, indices, sym = _STRENGTH_JIT[0](A.indptr, A.indices, np.abs(A.data),
                                            np.abs(A.diagonal()), float(theta))
    S = sp.csr_matrix((np.ones(indices.shape[0]), indices, indptr), shape=(n, n))
    if not sym:
        S = ((S + S.T.tocsr()) > 0).astype(np.float64).tocsr()   # symmetrise the pattern
        S.sort_indices()
    return S


def _strength_numpy(A: sp.csr_matrix, theta: float = 0.0) -> sp.csr_matrix:
    """:func:`strength` in numpy (without numba; the tests' reference)."""
    A = sp.csr_matrix(A)
    A.sum_duplicates()   # canonical: sorted, no duplicates
    n = A.shape[0]
    d = np.abs(A.diagonal())
    r = np.repeat(np.arange(n), np.diff(A.indptr))
    c = A.indices
    v = np.abs(A.data)
    keep = (r != c) & (v > 0)
    if theta > 0:
        keep &= v >= theta * np.sqrt(d[r] * d[c])
    # CSR straight from the kept entries (rows stay sorted): no COO sort, 3x faster
    indptr = np.zeros(n + 1, dtype=A.indptr.dtype)
    np.cumsum(np.bincount(r[keep], minlength=n), out=indptr[1:])
    S = sp.csr_matrix((np.ones(int(indptr[-1])), c[keep], indptr), shape=(n, n))
    St = S.T.tocsr()   # sorted indices
    if not (np.array_equal(St.indptr, S.indptr) and np.array_equal(St.indices, S.indices)):
        S = ((S + St) > 0).astype(np.float64).tocsr()   # symmetrise the pattern
        S.sort_indices()
    return S


def _aggregate_py(indptr, indices, n):
    agg = np.full(n, -1, dtype=np.int64)
    count = 0
    for i in range(n):                               # pass 1: untouched neighbourhoods
        if agg[i] >= 0:
            continue
        free = True
        for p in range(indptr[i], indptr[i + 1]):
            if agg[indices[p]] >= 0:
                free = False
                break
        if not free or indptr[i] == indptr[i + 1]:
            continue
        agg[i] = count
        for p in range(indptr[i], indptr[i + 1]):
            agg[indices[p]] = count
        count += 1
    first = agg.copy()
    for i in range(n):                               # pass 2: join a neighbouring aggregate
        if agg[i] >= 0:
            continue
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if first[j] >= 0:
                agg[i] = first[j]
                break
    for i in range(n):                               # pass 3: group the leftovers
        if agg[i] >= 0 or indptr[i] == indptr[i + 1]:
            continue                                 # a node without strong neighbours: -1
        agg[i] = count
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if agg[j] < 0:
                agg[j] = count
        count += 1
    return agg, count


_AGG_JIT = None


def aggregate(S: sp.csr_matrix) -> tuple[np.ndarray, int]:
    """Aggregate index of every node and the number of aggregates (numba when available).

    A node with no strong neighbour gets -1: it is in no aggregate (its row of the tentative
    prolongator is zero), since its equation is dominated by its diagonal and the smoother
    alone resolves it (pyamg does the same). As singleton aggregates they were carried to
    every coarse level: rotated anisotropic diffusion (eps 1e-3, P1, 65 025 unknowns) at
    theta 0.25 had 203 of 821 nodes isolated on level 2, coarse levels that densified, and an
    operator complexity of 43.7 (pyamg 1.79)."""
    global _AGG_JIT
    fn = _aggregate_py
    from skiff.kernels.backend import numba_available

    from .fused import deferring

    if not deferring() and numba_available():   # a small first solve: the same, in Python
        if _AGG_JIT is None:
            from numba import njit

            _AGG_JIT = njit(cache=True)(_aggregate_py)
        fn = _AGG_JIT
    agg, count = fn(S.indptr.astype(np.int64), S.indices.astype(np.int64), S.shape[0])
    return agg, int(count)


def _norm_dinv_a(A: sp.csr_matrix, dinv: np.ndarray) -> float:
    """``||D^-1 A||_inf``: a bound of ``rho(D^-1 A)`` valid for any matrix (a Rayleigh
    quotient estimates it only for a real spectrum)."""
    rows = np.abs(dinv) * np.asarray(abs(A).sum(axis=1)).ravel()
    return max(float(rows.max()), 1e-12) if rows.size else 1.0


def is_symmetric(A: sp.csr_matrix, rtol: float = 1e-8) -> bool:
    """``|A - A^H| <= rtol max|A|`` entry by entry (O(nnz)): symmetric, or Hermitian for a
    complex A (a complex symmetric one, Helmholtz's with an absorbing boundary, is not)."""
    # a real A's transpose as it is (its conj() is a copy of the arrays: 0.002 of 0.009 s
    # on a 27-point 31^3 matrix, round 39)
    D = (A - (A.T.conj() if A.dtype.kind == "c" else A.T)).tocsr()
    if D.nnz == 0:
        return True
    top = float(np.abs(A.data).max()) if A.nnz else 0.0
    return float(np.abs(D.data).max()) <= rtol * top


def _gauss_seidel_py(indptr, indices, data, diag, x, b, forward):
    n = x.shape[0]
    for k in range(n):
        i = k if forward else n - 1 - k
        s = b[i]
        for p in range(indptr[i], indptr[i + 1]):
            s -= data[p] * x[indices[p]]
        x[i] += s / diag[i]


_GS_JIT = None


_GS_SP_CACHE: dict = {}   # (data's address, size, forward) -> (data, A, the factor)


def _gauss_seidel_sp(indptr, indices, data, diag, x, b, forward):
    """The sweep of :func:`_gauss_seidel_py` as one sparse triangular solve (scipy):
    ``x += (D + L)^-1 (b - A x)`` forward, ``(D + U)`` backward, ``D`` being ``diag``.
    The triangle's factor (SuperLU in its natural order: the triangle itself) is kept per
    level matrix: built every sweep, a small complex Helmholtz (4 096 unknowns) took 4.0 s
    for its first COCG+AMG solve, the deferred sweeps' matrix building most of it."""
    from scipy.sparse.linalg import splu

    n = x.shape[0]
    key = (data.ctypes.data, data.size, bool(forward))
    hit = _GS_SP_CACHE.get(key)
    if hit is None or hit[0] is not data:
        if len(_GS_SP_CACHE) > 32:
            _GS_SP_CACHE.clear()
        A = sp.csr_matrix((data, indices, indptr), shape=(n, n))
        T = (sp.tril(A, -1) if forward else sp.triu(A, 1)) + sp.diags(diag)
        hit = _GS_SP_CACHE[key] = (data, A, splu(T.tocsc(), permc_spec="NATURAL",
                                                 diag_pivot_thresh=0.0,
                                                 options={"SymmetricMode": True}))
    _, A, lu = hit
    x += lu.solve(b - A @ x)


def _gauss_seidel():
    """The numba Gauss-Seidel sweep, or None without numba (damped Jacobi then); inside a
    small first solve (``fused.deferring``) the same sweep by scipy, not waiting for numba."""
    global _GS_JIT
    from skiff.kernels.backend import numba_available

    from .fused import deferring

    if deferring() and _GS_JIT is None:
        return _gauss_seidel_sp
    if _GS_JIT is None and numba_available():
        from numba import njit

        _GS_JIT = njit(cache=True)(_gauss_seidel_py)
    return _GS_JIT


def _agg_sum(agg, weights, count):
    """Per-aggregate sums of ``weights`` (real or complex: ``np.bincount`` takes real only)."""
    if np.iscomplexobj(weights):
        return (np.bincount(agg, weights=weights.real, minlength=count)
                + 1j * np.bincount(agg, weights=weights.imag, minlength=count))
    return np.bincount(agg, weights=weights, minlength=count)


def _fit_candidates(agg, count, B):
    """Tentative prolongator whose columns on each aggregate are an orthonormal basis of the
    rows of ``B`` there, and the coarse candidates (the R factors, stacked).

    Gram-Schmidt on every aggregate at once (two passes, ``np.bincount`` for the per-aggregate
    dot products): O(n k^2) numpy work. A column whose remainder on an aggregate is under
    1e-10 of ``B``'s norm there is dropped for that aggregate (B is rank-deficient on it).
    The loop over aggregates with one ``np.linalg.qr`` each took 2 s for 33 000 aggregates.
    Nodes in no aggregate (``agg == -1``) get zero rows. A complex ``B`` gets a unitary basis
    (inner products ``conj(q_i) . q_j``)."""
    n_all, k = B.shape
    inside = np.flatnonzero(agg >= 0)
    if inside.size < n_all:
        T, Rc = _fit_candidates(agg[inside], count, np.asarray(B)[inside])
        T = T.tocoo()
        return sp.csr_matrix((T.data, (inside[T.row], T.col)), shape=(n_all, T.shape[1])), Rc
    n = n_all
    Q = np.array(B, dtype=np.result_type(B, np.float64), copy=True)
    R = np.zeros((count, k, k), dtype=Q.dtype)
    keep = np.zeros((count, k), dtype=bool)
    scale = np.sqrt(np.bincount(agg, weights=(np.abs(Q) ** 2).sum(axis=1), minlength=count))
    for j in range(k):
        for _ in range(2):                       # twice is enough (re-orthogonalisation)
            for i in range(j):
                dot = _agg_sum(agg, Q[:, i].conj() * Q[:, j], count)
                R[:, i, j] += dot
                Q[:, j] -= dot[agg] * Q[:, i]
        norm = np.sqrt(np.bincount(agg, weights=np.abs(Q[:, j]) ** 2, minlength=count))
        ok = norm > 1e-10 * np.maximum(scale, 1e-300)
        R[:, j, j] = np.where(ok, norm, 0.0)
        Q[:, j] = np.where(ok[agg], Q[:, j] / np.where(ok, norm, 1.0)[agg], 0.0)
        R[~ok, j, :] = 0.0
        keep[:, j] = ok
    col_of = np.cumsum(keep.ravel()).reshape(count, k) - 1   # coarse column of (aggregate, j)
    ncols = int(keep.sum())
    mask = keep[agg]                                           # (n, k)
    rows = np.broadcast_to(np.arange(n)[:, None], (n, k))[mask]
    T = sp.csr_matrix((Q[mask], (rows, col_of[agg][mask])), shape=(n, ncols))
    return T, R[keep]


IMPROVE_GROWTH = 10.0   # a sweep that grows a candidate's norm past this: diverging, stopped


def improve_candidates(A: sp.csr_matrix, B: np.ndarray, sweeps: int) -> np.ndarray:
    """``B`` after ``sweeps`` symmetric Gauss-Seidel sweeps on ``A x = 0`` (pyamg's default
    ``improve_candidates``): the constant (or the rigid-body modes) bent to what ``A`` finds
    smooth, e.g. flat inside each region of a high-contrast coefficient and decaying to a
    Dirichlet boundary. Damped Jacobi (``w = 2/3``, twice as many steps) without numba."""
    B = np.array(B, dtype=np.result_type(B, A.dtype, np.float64), copy=True)
    if sweeps <= 0:
        return B
    d = A.diagonal()
    gs = _gauss_seidel()
    zero = np.zeros(A.shape[0], dtype=B.dtype)
    for j in range(B.shape[1]):
        col = np.ascontiguousarray(B[:, j])
        size = float(np.linalg.norm(col))
        for _ in range(sweeps):
            last = col.copy()
            if gs is not None:
                gs(A.indptr, A.indices, A.data, d, col, zero, True)
                gs(A.indptr, A.indices, A.data, d, col, zero, False)
            else:
                for _ in range(2):
                    col -= (2.0 / 3.0) * (A @ col) / d
            now = float(np.linalg.norm(col))
            if not np.isfinite(now) or now > IMPROVE_GROWTH * size:
                # round 46 (h6): the sweeps diverge (Gauss-Seidel on a matrix far from
                # diagonally dominant: central differences of a strong convection, 64^2, grew
                # the constant 1e50 a sweep and overflowed, a RuntimeWarning to the user):
                # the candidate before the sweep is kept
                col = last
                break
            size = now
        B[:, j] = col
    return B


def coarse_inverse(dense: np.ndarray) -> np.ndarray:
    """The coarsest level's inverse, or its pseudo-inverse when it is singular to working
    precision: a singular operator (pure Neumann, a graph Laplacian) keeps its null space on
    every level, and ``inv`` of it returns round-off magnified a trillion times, which
    breaks CG at once. Symmetric: eigenvalues under 1e-10 of the largest count as zero;
    otherwise singular values (an SVD, rank-revealing: ``inv`` of a row-scaled Neumann
    Laplacian's coarse matrix had entries of 1e15 and GMRES's residual grew to 1e26).

    The rank is judged on the diagonally scaled ``D^-1/2 A D^-1/2`` (when no diagonal entry
    is 0), and the pseudo-inverse of A keeps that many of A's largest eigen/singular values:
    judged on A itself, a well-posed but badly scaled matrix (diagonal 1 ... 1e10) lost its
    small eigenvalues as "zero", and CG+AMG broke down (``r.Mr = 0``) where Jacobi takes 1
    step. A non-Hermitian or complex indefinite matrix that LU's condition estimate finds
    well-posed is inverted from its LU (:func:`_lu_inverse`; round 37), 6-8x cheaper than
    the SVDs or eigenvectors, the same inverse."""
    if not dense.size:
        return dense.copy()
    diag = np.abs(np.diag(dense))
    d = 1.0 / np.sqrt(diag) if diag.min() > 0 else np.ones(len(diag))
    scaled = dense * d[:, None] * d[None, :]
    scale = float(np.abs(dense).max())
    if scale and np.abs(dense - dense.T.conj()).max() <= 1e-12 * scale:   # Hermitian
        try:  # positive definite and well away from singular: Cholesky, 4x cheaper than eigh
            low = np.linalg.cholesky(scaled)
            pivots = np.diag(low) ** 2
            if pivots.min() > 1e-10 * pivots.max():
                inv_low = np.linalg.inv(low)
                return (inv_low.T.conj() @ inv_low) * d[:, None] * d[None, :]
        except np.linalg.LinAlgError:
            pass
        # complex, indefinite and well-posed: the LU's inverse (1000: 0.23 s CPU, eigvalsh
        # and eigh 1.4); a real one's eigenvectors cost about the LU's (0.25 / 0.27)
        inv = _lu_inverse(scaled) if np.iscomplexobj(scaled) else None
        if inv is not None:
            return (inv + inv.T.conj()) * (0.5 * d[:, None] * d[None, :])
        ws = np.abs(np.linalg.eigvalsh(scaled))
        rank = int((ws > 1e-10 * ws.max()).sum())
        w, V = np.linalg.eigh(dense)
        keep = np.argsort(np.abs(w))[::-1][:rank]
        return (V[:, keep] / w[keep]) @ V[:, keep].T.conj()
    inv = _lu_inverse(scaled)
    if inv is not None:
        return inv * d[:, None] * d[None, :]
    ss = np.linalg.svd(scaled, compute_uv=False)
    rank = int((ss > 1e-10 * ss.max()).sum())
    U, s, Vt = np.linalg.svd(dense)   # s descending: the rank largest are kept
    return (Vt[:rank].T.conj() / s[:rank]) @ U[:, :rank].T.conj()


def _lu_inverse(scaled: np.ndarray) -> np.ndarray | None:
    """The inverse of a (diagonally scaled) double-precision matrix from its LU with partial
    pivoting, or None where the factorisation hits an exact zero pivot or LAPACK's condition
    estimate (``gecon``, 1-norm, a lower bound usually within 3x) times ``3 n`` reaches
    1e10: the 2-norm condition is at most n times the 1-norm one, so the LU answers only
    where the SVD (or eigenvalues) of :func:`coarse_inverse` would keep every value above
    its 1e-10 cut, and that judges the rest. Round 37: the two SVDs took 1.5 s CPU at 1000
    complex unknowns, the LU, estimate and ``getri`` 0.2."""
    if scaled.dtype not in (np.float64, np.complex128):
        return None
    from scipy.linalg.lapack import get_lapack_funcs

    getrf, gecon, getri, getri_lwork = get_lapack_funcs(
        ("getrf", "gecon", "getri", "getri_lwork"), (scaled,))
    lu, piv, info = getrf(scaled)
    if info != 0:                  # info > 0: U[info-1, info-1] is exactly 0
        return None
    rcond, info = gecon(lu, float(np.abs(scaled).sum(axis=0).max()))
    if info != 0 or not rcond > 3e-10 * scaled.shape[0]:
        return None
    lwork, _ = getri_lwork(scaled.shape[0])
    inv, info = getri(lu, piv, lwork=int(np.real(lwork)))
    return inv if info == 0 else None


def _phase_real(A: sp.csr_matrix) -> sp.csr_matrix:
    """``Re(conj(phase(d_i)) A_ij)``: a complex matrix's rows turned so that the diagonal is
    real and positive, then their real part (what the evolution measure looks at)."""
    d = A.diagonal()
    turn = np.conj(d) / np.maximum(np.abs(d), 1e-300)
    return sp.csr_matrix((sp.diags(turn) @ A).real)


def _coarse_nodes(T, agg):
    """The coarse unknowns of a system as nodes: the aggregate each column of ``T`` belongs
    to (its columns are the aggregate's candidates, consecutive) and the column's index in
    it (the candidate, pyamg's 'PDE' of a BSR level)."""
    T = T.tocsc()
    ncols = T.shape[1]
    node = agg[T.indices[T.indptr[:-1]]]
    first = np.full(int(node.max()) + 1 if ncols else 0, ncols, dtype=np.int64)
    np.minimum.at(first, node, np.arange(ncols))
    return node, np.arange(ncols) - first[node]


def _node_size(B) -> int:
    """The unknowns per node that rigid-body modes (or any near-null space whose first d
    columns are the d translations) show: on every consecutive group of d rows those columns
    are diagonal with a non-zero diagonal (x, y[, z] of one node numbered together, as
    ``rigid_body_modes`` and pyamg.gallery's elasticity number them); 1 when no d in (3, 2)
    fits."""
    if B is None or B.ndim != 2:
        return 1
    n, k = B.shape
    for d in (3, 2):
        if k <= d or n % d:
            continue
        blocks = np.asarray(B[:, :d]).reshape(n // d, d, d)
        diag = np.einsum("bii->bi", blocks)
        if np.all(diag != 0) and np.abs(blocks).sum() == np.abs(diag).sum():
            return d
    return 1


def _blocksize(A, blocksize) -> int:
    """Unknowns per node on the finest level: ``blocksize`` when given, else a BSR matrix's
    square block size (pyamg amalgamates a BSR input's blocks: 2-D elasticity as BSR 2x2),
    else 1 (then, with symmetric strength, the node size of rigid-body modes in ``B``:
    :func:`_node_size`). 2-D elasticity (pyamg.gallery, 80 000 unknowns) with the
    rigid-body modes: CG+AMG 11 iterations at operator complexity 1.28 by node (pyamg's 11,
    1.28), 18 at 1.59 by unknown."""
    if blocksize is None:
        shape = getattr(A, "blocksize", (1, 1)) if sp.issparse(A) and A.format == "bsr" else (1, 1)
        blocksize = shape[0] if shape[0] == shape[1] else 1
    if isinstance(blocksize, bool) or not isinstance(blocksize, (int, np.integer)) or (
            blocksize < 1 or A.shape[0] % blocksize):
        raise ValueError(f"amg: blocksize={blocksize!r} must be a positive integer dividing "
                         f"the {A.shape[0]} unknowns (the unknowns of a node, numbered "
                         f"together: 2 for 2-D elasticity)")
    return int(blocksize)


def _aggregate_nodes(S, nodes):
    """:func:`aggregate` of unknowns, or, on a coarse level of a system, of its nodes (two
    nodes are strongly connected when any of their unknowns are, pyamg's amalgamation of a
    BSR level), every unknown of a node in the node's aggregate. Aggregating the unknowns
    one by one split nodes: rigid-body modes, 3-D elasticity, CG+AMG 43 iterations against
    pyamg's 35 (evolution strength: operator complexity 11-13)."""
    if nodes is None:
        return aggregate(S)
    node_of = nodes[0]
    n, nn = S.shape[0], int(node_of.max()) + 1
    rows = node_of[np.repeat(np.arange(n), np.diff(S.indptr))]
    cols = node_of[S.indices]
    off = rows != cols
    # the node pattern: one COO -> CSR pass (N^T S N was two sparse products)
    Sn = sp.csr_matrix((np.ones(int(off.sum())), (rows[off], cols[off])), shape=(nn, nn))
    Sn.sum_duplicates()
    Sn.data[:] = 1.0
    agg_n, count = aggregate(Sn)
    return agg_n[node_of], count


STRENGTHS = ("auto", "symmetric", "evolution")
# the symmetric cycle's: Chebyshev in D^-1 A, or in S A (amg_schwarz), or nodal-block
# symmetric Gauss-Seidel (amg_gs; the host's, with numba)
SMOOTHERS = ("auto", "jacobi", "schwarz", "schwarz-overlap", "gauss-seidel")
EVOLUTION_EPSILON = 4.0
symmetric_strength = strength
# a real non-symmetric matrix whose diagonal spans more than this factor is set up and cycled
# row-scaled by its diagonal (D^-1 A); below, the hierarchy of A (no change on matrices whose
# rows share a scale: convection-diffusion)
ROW_SCALE_SPREAD = 2.0

# strength='auto' on a scalar symmetric matrix whose diagonal spans more than CONTRAST_SPREAD:
# symmetric strength with theta CONTRAST_THETA (high-contrast coefficients), not evolution
CONTRAST_SPREAD = 1e4
CONTRAST_THETA = 0.1
CONTRAST_GAP = 2.0   # decades: a gap in the sorted diagonal that shows separate bands
# smoother='auto' takes the nodal-block Gauss-Seidel for a system whose finest rows hold this
# many entries on average (3-D P1 elasticity: 32; 2-D: 12-18, where it does not pay)
GS_MIN_ROW = 24

# the prolongators of a hierarchy whose finest evolution strength (one candidate, symmetric
# real) drops at least FILTER_WEAK of A's off-diagonal entries (anisotropy) are smoothed with
# each level's filtered matrix (:func:`filtered`), not A (w from A's rho: the filtered one's
# own estimate gave aniso 74 CG iterations for 77, at 15 products more a level). On
# grid-aligned anisotropy the weak directions' entries widened P and each coarse stencil
# (40^3, y and z at 1e-2: 64 000 > 22 400 > 8 000 rows of 353 entries, operator complexity
# 10.3, setup 2.4 s -> 1.97, 0.12 s, 8 CG iterations both; pyamg's evolution SA the same 10.3,
# its default symmetric strength 1.53 and 25 iterations). Every level filtered (p1: 15% weak
# on the finest, 38-64% on the coarse) cost p1 an iteration (15 -> 16): hence the finest's
# fraction decides (FILTER_WEAK above 1: never filtered, the hierarchy before round 36).
FILTER_WEAK = 0.25

DENSE_COARSE = 1000   # a larger coarsest level (coarsening stalled) gets a sparse LU


def _uniform_py(indptr, indices, data):
    """:func:`_uniform_stencil` in two passes over a canonical CSR matrix (round 37: the
    numpy form took 0.25 s CPU on a 27-point 80^3 matrix before the setup's first cancel
    check; this one 0.02)."""
    n = indptr.shape[0] - 1
    lo = np.inf
    hi = -np.inf
    for i in range(n):
        diag = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            v = data[p]
            if indices[p] == i:
                diag = v
            elif v > 0:
                return False
            elif v < 0:
                lo = min(lo, v)
                hi = max(hi, v)
        if not diag > 0:
            return False
    if lo == np.inf or lo < hi * (1.0 + 1e-12):
        return False
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] == i and data[p] < (1.0 - 1e-12) * (indptr[i + 1] - indptr[i] - 1) * -lo:
                return False
    return True


_UNIFORM_JIT = []


def _uniform_stencil(A: sp.csr_matrix) -> bool:
    """Whether every nonzero off-diagonal entry of ``A`` (real) is the same negative value
    ``v`` (to 1e-12) and each row's diagonal is at least ``|v|`` times its other entries (a
    weakly dominant, constant-coefficient Laplacian's stencil; not a shifted, indefinite
    one): :func:`_uniform_py` under numba for a canonical matrix, else
    :func:`_uniform_numpy`."""
    from skiff.kernels.backend import numba_available

    from .fused import deferring

    if not A.has_canonical_format or deferring() or not numba_available():
        return _uniform_numpy(A)
    if not _UNIFORM_JIT:
        from numba import njit

        _UNIFORM_JIT.append(njit(cache=True)(_uniform_py))
    return bool(_UNIFORM_JIT[0](A.indptr, A.indices, A.data))


def _uniform_numpy(A: sp.csr_matrix) -> bool:
    """:func:`_uniform_stencil` in numpy: passes over the values and the row lengths, no row
    indices: the positive entries are the diagonal's exactly when they are as many as the
    rows and the diagonal is positive."""
    data = A.data
    neg = data[data < 0]
    if not neg.size or np.count_nonzero(data > 0) != A.shape[0]:
        return False
    if neg.min() < neg.max() * (1.0 + 1e-12):
        return False
    d = A.diagonal()
    others = np.diff(A.indptr) - 1   # explicit zeros counted too: the test errs strict
    return bool((d > 0).all() and (d >= (1.0 - 1e-12) * others * -neg.min()).all())


def _banded(A: sp.csr_matrix) -> bool:
    """Whether ``A``'s diagonal spans more than ``CONTRAST_SPREAD`` in separate bands (sorted,
    its logarithm jumps by more than ``CONTRAST_GAP`` decades somewhere): a coefficient
    piecewise constant with a high contrast (inclusions, two materials), not a continuous
    (log-normal) field, whose diagonal fills the range."""
    d = np.abs(A.diagonal())
    d = d[d > 0]
    if d.size < 2 or d.max() <= CONTRAST_SPREAD * d.min():
        return False
    return float(np.diff(np.sort(np.log10(d))).max()) > CONTRAST_GAP


def _row_scaled(M, d, w) -> sp.csr_matrix:
    """``w * diag(d) @ M`` by scaling ``M``'s entries in place (the same values bit for bit as
    the product with ``sp.diags(d)``, without its DIA -> CSR conversion and sparse product)."""
    M = sp.csr_matrix(M)
    M.data *= np.repeat(w * d, np.diff(M.indptr))   # (w d_i) a_ij, as (w D) @ M
    return M


# a filtered finest matrix (:func:`filtered`) whose diagonal keeps under FILTER_DIAG of A's (the
# median row) is not used: the weak entries lumped there were negative couplings of weight
# (round 47 h12, pyamg's ``diffusion_stencil_2d(1e-3, theta, 'FD')``, 96^2, CG iterations
# filtered / A: 30 degrees diagonal 0.75, 24 / 16 (its row split over 2 ranks, whose coarse
# level smooths with A: 9 on 64^2); 15 degrees 0.93, 14 / 15; 'FE' 15 and 30 degrees 1.34
# and 1.20, 30 / 41 and 19 / 24; grid-aligned 1.0, the same count at 1.87 against 4.2
# operator complexity)
FILTER_DIAG = 0.85


def _lumped_away(A: sp.csr_matrix, F: sp.csr_matrix) -> bool:
    """Whether the filtered ``F`` lost more than ``1 - FILTER_DIAG`` of ``A``'s diagonal."""
    d = np.asarray(A.diagonal())
    ok = d != 0
    if not ok.any():
        return False
    return float(np.median(np.real(np.asarray(F.diagonal())[ok] / d[ok]))) < FILTER_DIAG


def filtered(A: sp.csr_matrix, S: sp.csr_matrix, b: np.ndarray) -> sp.csr_matrix:
    """The filtered matrix that smooths the prolongator (Vanek, Mandel, Brezina 1996): ``A``'s
    strong entries (``S``'s pattern, a subgraph of ``A``'s) and its diagonal, each weak entry
    lumped into the diagonal weighted by the candidate ``b`` (``a^F_ii = a_ii + sum_weak a_ij
    b_j / b_i``), so that ``A^F b = A b`` and ``P = (I - w D^-1 A^F) T`` keeps ``P b_c = T
    b_c`` as well as the unfiltered one does (for the constant: the plain lumping)."""
    n = A.shape[0]
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    cols = A.indices
    # an entry of A is strong when (row, column) is one of S's: one sorted-key lookup
    key = rows.astype(np.int64) * n + cols
    skey = np.repeat(np.arange(n, dtype=np.int64), np.diff(S.indptr)) * n + S.indices
    hit = np.minimum(np.searchsorted(skey, key), max(skey.size - 1, 0))
    strong = skey[hit] == key if skey.size else np.zeros(key.size, dtype=bool)
    diag = rows == cols
    weak = ~strong & ~diag
    bb = np.where(b == 0, 1.0, b)
    lump = np.bincount(rows[weak], weights=A.data[weak] * bb[cols[weak]], minlength=n) / bb
    data = np.where(weak, 0.0, A.data)
    data[diag] += lump[rows[diag]]
    F = sp.csr_matrix((data, A.indices.copy(), A.indptr.copy()), shape=A.shape)
    F.eliminate_zeros()
    return F


def _dense_enough(A: sp.csr_matrix) -> bool:
    """A coarse level at least half full and at most 4 DENSE_COARSE unknowns: coarsened
    further, its strength (evolution: (I - w D^-1 A)^2, dense) and Galerkin product cost
    more than its dense inverse (a Watts-Strogatz graph's 1 321-unknown full level: 6 s of
    evolution strength, to coarsen it to 4)."""
    n = A.shape[0]
    return n <= 4 * DENSE_COARSE and A.nnz >= 0.5 * n * n


def _sparse_lu(A: sp.csr_matrix):
    """SuperLU of the coarsest level when coarsening stalled above ``DENSE_COARSE`` unknowns
    (a diagonal or block-diagonal matrix: every aggregate a single node or block). The dense
    inverse took 20 s at 4000 unknowns and would need 80 GB at 100 000. A level whose rows
    sum to zero (pure Neumann) gets a shift of 1e-10 of its diagonal: the coarse correction
    only needs to be close."""
    from scipy.sparse.linalg import splu

    n = A.shape[0]
    top = float(abs(A).max()) if A.nnz else 1.0
    empty = np.diff(A.indptr) == 0     # a null vector's aggregate: x = b (0 for a compatible b)
    if empty.any():
        A = A + sp.diags(empty.astype(np.float64) * max(top, 1e-300))
    if np.abs(A @ np.ones(n)).max() <= 1e-10 * top * np.sqrt(n):
        A = A + 1e-10 * float(np.abs(A.diagonal()).max()) * sp.identity(n, format="csr")
    return splu(sp.csc_matrix(A))


# a coarse level with more entries than its fine level and more than FILL_LIMIT times its
# entries per row takes the unsmoothed prolongator instead (complex networks' hubs: see
# SmoothedAggregation.__init__)
FILL_LIMIT = 16


class SmoothedAggregation:
    # the Chebyshev interval is [cheb_lower * lmax, lmax]. 0.05: nearly incompressible 3-D
    # elasticity (el3i, nu 0.49) 87 -> 81 CG iterations, but pyamg's 2-D gallery elasticity
    # 10 -> 11, p1 17 -> 18, p3d 11 -> 13 (round 30b); 0.2 and 0.3 more everywhere
    cheb_lower = 0.1
    """A smoothed-aggregation hierarchy for a sparse matrix ``A``, with V-cycles on ``xp``.

    Parameters
    ----------
    A : scipy.sparse matrix, square
    theta : float
        Strength threshold (0 keeps every connection).
    max_coarse : int
        Coarsen until at most this many unknowns remain (solved by a dense inverse).
    degree : int
        Chebyshev smoothing degree (pre and post); the number of Gauss-Seidel (or Jacobi)
        sweeps for a non-symmetric matrix (the same number of products with A).
    B : array (n, k), optional
        Near-null-space vectors the coarse spaces must represent (default: the constant). For
        elasticity, the rigid-body modes (pyamg.gallery.linear_elasticity returns them): each
        aggregate then gets ``k`` tentative basis functions, the QR factors of ``B`` on it.
    improve : int
        Symmetric Gauss-Seidel sweeps on ``A x = 0`` applied to ``B`` (the constant when not
        given) before the finest level's fit, as pyamg's default ``improve_candidates``
        (4 sweeps); 0 keeps ``B`` as given. On a 1e-6..1e6 checkerboard coefficient (P1,
        261 121 unknowns) CG+AMG took 93 iterations with the plain constant, 51 now (pyamg 61).
    strength : 'auto', 'symmetric' or 'evolution'
        The strength of connection. 'symmetric': ``|a_ij| >= theta sqrt(|a_ii a_jj|)``.
        'evolution' (``amg_strength.evolution_strength``, pyamg's k=2, epsilon=4; ``theta``
        is not used): how two Jacobi steps spread a point source, compared with the
        candidate, or, for several (rigid-body modes), with its constrained least-squares
        fit by them (pyamg's connections exactly, given its estimate of rho). 'auto':
        evolution for one candidate (scalar problems; symmetric with theta >= 0.1 where the
        diagonal spans more than 1e4 in separate bands, a piecewise-constant coefficient of
        high contrast: ``_banded``),
        symmetric with ``theta`` for several:
        on elasticity evolution saves 10-30 % of the CG iterations (3-D, nu 0.45: 31 vs 43;
        pyamg's evolution 30) at operator complexity 3.8 instead of 1.3 and 3-4x the setup,
        so the solve takes longer in all. With several candidates the coarse unknowns are
        aggregated by node (an aggregate's candidates stay together), as pyamg's BSR levels. Rotated
        anisotropic diffusion (eps 1e-3, 30 degrees, P1, 261 121 unknowns): CG+AMG 212
        iterations with symmetric theta 0, 103 with evolution at complexity 1.41 (pyamg's
        evolution: 104, 1.38). Setup costs 1.5-2.5x the symmetric one. Grid-aligned
        anisotropy (pyamg's diffusion_stencil_2d, eps 1e-3, 200x200) semi-coarsens: 9-12
        iterations instead of 114-166 but operator complexity 3.3-4.8 (pyamg's evolution
        the same); since round 36 the prolongator is smoothed with the filtered matrix there
        (as pyamg's ``filter_entries=True``): 300^2 at 1e-3 complexity 4.7 -> 1.9, 8
        iterations, and the rotated case 97 -> 77 iterations at 1.27; 'symmetric' when
        memory matters more (complexity 1.1-1.3).
    smoother : 'auto', 'jacobi', 'gauss-seidel', 'schwarz' or 'schwarz-overlap'
        The symmetric cycle's smoother: 'gauss-seidel', ``degree / 2`` symmetric sweeps of
        nodal-block Gauss-Seidel (:mod:`.amg_gs`, pyamg's default smoother; real symmetric
        matrices on the host, else 'jacobi'); 'auto' (the default) takes it for a system
        (``blocksize`` > 1, or rigid-body modes in ``B``) and 'jacobi' for the rest; or a
        Chebyshev polynomial (``degree``) in ``D^-1 A`` ('jacobi') or in ``S A``, ``S`` the
        inverse of the diagonal blocks of each level's aggregates ('schwarz',
        :mod:`.amg_schwarz`; symmetric matrices only), or of the aggregates grown by one
        layer of neighbours, summed ('schwarz-overlap':
        additive Schwarz, several times ``A``'s entries). For errors local but not
        constant: P2 elements straddling jumps of 1e6 (8 065 unknowns): 521 CG iterations
        -> 133 ('schwarz'), 36 ('schwarz-overlap'; pyamg SA 1566, with its Schwarz 35).
    blocksize : int, optional
        Unknowns per node (numbered together), aggregated together on the finest level with
        symmetric strength, as pyamg does for a BSR matrix; default a BSR input's block
        size, or the node size of rigid-body modes in ``B`` (their translations), else 1.
        With ``blocksize`` > 1 and no ``B``, B is each unknown's constant (pyamg's default).
        2-D elasticity (pyamg.gallery, 80 000 unknowns, CSR): 11 CG iterations at
        complexity 1.28 (pyamg 11, 1.28) where the unknowns one by one took 18 at 1.59.
    xp : array module of the cycles (numpy or cupy)
    symmetric : bool, optional
        Whether ``A`` is symmetric (looked at when not given): a non-symmetric one gets the
        non-symmetric setup and smoother (see the module's text).
    reuse : SmoothedAggregation, optional
        A hierarchy built on a matrix of the same sparsity pattern (the previous Newton or
        time step): its aggregates are kept (no strength of connection, no aggregation) and
        everything else (candidates, prolongators, coarse matrices, smoother bounds) is
        built on ``A``'s values. Another pattern is ignored (a full setup).
    contrast : bool, optional
        Whether ``A``'s coefficient has a high contrast (``strength='auto'`` then takes
        symmetric strength, theta >= 0.1); None: from ``A``'s diagonal (``_banded``). A row
        split's blocks are given the whole matrix's answer (round 44 h4: 30 % of the cells
        1e4 at random, 160^2 over 24 ranks: two blocks' diagonals spanned under 1e4, their
        evolution strength put the high cells into aggregates with low ones, CG 38
        iterations against 6 on one rank).
    """

    def __init__(self, A, *, theta=0.0, max_coarse=400, max_levels=12, degree=2, B=None,
                 xp=np, symmetric=None, improve=4, strength="auto", blocksize=None,
                 reuse=None, smoother="auto", contrast=None):
        if strength not in STRENGTHS:
            raise ValueError(f"amg: strength={strength!r}; use one of {STRENGTHS}")
        if smoother not in SMOOTHERS:
            raise ValueError(f"amg: smoother={smoother!r}; use one of {SMOOTHERS} ('schwarz': "
                             f"block-Jacobi on the aggregates, for jumps inside elements)")
        given = blocksize
        blocksize = _blocksize(A, blocksize)
        A = sp.csr_matrix(A)
        self.complex = A.dtype.kind == "c"
        self.dtype = np.dtype(np.complex128 if self.complex else np.float64)
        A = A.astype(self.dtype)
        A.sort_indices()
        self._finest = A   # before any row scaling: solve()'s residuals (pyamg's ml.solve)
        if B is not None:
            B = np.asarray(B)
            B = B.astype(np.result_type(B.dtype, np.float64)).reshape(A.shape[0], -1)
            if B.dtype.kind == "c" and not self.complex:
                raise ValueError("amg: B (the near-null space) is complex and A is real; "
                                 "give real candidates, or a complex A")
        elif blocksize > 1:
            # round 48 (h6): a node system (a BSR input, or blocksize=) without B gets
            # pyamg's default candidates, each of the node's unknowns' constant (the
            # translations): 2-D elasticity as BSR 2x2 (pyamg.gallery, 80^2 nodes) at nu
            # 0.45 / 0.49 took 129 / 250 CG iterations with the scalar constant (pyamg's
            # 22 / 44), now 24 / 53; nu 0.3 8 at operator complexity 1.97 -> 13 at 1.12
            B = np.kron(np.ones((A.shape[0] // blocksize, 1)), np.eye(blocksize))
        self.xp = xp
        self.degree = int(degree)
        # symmetric: Hermitian for a complex A (Chebyshev smoothing, R = P^H); a complex
        # symmetric A (Helmholtz with an absorbing boundary) is treated as non-symmetric:
        # Gauss-Seidel, R from A^T (= P^T there), as pyamg's 'nonsymmetric'
        self.symmetric = bool(is_symmetric(A) if symmetric is None else symmetric)
        if smoother == "auto":   # see SMOOTHERS; decided below, once the node size is known
            pass
        elif smoother.startswith("schwarz") and not self.symmetric:
            raise ValueError(f"amg: smoother={smoother!r} (a Chebyshev polynomial in S A) needs a "
                             "symmetric (Hermitian) matrix; a non-symmetric one is smoothed "
                             "by Gauss-Seidel: leave smoother='jacobi' (the default)")
        host_real = self.symmetric and not self.complex and xp is np
        if smoother == "gauss-seidel" and not host_real:
            smoother = "jacobi"   # block SGS: real symmetric on the host; Chebyshev elsewhere
        # a real non-symmetric matrix whose rows are scaled apart (D S: equations in other
        # units, rows multiplied through): the hierarchy of D^-1 A, applied to D^-1 r
        self.row_scale = None
        if not self.symmetric and not self.complex and A.shape[0]:
            d = np.abs(A.diagonal())
            if d.min() > 0 and d.max() > ROW_SCALE_SPREAD * d.min():
                # 150^2 Laplacian, rows scaled by 10^U(-3, 3): GMRES+AMG 682 iterations,
                # 8.6 s -> 9 (the V-cycle of A itself: strength, R and the coarse levels
                # weigh the rows by their scale; pyamg's: |r|/|b| = 1e2 after 12)
                self.row_scale = 1.0 / A.diagonal()
                A = (sp.diags(self.row_scale) @ A).tocsr()
                A.sort_indices()
        # symmetric Gauss-Seidel for a non-symmetric matrix where numba runs it (the host)
        self._gs = None if self.symmetric or xp is not np else _gauss_seidel()
        self.levels = []                 # (A, dinv, lmax, P, R) per level, host copies
        self.contrast = False
        if strength == "auto":           # evolution for one candidate (scalar problems)
            strength = "evolution" if B is None or B.shape[1] == 1 else "symmetric"
            if strength == "evolution" and self.symmetric and not self.complex and (
                    _banded(A) if contrast is None else bool(contrast)):
                # a coefficient of high contrast (its diagonal spans > CONTRAST_SPREAD):
                # symmetric strength, theta >= CONTRAST_THETA, keeps a high cell's weak
                # links to low cells out of its aggregate, so aggregates follow the
                # high-coefficient clusters. 3-D finite volumes, 30 % of the cells 1e6 at
                # random (32 768): CG+AMG 445 iterations (7.4 s) with evolution strength ->
                # 16 (0.24 s; pyamg SA 981, its Ruge-Stueben 16); 10 % 28 -> 14, 60 % 13 ->
                # 11; the 1e-6..1e6 checkerboard 40 -> 25, P2 with 1e6 inclusions 572 -> 367.
                # Not a continuous (log-normal) field: evolution does better there (256^2,
                # sigma 2 decades: 69 against 199 with symmetric 0.1; 40^3: 15 against 18)
                # (round 44 h4: ``contrast`` given, the whole matrix's answer for a row
                # split's blocks: each block deciding alone, some missed it)
                strength, theta = "symmetric", max(theta, CONTRAST_THETA)
                self.contrast = True
            elif (strength == "evolution" and B is None and self.symmetric
                  and not self.complex and _uniform_stencil(A)):
                # a constant-coefficient stencil (finite-difference Poisson, 5-, 7-, 27-
                # point): evolution strength keeps every connection of its finest level,
                # as symmetric strength at theta 0 (pyamg's SA default) does, at 1.4x the
                # setup; the same levels as pyamg's SA (round 37, CPU s setup, CG its:
                # 27-point 40^3 0.21 -> 0.15, 8 = 8; 7-point 48^3 0.19 -> 0.14, 9 = 9;
                # 5-point 300^2 0.067 -> 0.055, 9 = 9)
                strength = "symmetric"
        self.strength = strength
        if given is None and blocksize == 1:   # the nodes rigid-body modes show
            blocksize = _node_size(B)
        if smoother == "auto":
            # a system (nodes of 2-3 unknowns: elasticity with its rigid-body modes) gets the
            # nodal-block symmetric Gauss-Seidel (amg_gs), as pyamg's BSR levels: 3-D
            # elasticity at nu 0.49 (el3i) 87 -> 66 CG iterations (pyamg 66), the solve
            # 0.107 -> 0.073 s; nu 0.45 43 -> 36; a scalar problem keeps Chebyshev: its
            # short rows make a sweep (a chain of dependent rows) 3-4x a product with A,
            # not 1.5x (P1 Poisson 130 561: 17 -> 18 iterations, 0.28 -> 0.39 s), and so do
            # 2-D systems' (pyamg's gallery elasticity, 180 000, 18 entries a row: 11 = 11
            # iterations, 0.70 -> 0.90 s): GS_MIN_ROW entries a row on average or more
            long_rows = A.nnz >= GS_MIN_ROW * A.shape[0]
            smoother = ("gauss-seidel" if host_real and blocksize > 1 and long_rows
                        else "jacobi")
        self.smoother = smoother
        # a level of a system: (node of each unknown, its component); the finest level's
        # nodes are a BSR input's blocks (or blocksize=, or the modes'), as pyamg
        # amalgamates them, with symmetric strength; evolution strength keeps the unknowns
        # (by node its 3-D elasticity complexity went 4.2 -> 6.7, pyamg's 4.8)
        # another hierarchy's aggregates, when its finest matrix has this one's pattern
        # (a Newton step, a time step): no strength nor aggregation, the rest recomputed
        kept = reuse.aggregates if reuse is not None and reuse.same_pattern(A) else []
        self.aggregates = []   # (agg, count) per level, for a later reuse
        # per level the strength pattern P was smoothed with filtered (None: with A), reused
        # as the aggregates are (a reused anisotropic hierarchy smoothed with A: 10x denser)
        self.filters = []
        kept_filters = reuse.filters if kept else []
        self.unsmoothed = []   # levels whose prolongator is the tentative T (fill-in guard)
        self.reused = bool(kept)
        nodes = None
        node_bs = [blocksize]   # unknowns per node of each level (the block smoother's blocks)
        if blocksize > 1 and strength == "symmetric":
            unknowns = np.arange(A.shape[0])
            nodes = (unknowns // blocksize, unknowns % blocksize)
        level_B = []   # each level's near null space (pyamg's levels[k].B), round 40
        while A.shape[0] > max_coarse and len(self.levels) < max_levels - 1:
            checkpoint()   # a cancel between the phases of a long setup (cancel.py)
            if self.levels and _dense_enough(A):
                break   # a dense coarse level: its dense inverse, not strength on A^2 (below)
            d = A.diagonal()
            if np.any(d == 0) and self.levels and not np.diff(A.indptr)[d == 0].any():
                break   # aggregates of null vectors (separate pure-Neumann pieces): coarsest
            if np.any(d == 0):
                i = int(np.flatnonzero(d == 0)[0])
                where = f" of coarse level {len(self.levels)}" if self.levels else ""
                raise ValueError(f"amg: the matrix has zeros on its diagonal (entry {i}{where})"
                                 f"; AMG's smoothers divide by it: a saddle-point (KKT) "
                                 f"matrix needs precond='none' with method='gmres'")
            dinv = 1.0 / d
            # lmax: the Chebyshev interval's top (symmetric); the bound ||D^-1 A||_inf else
            lmax = (1.1 * rho_dinv_a(A, dinv, seed=1) if self.symmetric
                    else _norm_dinv_a(A, dinv))
            evolve = strength == "evolution"
            level = len(self.levels)
            reusing = level < len(kept) and kept[level][0].size == A.shape[0]
            if reusing:
                agg, count = kept[level]
                evolve = False
            elif evolve:   # the candidate before improvement (as pyamg)
                # a complex A: the measure on the real part of A with each row turned by
                # its diagonal's phase (Helmholtz's K - k^2 M: the imaginary part is the
                # absorbing boundary's, or a shift; i L is L). The real part alone was 0 on
                # i L: a division by its zero diagonal, NaN
                real = not self.complex
                S = evolution_strength(A if real else _phase_real(A),
                                       B if B is None else B.real,
                                       epsilon=EVOLUTION_EPSILON,
                                       symmetric=self.symmetric and real,
                                       rho=lmax / 1.1 if self.symmetric and real else None,
                                       local=None if nodes is None else nodes[1])
            else:
                S = symmetric_strength(A, theta)
            checkpoint()
            if not reusing:
                agg, count = _aggregate_nodes(S, nodes)
            if evolve and (count == 0 or count >= A.shape[0]):
                # nothing strong (a mass-dominated M + dt K: M's positive off-diagonals turn
                # the evolved deltas' sign): symmetric strength, not an LU of the whole level
                S = symmetric_strength(A, theta)   # (the filter's pattern too)
                agg, count = _aggregate_nodes(S, nodes)
            if count >= A.shape[0] or count == 0:
                break
            self.aggregates.append((agg, count))
            n = A.shape[0]
            if not self.levels and improve > 0:   # the finest level's candidates, smoothed
                B = improve_candidates(A, np.ones((n, 1)) if B is None else B, improve)
            checkpoint()
            level_B.append(np.ones((n, 1)) if B is None else B)   # what T is fit to
            bfine = np.ones(n) if B is None else B[:, 0]   # the candidate the filter keeps
            if B is None:
                # -1: no strong neighbour, a zero row; one entry a row, 1/sqrt(size of the
                # aggregate), as CSR straight away (was a COO -> CSR, a column sum and a
                # sparse product with a diagonal: the same values)
                member = agg >= 0
                size = np.bincount(agg[member], minlength=count).astype(np.float64)
                indptr = np.zeros(n + 1, dtype=np.int64)
                np.cumsum(member, out=indptr[1:])
                T = sp.csr_matrix(((1.0 / np.sqrt(size))[agg[member]], agg[member], indptr),
                                  shape=(n, count))
            else:
                T, B = _fit_candidates(agg, count, B)
            # the coarse unknowns come in nodes (one per aggregate) for several candidates
            nodes = _coarse_nodes(T, agg) if B is not None and B.shape[1] > 1 else None
            k = B.shape[1] if B is not None else 1
            node_bs.append(k if nodes is not None and T.shape[1] % k == 0 and np.array_equal(
                nodes[1], np.arange(T.shape[1]) % k) else 1)
            # w = 4/3 / rho(D^-1 A) (pyamg's), from the estimate itself: lmax carries the
            # Chebyshev interval's 10 % margin, and w 10 % under pyamg's cost one iteration
            # on most bench matrices (el3i 89 -> 87, el3 26 -> 25, p1 18 -> 17, contrast 41
            # -> 40; p2 21 both)
            rho = lmax / 1.1 if self.symmetric else lmax
            As = A
            if not self.levels:   # anisotropy: the finest strength drops FILTER_WEAK
                filtering = (evolve and self.symmetric and k == 1
                             and not self.complex
                             and S.nnz <= (1.0 - FILTER_WEAK) * (A.nnz - n))
            if reusing:
                self.filters.append(kept_filters[level])
            else:
                self.filters.append(S if filtering and evolve and S.nnz < A.nnz - n
                                    else None)
            if self.filters[-1] is not None:
                As = filtered(A, self.filters[-1], bfine)
                if not self.levels and not reusing and _lumped_away(A, As):
                    # round 47 (h12): the weak entries lumped took a fifth of the diagonal
                    # or more (strong couplings the measure called weak), so P smoothed with
                    # A, pyamg's default: pyamg's FD 30-degree anisotropy 64^2, CG 20 -> 14
                    filtering, As = False, A
                    self.filters[-1] = None
            P = (T - _row_scaled(As @ T, dinv, 4.0 / 3.0 / rho)).tocsr()
            if self.symmetric:
                R = P.T.conj().tocsr()
            else:  # the left near-null space: T smoothed with A^T (pyamg's 'nonsymmetric')
                At = A.T.tocsr()
                R = (T - _row_scaled(At @ T, dinv, 4.0 / 3.0 / _norm_dinv_a(At, dinv))).T
                R = R.tocsr()
            # a row of P with c entries puts a c x c block in P^T A P: when the widest
            # one alone outgrows A, the product (seconds, then dropped) is not formed
            wide = int(np.diff(P.indptr).max(initial=0)) ** 2 > FILL_LIMIT * A.nnz
            checkpoint()
            Ac = None if wide else (R @ A @ P).tocsr()
            if wide or (Ac.nnz > A.nnz and Ac.nnz * n > FILL_LIMIT * A.nnz * Ac.shape[0]):
                # a coarse level with more entries than its fine one and FILL_LIMIT times
                # its entries per row: the smoothed prolongator spreads a hub (a scale-free
                # graph's node of degree hundreds) over most aggregates, so the Galerkin
                # product fills in (Barabasi-Albert, 20 000 nodes: 9x the entries, 142x per
                # row; 50 000: strength on the dense level ran > 300 s, pyamg 18 s; a
                # small-world graph's 3.4x, 35x per row). The unsmoothed one (T: the
                # aggregates' quotient graph, never denser than A) keeps the level sparse.
                # PDEs stay under: 3-D elasticity by unknowns with evolution strength 2.8x
                # the entries, 9.1x per row; Poisson, elasticity by nodes <= 0.7x, <= 3.8x
                P = T.tocsr()
                R = P.T.conj().tocsr()
                Ac = (R @ A @ P).tocsr()
                self.unsmoothed.append(len(self.levels))
            self.levels.append((A, dinv, lmax, P, R))
            A = Ac
            A.eliminate_zeros()
            A.sort_indices()
        self.coarse_n = A.shape[0]
        if smoother.startswith("schwarz"):   # S (aggregates' block inverses) for D^-1
            for k, ((Ak, _, _, Pk, Rk), (agg, count)) in enumerate(zip(self.levels,
                                                                        self.aggregates)):
                S = block_inverse(Ak, agg, count, overlap=smoother == "schwarz-overlap")
                self.levels[k] = (Ak, S, 1.1 * rho_sa(Ak, S), Pk, Rk)
        self._sgs = None
        if smoother == "gauss-seidel":
            from .amg_gs import BlockSGS

            self._sgs = [BlockSGS.build(lv[0], bs, max(1, self.degree // 2))
                         for lv, bs in zip(self.levels, node_bs)]
        self._dev = [self._to_device(*level) for level in self.levels]
        self._scale = None if self.row_scale is None else xp.asarray(self.row_scale)
        self.coarse_inv = self.coarse_lu = None
        if A.shape[0] <= DENSE_COARSE or _dense_enough(A):
            self.coarse_inv = xp.asarray(coarse_inverse(A.toarray()))
        else:
            self.coarse_lu = _sparse_lu(A)
        # levels as pyamg's: the coarsest last, complexities, smoothers, B
        finish_levels(self, A, level_B + [np.ones((A.shape[0], 1)) if B is None else B])

    def same_pattern(self, A) -> bool:
        """Whether ``A`` (CSR, sorted) has this hierarchy's finest sparsity pattern."""
        if len(self.levels) < 2:
            return False
        F = self.levels[0].A
        return (A.shape == F.shape and A.nnz == F.nnz and np.array_equal(A.indptr, F.indptr)
                and np.array_equal(A.indices, F.indices))

    def _to_device(self, A, dinv, lmax, P, R):
        xp = self.xp
        block = sp.issparse(dinv)   # smoother='schwarz': S, applied as dinv is
        if xp is np:
            return A, BlockInverse(dinv) if block else dinv, lmax, P, R
        import cupyx.scipy.sparse as csp  # only on a GPU device; cupy is present then

        from .cuda import device_csr

        return (device_csr(csp.csr_matrix(A)),
                BlockInverse(device_csr(csp.csr_matrix(dinv))) if block else xp.asarray(dinv),
                lmax, device_csr(csp.csr_matrix(P)), device_csr(csp.csr_matrix(R)))

    @property
    def nlevels(self) -> int:
        return len(self.levels)

    def describe(self) -> str:
        sizes = [lv.A.shape[0] for lv in self.levels]
        sgs = "nodal-block Gauss-Seidel, " if self._sgs is not None else ""
        kind = sgs if self.symmetric else (
            "non-symmetric, Gauss-Seidel, " if self._gs is not None else
            "non-symmetric, Jacobi, ")
        return (f"smoothed aggregation, {kind}{self.nlevels} levels: "
                + " > ".join(map(str, sizes))
                + f", operator complexity {self.operator_complexity:.2f}"
                + (", rows scaled by the diagonal" if self.row_scale is not None else "")
                + (", symmetric strength for the coefficient's contrast" if self.contrast
                   else "")
                + (", aggregates reused" if self.reused else "")
                + (f", unsmoothed P on level(s) {self.unsmoothed} (fill-in)"
                   if self.unsmoothed else ""))

    def _smooth(self, A, dinv, lmax, x, b, degree, zero=False):
        """Chebyshev smoothing of D^-1 A on [lmax/10, lmax] (symmetric; [0.3 lmax, lmax]
        before took 10-15 % more CG iterations: P2 Poisson 32 513 unknowns 36 -> 30, pyamg
        31); for a non-symmetric matrix ``degree`` Gauss-Seidel sweeps (forward, backward,
        ...: a symmetric sweep at degree 2), or ``degree`` damped-Jacobi steps with
        ``w = 4/3 / ||D^-1 A||_inf`` (``lmax`` is that norm). ``zero``: x is 0 on entry, so
        the first residual is b (one product with A saved: a fifth of a level's products)."""
        if not self.symmetric:
            if self._gs is _gauss_seidel_sp:   # built while numba loaded: the jit once there
                self._gs = _gauss_seidel()
            if self._gs is not None:
                diag = 1.0 / dinv
                for k in range(degree):
                    self._gs(A.indptr, A.indices, A.data, diag, x, b, k % 2 == 0)
                return x
            w = 4.0 / 3.0 / lmax
            for k in range(degree):
                x += w * (dinv * (b if zero and k == 0 else b - A @ x))
            return x
        hi = lmax
        lo = self.cheb_lower * hi
        theta, delta = (hi + lo) / 2, (hi - lo) / 2
        sigma = theta / delta
        rho = 1.0 / sigma
        r = dinv * (b if zero else b - A @ x)
        d = r / theta
        for k in range(degree):
            x += d
            if k == degree - 1:
                break
            r -= dinv * (A @ d)
            rho_new = 1.0 / (2 * sigma - rho)
            d = rho_new * rho * d + (2 * rho_new / delta) * r
            rho = rho_new
        return x

    def vcycle(self, level, x, b, zero=False):
        """One V-cycle on ``level`` from ``x`` (``zero=True``: x is 0, which saves a product
        with A in the pre-smoothing; every cycle of a preconditioner starts so)."""
        if level == len(self._dev):
            if self.coarse_inv is not None:
                return self.coarse_inv @ b
            if self.xp is np:
                return self.coarse_lu.solve(b)
            from skiff.kernels.backend import to_numpy

            return self.xp.asarray(self.coarse_lu.solve(np.asarray(to_numpy(b))))
        A, dinv, lmax, P, R = self._dev[level]
        sgs = self._sgs[level] if self._sgs is not None else None
        if sgs is not None:
            x, r = sgs.pre(x, b, zero)
            rc = R @ r
        else:
            x = self._smooth(A, dinv, lmax, x, b, self.degree, zero)
            rc = R @ (b - A @ x)
        xc = self.vcycle(level + 1, self.xp.zeros(rc.shape[0], dtype=rc.dtype), rc, True)
        x += P @ xc
        if sgs is not None:
            return sgs.post(x, b)
        return self._smooth(A, dinv, lmax, x, b, self.degree)

    def __repr__(self) -> str:   # pyamg's print(ml): its table of levels
        return level_table(self)

    def _host_v_cycles(self, cycle, what: str, instead: str) -> None:
        """pyamg's entry points (``aspreconditioner``, ``solve``) run V-cycles on host
        vectors: another cycle, or a GPU hierarchy, is said in one line."""
        if str(cycle).upper() != "V":
            raise ValueError(f"cycle={cycle!r}: this hierarchy runs V-cycles only; W and F "
                             f"cycles are the geometric multigrid's (Solver(problem, "
                             f"cycle='W') on a grid)")
        if self.xp is not np:
            raise ValueError(f"{what}: this hierarchy runs on the GPU; build it with "
                             f"xp=numpy, {instead}")

    def cycle_complexity(self, cycle="V") -> float:
        """pyamg's ``ml.cycle_complexity(cycle='V')``: the nonzeros one (1,1) cycle reads on
        all levels over the finest level's (:func:`cycle_complexity`)."""
        return cycle_complexity(self, cycle)

    def coarse_solver(self, A, b):
        """pyamg's ``ml.coarse_solver(A, b)``: the coarsest level's solve (``A`` its
        ``ml.levels[-1].A``), for a cycle a user writes with ``presmoother`` / ``R`` /
        ``P``. Host vectors."""
        last = self.levels[-1].A
        if getattr(A, "shape", None) != last.shape:
            raise ValueError(f"coarse_solver(A, b): A is {getattr(A, 'shape', None)}, the "
                             f"coarsest level's matrix is {last.shape}: give ml.levels[-1].A")
        b = np.asarray(b).reshape(-1)
        if self.coarse_inv is not None:
            return np.asarray(self.coarse_inv @ b)
        return self.coarse_lu.solve(b)

    def aspreconditioner(self, cycle="V"):
        """One V-cycle from zero as a scipy ``LinearOperator`` (pyamg's name): a block of a
        preconditioner you write yourself (Stokes: the velocity block), or SciPy's ``M=``.
        Symmetric positive definite for an SPD matrix (Chebyshev smoothing, R = P^T), so CG
        and MINRES take it. Host (numpy) vectors only. ``cycle='V'`` as pyamg's
        ``ml.aspreconditioner(cycle='V')`` (round 39: a TypeError); W and F are refused."""
        from scipy.sparse.linalg import LinearOperator

        self._host_v_cycles(cycle, "aspreconditioner", "for a scipy LinearOperator")
        n = self.levels[0].A.shape[0]

        def apply(r):
            r = np.asarray(r).reshape(-1)
            if r.dtype.kind == "c" and not self.complex:   # a real hierarchy: by parts
                return apply(r.real) + 1j * apply(r.imag)
            r = r.astype(self.dtype)
            if self.row_scale is not None:
                r = self.row_scale * r
            return self.vcycle(0, np.zeros(n, dtype=self.dtype), r, True)

        return LinearOperator((n, n), matvec=apply, dtype=self.dtype)

    def solve(self, b, x0=None, tol=1e-5, maxiter=100, cycle="V", accel=None, callback=None,
              residuals=None, return_info=False):
        """pyamg's ``ml.solve``: V-cycles on ``A x = b`` until ``|b - A x| < tol |b|`` (an
        absolute ``tol`` where ``b`` is 0) or ``maxiter`` cycles; ``accel`` ('cg',
        'gmres', 'bicgstab', 'minres', pyamg's 'fgmres' as 'gmres', or a SciPy-style
        function ``f(A, b, x0=, rtol=, atol=, maxiter=, M=, callback=)``): that Krylov
        method of SciPy with one V-cycle as ``M`` (:meth:`aspreconditioner`), stopping on
        SciPy's ``rtol=tol``, as pyamg does with a SciPy method. ``residuals`` (a list) gets
        ``|b - A x|`` of the start and after each cycle (each Krylov iteration; each restart
        cycle for GMRES); ``callback(x)`` after each. Returns ``x``, or ``(x, info)`` with
        ``return_info`` (0 converged, else the cycles done / SciPy's ``info``). Round 39: a
        pyamg user's ``RugeStuben(A).solve(b, tol=1e-10, accel='cg')`` was an
        AttributeError. For skiff's own Krylov loop (its stopping test, status and
        history) use ``Solver(A, method='cg', precond='amg')``. Host (numpy) vectors only."""
        import scipy.sparse.linalg as sla

        self._host_v_cycles(cycle, "solve",
                            "or use Solver(A, precond='amg', device='cuda')")
        if isinstance(maxiter, bool) or not isinstance(maxiter, (int, np.integer)) \
                or maxiter < 1:
            raise ValueError(f"solve: maxiter must be a positive integer, got {maxiter!r}")
        if not np.isfinite(tol) or tol < 0:
            raise ValueError(f"solve: tol must be a finite number >= 0, got {tol!r}")
        A = self._finest
        n = A.shape[0]
        b = np.asarray(b)
        if b.size != n:
            raise ValueError(f"solve: b has {b.size} values and A is {n} x {n}")
        shape = b.shape
        b = b.reshape(-1)
        dtype = np.result_type(b.dtype, A.dtype, np.float64 if x0 is None else
                               np.asarray(x0).dtype)
        x = np.zeros(n, dtype) if x0 is None else np.array(x0, dtype=dtype).reshape(-1)
        if x.size != n:
            raise ValueError(f"solve: x0 has {x.size} values and A is {n} x {n}")
        b = b.astype(dtype)
        if residuals is not None:
            residuals[:] = [float(np.linalg.norm(b - A @ x))]
        if accel is not None:
            if isinstance(accel, str):
                name = {"fgmres": "gmres"}.get(accel.lower(), accel.lower())
                if name not in ("cg", "gmres", "bicgstab", "minres"):
                    raise ValueError(f"accel={accel!r}: 'cg', 'gmres' (or 'fgmres'), "
                                     f"'bicgstab' or 'minres' (SciPy's, with one V-cycle as "
                                     f"M), or a function with SciPy's interface")
                method = getattr(sla, name)
            else:
                method, name = accel, getattr(accel, "__name__", "")
            if name == "cg" and not self.symmetric:
                raise ValueError("accel='cg' needs a symmetric A and cycle: this hierarchy "
                                 "was set up non-symmetric (Gauss-Seidel, R from A^T); use "
                                 "accel='gmres' or 'bicgstab'")

            def step(xk):
                if residuals is not None:
                    residuals.append(float(np.linalg.norm(b - A @ xk)))
                if callback is not None:
                    callback(xk)

            extra = {"callback_type": "x"} if name == "gmres" else {}
            if name == "minres":   # SciPy's minres: rtol, no atol
                x, info = method(A, b, x0=x, rtol=tol, maxiter=maxiter,
                                 M=self.aspreconditioner(), callback=step)
            else:
                x, info = method(A, b, x0=x, rtol=tol, atol=0.0, maxiter=maxiter,
                                 M=self.aspreconditioner(), callback=step, **extra)
            x = np.asarray(x).reshape(shape)
            return (x, int(info)) if return_info else x
        normb = float(np.linalg.norm(b)) or 1.0   # b = 0: tol is absolute (pyamg's)
        scale = self.row_scale
        bs = b if scale is None else scale * b
        if dtype.kind == "c" and not self.complex:   # a real hierarchy, complex b: by parts
            def cycle_once(x, r):
                return x + self.vcycle(0, np.zeros(n), r.real, True) + \
                    1j * self.vcycle(0, np.zeros(n), r.imag, True)
        else:
            def cycle_once(x, r):
                return self.vcycle(0, x, bs)
        info = maxiter
        for _ in range(maxiter):
            if dtype.kind == "c" and not self.complex:
                r = b - A @ x
                x = cycle_once(x, r if scale is None else scale * r)
            else:
                x = cycle_once(x, None)
            normr = float(np.linalg.norm(b - A @ x))
            if residuals is not None:
                residuals.append(normr)
            if callback is not None:
                callback(x)
            if normr < tol * normb:
                info = 0
                break
            if not np.isfinite(normr):
                break
        x = x.reshape(shape)
        return (x, info) if return_info else x

    def precondition(self, r, out):
        """out = one V-cycle applied to ``r`` from zero (any shape; flattened inside)."""
        flat = r.reshape(-1)
        if self.complex and flat.dtype.kind != "c":
            flat = flat.astype(self.dtype)
        if self._scale is not None:
            flat = self._scale * flat
        z = self.vcycle(0, self.xp.zeros(flat.shape[0], dtype=flat.dtype), flat, True)
        out[...] = z.reshape(out.shape)
        return out
