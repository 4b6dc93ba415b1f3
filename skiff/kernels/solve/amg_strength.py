"""Evolution strength of connection for smoothed aggregation (Olson, Schroder, Tuminaro 2010).

The classical measure ``|a_ij| >= theta sqrt(a_ii a_jj)`` sees only the size of an entry. On
rotated anisotropic diffusion discretised with P1 elements a third of the off-diagonal entries
are positive and the strong direction does not follow the mesh, so it either keeps every
connection (theta 0: round aggregates across the weak direction, CG+AMG 212 iterations at
261 121 unknowns) or breaks the coarsening into lines that help little (theta 0.25: 184).

The evolution measure asks instead how a point source relaxes: ``z = (I - D^-1 A / rho)^k
e_i``, ``k`` Jacobi steps on a delta at node ``i``. Where ``j`` is strongly connected to ``i``
the evolved delta is close to the near-null-space candidate ``B`` scaled to agree at ``i``,
i.e. ``z_j / z_i ~ B_j / B_i``. The error ``|1 - (z_j B_i) / (z_i B_j)|`` is small for a
strong connection; on every row the connections whose error is within ``epsilon`` times the
smallest (off-diagonal) one of the row are strong. Only the pattern of ``A`` is looked at, so
the strength graph is a subgraph of ``A``'s, as for the classical measure.

Several candidates (elasticity's rigid-body modes, round 27): on row ``i`` the evolved delta
``z`` (on A's pattern of the row) is fitted by ``B c`` in least squares under the constraint
that the fit is exact at ``i`` (``B_i c = z_i``: a small (k+1) x (k+1) KKT system per row);
the ratio ``(B c)_j / z_j`` then plays the part of ``z_i B_j / (z_j B_i)`` above, to which it
reduces for one candidate (Olson, Schroder and Tuminaro's constrained fit, pyamg's
``evolution_strength_of_connection`` with a multi-column B and its default l2 projection).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["evolution_strength"]


def rho_dinv_a(A: sp.csr_matrix, dinv: np.ndarray, iters: int = 15, seed: int = 2) -> float:
    """The spectral radius of D^-1 A by ``iters`` power steps from a seeded random vector
    (for a symmetric A; used by the smoother's bound and by evolution strength's step)."""
    v = np.random.default_rng(seed).standard_normal(A.shape[0])
    lam = 1.0
    for _ in range(iters):
        v /= np.linalg.norm(v)
        w = dinv * (A @ v)
        lam = float(np.vdot(v, w).real)   # v real at first; complex for a Hermitian A
        v = w
    return max(lam, 1e-12)


def evolution_strength(A: sp.csr_matrix, B: np.ndarray | None = None, *, k: int = 2,
                       epsilon: float = 4.0, rho: float | None = None,
                       symmetric: bool = False, local: np.ndarray | None = None
                       ) -> sp.csr_matrix:
    """Strong connections of ``A`` (a symmetrised 0/1 pattern, no diagonal) by the evolution
    measure: ``k`` Jacobi steps with ``w = 1/rho(D^-1 A)`` on each delta, compared with the
    candidate ``B`` (one column, default the constant); ``epsilon`` is the drop tolerance
    relative to the row's best connection (pyamg's defaults: k=2, epsilon=4). ``rho``: the
    spectral radius of ``D^-1 A`` when known; ``symmetric``: ``A`` is (no transposes);
    ``local``: each unknown's index within its node (a coarse level of a system: the
    candidate it stands for); only connections between equal indices are measured, as
    pyamg's mask to the same PDE."""
    A = sp.csr_matrix(A, dtype=np.float64)
    n = A.shape[0]
    cand = None if B is None else np.asarray(B, dtype=np.float64).reshape(n, -1)
    several = cand is not None and cand.shape[1] > 1
    b = np.ones(n) if cand is None else cand[:, 0]
    b = np.where(b == 0, 1.0, b)
    if k < 1 or epsilon < 1:
        raise ValueError(f"evolution strength: k={k}, epsilon={epsilon}; need k >= 1 and "
                         f"epsilon >= 1 (pyamg's defaults are k=2, epsilon=4)")
    if several and k != 2:
        raise ValueError(f"evolution strength with {cand.shape[1]} candidates takes k=2 "
                         f"(pyamg's default), got k={k}")
    d = A.diagonal()
    dinv = np.divide(1.0, d, out=np.zeros(n), where=d != 0)
    w = 1.0 / (rho_dinv_a(A, dinv) if rho is None else rho)
    if (symmetric and k == 2 and not several and local is None and A.has_canonical_format
            and d.all()):
        S = _evolution_symmetric(A, dinv, w, b, float(epsilon))
        if S is not None:
            return S
    # Mt = (I - w D^-1 A)^T = I - w A^T D^-1; its k-th power's row i is the evolved delta at i
    At = A if symmetric else A.T.tocsr()
    At.sort_indices()
    Z = At.copy()                                    # column scaling by w D^-1, no product
    Z.data = -w * Z.data * dinv[Z.indices]
    Z = (Z + sp.identity(n, format="csr")).tocsr()
    pattern = A.copy()
    pattern.eliminate_zeros()
    if local is not None:   # the same component only (and the diagonal)
        rows = np.repeat(np.arange(n), np.diff(pattern.indptr))
        pattern.data[local[rows] != local[pattern.indices]] = 0.0
        pattern.eliminate_zeros()
    pattern.sort_indices()
    if k == 2:   # one pass, products only on A's pattern (the full Z^2 took 3x longer)
        Zt = pattern.copy()                          # row scaling: I - w D^-1 A
        Zt.data = -w * Zt.data * np.repeat(dinv, np.diff(Zt.indptr))
        Zt = (Zt + sp.identity(n, format="csr")).tocsr()
        if several:
            keep = _evolution_k2(multi=True)(Z.indptr, Z.indices, Z.data, Zt.indptr,
                                             Zt.indices, Zt.data, pattern.indptr,
                                             pattern.indices, np.ascontiguousarray(cand),
                                             float(epsilon))
        else:
            keep = _evolution_k2()(Z.indptr, Z.indices, Z.data, Zt.indptr, Zt.indices,
                                   Zt.data, pattern.indptr, pattern.indices, b,
                                   float(epsilon))
    else:
        keep = _evolution_any(Z, k, pattern, b, epsilon)
    S = sp.csr_matrix((keep.astype(np.float64), pattern.indices, pattern.indptr), shape=(n, n))
    S.eliminate_zeros()
    S = ((S + S.T) > 0).astype(np.float64).tocsr()
    S.sort_indices()
    return S


def _evolution_any(Z, k, pattern, b, epsilon):
    """The measure for any ``k``: ``Z^k`` in full (scipy), then the entries on the pattern."""
    n = Z.shape[0]
    Mt = Z
    for _ in range(k - 1):
        Mt = (Mt @ Z).tocsr()
    r = np.repeat(np.arange(n), np.diff(pattern.indptr))
    c = pattern.indices
    zij = np.asarray(Mt[r, c]).ravel() if r.size else np.zeros(0)
    zii = Mt.diagonal()[r]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (zii * b[c]) / (zij * b[r])   # the candidate's value over the evolved one
    # weak: the evolved delta has the other sign there, or is 1e4 times what B predicts
    ok = np.isfinite(ratio) & (ratio >= 1e-4) & (r != c)
    ee = np.full(r.size, np.inf)
    ee[ok] = np.abs(1.0 - ratio[ok])
    ee[ok & (ee < np.sqrt(np.finfo(float).eps))] = 1e-4   # an exact match: a finite error
    best = np.full(n, np.inf)                              # per row: within epsilon of the best
    np.minimum.at(best, r, ee)
    return ok & (ee <= epsilon * best[r])


def _evolution_k2_py(zp, zi, zd, tp, ti, td, ap, ai, b, epsilon):
    """``keep[p]`` for every entry ``p`` of A's pattern (rows ``ap``, columns ``ai``) under
    the evolution measure with k=2: ``M = Z Z`` only where needed, ``M_ij`` = row i of ``Z``
    (``zp, zi, zd``) dotted with row j of ``Z^T`` (``tp, ti, td``)."""
    n = zp.shape[0] - 1
    work = np.zeros(n)
    keep = np.zeros(ai.shape[0], dtype=np.bool_)
    err = np.empty(ai.shape[0])
    tiny = np.sqrt(np.finfo(np.float64).eps)
    for i in range(n):
        for p in range(zp[i], zp[i + 1]):
            work[zi[p]] = zd[p]
        mii = 0.0
        for q in range(tp[i], tp[i + 1]):
            mii += work[ti[q]] * td[q]
        best = np.inf
        for p in range(ap[i], ap[i + 1]):
            j = ai[p]
            e = np.inf
            if j != i:
                mij = 0.0
                for q in range(tp[j], tp[j + 1]):
                    mij += work[ti[q]] * td[q]
                if mij != 0.0:
                    ratio = (mii * b[j]) / (mij * b[i])
                    if ratio >= 1e-4 and ratio < np.inf:
                        e = abs(1.0 - ratio)
                        if e < tiny:
                            e = 1e-4
            err[p] = e
            if e < best:
                best = e
        for p in range(ap[i], ap[i + 1]):
            keep[p] = err[p] < np.inf and err[p] <= epsilon * best
        for p in range(zp[i], zp[i + 1]):
            work[zi[p]] = 0.0
    return keep


def _evolution_sym_py(ap, ai, ad, dinv, w, b, epsilon):
    """The symmetric S of :func:`evolution_strength` (k = 2, one candidate, a symmetric
    canonical A: ``ap, ai, ad``, every diagonal entry nonzero) in one pass, ``M = Z^2`` (``Z
    = I - w A D^-1``) never formed: ``M_ij d_j = d_j delta_ij - 2 w A_ij + w^2 G_ij`` with
    ``G = A D^-1 A`` symmetric, each ``G_ij`` one dot of row i of ``A D^-1`` with row j of
    A, formed once for the pair (round 39; round 37 formed all of row i of Z^2 against Z^T:
    the same S on the test's matrices, the kernel 0.036 -> 0.026 s CPU on Q1 hexahedra
    31^3); an entry of A that is 0 is no connection; ``S + S^T`` from each entry's mirror
    (the next entry of its column's row: rows are visited in order). Returns ``(indptr,
    indices)`` of S, or a 1-entry indptr where A's pattern (its nonzero entries) is not
    symmetric: the caller then takes the general path. (Forming Z + I, Z^T + I, S + S^T and
    their copies cost a quarter of SA's setup on a 27-point 3-D Laplacian, round 37.)"""
    n = ap.shape[0] - 1
    nnz = ap[n]
    indptr = np.zeros(n + 1, dtype=np.int64)
    indices = np.empty(nnz, dtype=np.int32)
    # each nonzero entry's mirror (the next entry of its column's row: rows come in order)
    mirror = np.full(nnz, -1, dtype=np.int64)
    cursor = ap[:n].copy()
    for i in range(n):
        for p in range(ap[i], ap[i + 1]):
            j = ai[p]
            if ad[p] == 0.0:
                continue
            q = cursor[j]
            while q < ap[j + 1] and ad[q] == 0.0:
                q += 1
            if q == ap[j + 1] or ai[q] != i:   # (j, i) is not where (i, j)'s mirror is
                return np.zeros(1, dtype=np.int64), indices[:0]
            cursor[j] = q + 1
            mirror[p] = q
    # M = Z^2, Z = I - w A D^-1: M_ij d_j = d_j delta_ij - 2 w A_ij + w^2 G_ij with
    # G = A D^-1 A symmetric, so each G_ij (a row's dot with another's: the pass's work)
    # is formed once for the pair, for j > i, and read back at its mirror for j < i
    work = np.zeros(n)
    g = np.zeros(nnz)
    err = np.empty(nnz)
    keep = np.zeros(nnz, dtype=np.bool_)
    tiny = np.sqrt(np.finfo(np.float64).eps)
    w2 = w * w
    for i in range(n):
        for p in range(ap[i], ap[i + 1]):   # row i of A D^-1
            c = ai[p]
            work[c] += ad[p] * dinv[c]
        gii = 0.0
        for q in range(ap[i], ap[i + 1]):
            gii += work[ai[q]] * ad[q]
        for p in range(ap[i], ap[i + 1]):
            j = ai[p]
            if j > i and ad[p] != 0.0:
                gij = 0.0
                for q in range(ap[j], ap[j + 1]):
                    gij += work[ai[q]] * ad[q]
                g[p] = gij
                g[mirror[p]] = gij
        mii = 1.0 - 2.0 * w + w2 * gii * dinv[i]
        best = np.inf
        for p in range(ap[i], ap[i + 1]):
            j = ai[p]
            e = np.inf
            if j != i and ad[p] != 0.0:
                mij = (w2 * g[p] - 2.0 * w * ad[p]) * dinv[j]
                if mij != 0.0:
                    ratio = (mii * b[j]) / (mij * b[i])
                    if ratio >= 1e-4 and ratio < np.inf:
                        e = abs(1.0 - ratio)
                        if e < tiny:
                            e = 1e-4
            err[p] = e
            if e < best:
                best = e
        for p in range(ap[i], ap[i + 1]):
            keep[p] = err[p] < np.inf and err[p] <= epsilon * best
        for p in range(ap[i], ap[i + 1]):
            work[ai[p]] = 0.0
    m = 0
    for i in range(n):
        for p in range(ap[i], ap[i + 1]):
            q = mirror[p]
            if q < 0:
                continue
            if ai[p] != i and (keep[p] or keep[q]):
                indices[m] = ai[p]
                m += 1
        indptr[i + 1] = m
    return indptr, indices[:m]


def _evolution_symmetric(A, dinv, w, b, epsilon):
    """S by :func:`_evolution_sym_py` (numba where it runs), None where A's pattern is not
    symmetric."""
    from skiff.kernels.backend import numba_available

    from .fused import deferring

    kernel = _evolution_sym_py
    if not deferring() and numba_available():
        if "sym" not in _K2_JIT:
            from numba import njit

            _K2_JIT["sym"] = njit(cache=True)(_evolution_sym_py)
        kernel = _K2_JIT["sym"]
    n = A.shape[0]
    indptr, indices = kernel(A.indptr, A.indices, A.data, dinv, float(w),
                             np.ascontiguousarray(b, dtype=np.float64), epsilon)
    if indptr.shape[0] != n + 1:
        return None
    return sp.csr_matrix((np.ones(indices.shape[0]), indices, indptr), shape=(n, n))


def _solve_small(kkt, rhs, nc):
    """The constrained fit's KKT system by Gaussian elimination with partial pivoting (in
    place); ``B^T B`` gets a relative shift of 1e-10 first, so a pattern on which the
    candidates are dependent (rotations about a line of nodes) gives the smallest fit
    rather than a singular system. (numba compiled ``np.linalg.lstsq`` in 20 s.)"""
    m = nc + 1
    trace = 0.0
    for a in range(nc):
        trace += kkt[a, a]
    for a in range(nc):
        kkt[a, a] += 1e-10 * trace + 1e-300
    for c in range(m):
        piv = c
        for r in range(c + 1, m):
            if abs(kkt[r, c]) > abs(kkt[piv, c]):
                piv = r
        if kkt[piv, c] == 0.0:
            continue
        if piv != c:
            for q in range(m):
                kkt[c, q], kkt[piv, q] = kkt[piv, q], kkt[c, q]
            rhs[c, 0], rhs[piv, 0] = rhs[piv, 0], rhs[c, 0]
        for r in range(c + 1, m):
            f = kkt[r, c] / kkt[c, c]
            if f != 0.0:
                for q in range(c, m):
                    kkt[r, q] -= f * kkt[c, q]
                rhs[r, 0] -= f * rhs[c, 0]
    for c in range(m - 1, -1, -1):
        acc = rhs[c, 0]
        for q in range(c + 1, m):
            acc -= kkt[c, q] * rhs[q, 0]
        rhs[c, 0] = acc / kkt[c, c] if kkt[c, c] != 0.0 else 0.0
    return rhs


def _evolution_k2_multi_py(zp, zi, zd, tp, ti, td, ap, ai, B, epsilon):
    """``keep`` as :func:`_evolution_k2_py` for several candidates (the columns of ``B``):
    per row the constrained least-squares fit of the evolved delta by ``B c``, exact at the
    row's own node, and the ratio of fit to evolved value at each neighbour."""
    n = zp.shape[0] - 1
    nc = B.shape[1]
    work = np.zeros(n)
    keep = np.zeros(ai.shape[0], dtype=np.bool_)
    err = np.empty(ai.shape[0])
    tiny = np.sqrt(np.finfo(np.float64).eps)
    kkt = np.zeros((nc + 1, nc + 1))
    rhs = np.zeros((nc + 1, 1))
    zrow = np.zeros(n)
    for i in range(n):
        for p in range(zp[i], zp[i + 1]):
            work[zi[p]] = zd[p]
        mii = 0.0
        for q in range(tp[i], tp[i + 1]):
            mii += work[ti[q]] * td[q]
        kkt[:, :] = 0.0
        rhs[:, 0] = 0.0
        for p in range(ap[i], ap[i + 1]):
            j = ai[p]
            mij = 0.0
            for q in range(tp[j], tp[j + 1]):
                mij += work[ti[q]] * td[q]
            zrow[p - ap[i]] = mij
            for a in range(nc):
                rhs[a, 0] += 2.0 * B[j, a] * mij
                for c in range(nc):
                    kkt[a, c] += 2.0 * B[j, a] * B[j, c]
        for a in range(nc):               # the constraint: the fit is exact at node i
            kkt[nc, a] = B[i, a]
            kkt[a, nc] = B[i, a]
        kkt[nc, nc] = 0.0
        rhs[nc, 0] = mii
        coef = _solve_small(kkt, rhs, nc)
        best = np.inf
        for p in range(ap[i], ap[i + 1]):
            j = ai[p]
            e = np.inf
            mij = zrow[p - ap[i]]
            if j != i and mij != 0.0:
                fit = 0.0
                for a in range(nc):
                    fit += B[j, a] * coef[a, 0]
                ratio = fit / mij
                if ratio >= 1e-4 and ratio < np.inf:
                    e = abs(1.0 - ratio)
                    if e < tiny:
                        e = 1e-4
            err[p] = e
            if e < best:
                best = e
        for p in range(ap[i], ap[i + 1]):
            keep[p] = err[p] < np.inf and err[p] <= epsilon * best
        for p in range(zp[i], zp[i + 1]):
            work[zi[p]] = 0.0
    return keep


_K2_JIT = {}
_SOLVE_JIT = []


def _evolution_k2(multi: bool = False):
    """The numba kernel of one or several candidates (the Python twin without numba)."""
    from skiff.kernels.backend import numba_available

    from .fused import deferring

    py = _evolution_k2_multi_py if multi else _evolution_k2_py
    if deferring() or not numba_available():   # a small first solve: not numba's load
        return py
    if multi not in _K2_JIT:
        from numba import njit

        if multi and not _SOLVE_JIT:   # the kernel calls _solve_small: its numba twin
            _SOLVE_JIT.append(njit(cache=True)(_solve_small))
            globals()["_solve_small"] = _SOLVE_JIT[0]
        _K2_JIT[multi] = njit(cache=True)(py)
    return _K2_JIT[multi]
