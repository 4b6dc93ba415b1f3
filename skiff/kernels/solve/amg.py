"""Smoothed-aggregation algebraic multigrid: setup on the CPU (numpy, scipy.sparse, one numba
loop for the aggregation), cycles on the device (``A @ x`` of scipy or cupyx sparse matrices).

Setup per level: strength of connection ``|a_ij| >= theta sqrt(|a_ii a_jj|)``, greedy
aggregation (seed aggregates of untouched neighbourhoods, attach the rest to a neighbouring
aggregate, group what is left), a tentative prolongator of normalised indicator columns (the
constant near-null space), one damped-Jacobi smoothing step ``P = (I - w D^-1 A) T`` with
``w = 4/3 / rho(D^-1 A)``, and the Galerkin product ``A_c = P^T A P``. The cycle smooths with a
Chebyshev polynomial in ``D^-1 A`` (symmetric, so the V-cycle is a valid CG preconditioner).

>>> import scipy.sparse as sp
>>> A = sp.diags([-1, 2, -1], [-1, 0, 1], shape=(2000, 2000)).tocsr()
>>> amg = SmoothedAggregation(A)
>>> amg.nlevels >= 2
True
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["SmoothedAggregation", "aggregate", "strength"]


def strength(A: sp.csr_matrix, theta: float = 0.0) -> sp.csr_matrix:
    """Strong connections (off-diagonal, ``|a_ij| >= theta sqrt(|a_ii a_jj|)``) as a pattern."""
    A = A.tocoo()
    d = np.abs(A.diagonal())
    off = A.row != A.col
    r, c, v = A.row[off], A.col[off], np.abs(A.data[off])
    keep = (v >= theta * np.sqrt(d[r] * d[c])) & (v > 0)
    n = A.shape[0]
    S = sp.csr_matrix((np.ones(keep.sum()), (r[keep], c[keep])), shape=(n, n))
    S = ((S + S.T) > 0).astype(np.float64).tocsr()   # symmetrise the pattern
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
        if agg[i] >= 0:
            continue
        agg[i] = count
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if agg[j] < 0:
                agg[j] = count
        count += 1
    return agg, count


_AGG_JIT = None


def aggregate(S: sp.csr_matrix) -> tuple[np.ndarray, int]:
    """Aggregate index of every node and the number of aggregates (numba when available)."""
    global _AGG_JIT
    fn = _aggregate_py
    from skiff.kernels.backend import numba_available

    if numba_available():
        if _AGG_JIT is None:
            from numba import njit

            _AGG_JIT = njit(cache=True)(_aggregate_py)
        fn = _AGG_JIT
    agg, count = fn(S.indptr.astype(np.int64), S.indices.astype(np.int64), S.shape[0])
    return agg, int(count)


def _rho_dinv_a(A: sp.csr_matrix, dinv: np.ndarray, iters: int = 15) -> float:
    v = np.random.default_rng(1).standard_normal(A.shape[0])
    lam = 1.0
    for _ in range(iters):
        v /= np.linalg.norm(v)
        w = dinv * (A @ v)
        lam = float(w @ v)
        v = w
    return max(lam, 1e-12) * 1.1


def _fit_candidates(agg, count, B):
    """Tentative prolongator whose columns on each aggregate are an orthonormal basis of the
    rows of ``B`` there (QR), and the coarse candidates (the R factors, stacked)."""
    order = np.argsort(agg, kind="stable")
    bounds = np.searchsorted(agg[order], np.arange(count + 1))
    rows, cols, vals, coarse = [], [], [], []
    col = 0
    for a in range(count):
        idx = order[bounds[a]:bounds[a + 1]]
        q, r = np.linalg.qr(B[idx])
        keep = np.abs(np.diag(r)) > 1e-10 * max(np.abs(r).max(), 1e-300)
        q, r = q[:, keep], r[keep]
        m = q.shape[1]
        rows.append(np.repeat(idx, m))
        cols.append(np.tile(np.arange(col, col + m), len(idx)))
        vals.append(q.ravel())
        coarse.append(r)
        col += m
    T = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(B.shape[0], col))
    return T, np.vstack(coarse)



def coarse_inverse(dense: np.ndarray) -> np.ndarray:
    """The coarsest level's inverse, or its pseudo-inverse when it is singular to working
    precision: a singular operator (pure Neumann, a graph Laplacian) keeps its null space on
    every level, and ``inv`` of it returns round-off magnified a trillion times, which
    breaks CG at once. Symmetric: eigenvalues under 1e-10 of the largest count as zero."""
    scale = float(np.abs(dense).max()) if dense.size else 0.0
    if scale and np.abs(dense - dense.T).max() <= 1e-12 * scale:
        try:  # positive definite and well away from singular: Cholesky, 4x cheaper than eigh
            low = np.linalg.cholesky(dense)
            pivots = np.diag(low) ** 2
            if pivots.min() > 1e-10 * pivots.max():
                inv_low = np.linalg.inv(low)
                return inv_low.T @ inv_low
        except np.linalg.LinAlgError:
            pass
        w, V = np.linalg.eigh(dense)
        keep = np.abs(w) > 1e-10 * np.abs(w).max()
        return (V[:, keep] / w[keep]) @ V[:, keep].T
    try:
        inv = np.linalg.inv(dense)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(dense, rcond=1e-10)
    return inv if np.isfinite(inv).all() else np.linalg.pinv(dense, rcond=1e-10)

class SmoothedAggregation:
    """A smoothed-aggregation hierarchy for a sparse matrix ``A``, with V-cycles on ``xp``.

    Parameters
    ----------
    A : scipy.sparse matrix, square
    theta : float
        Strength threshold (0 keeps every connection).
    max_coarse : int
        Coarsen until at most this many unknowns remain (solved by a dense inverse).
    degree : int
        Chebyshev smoothing degree (pre and post).
    B : array (n, k), optional
        Near-null-space vectors the coarse spaces must represent (default: the constant). For
        elasticity, the rigid-body modes (pyamg.gallery.linear_elasticity returns them): each
        aggregate then gets ``k`` tentative basis functions, the QR factors of ``B`` on it.
    xp : array module of the cycles (numpy or cupy)
    """

    def __init__(self, A, *, theta=0.0, max_coarse=400, max_levels=12, degree=2, B=None,
                 xp=np):
        A = sp.csr_matrix(A, dtype=np.float64)
        if B is not None:
            B = np.asarray(B, dtype=np.float64).reshape(A.shape[0], -1)
        self.xp = xp
        self.degree = int(degree)
        self.levels = []                 # (A, dinv, lmax, P) per level, host copies
        while A.shape[0] > max_coarse and len(self.levels) < max_levels - 1:
            d = A.diagonal()
            if np.any(d == 0):
                raise ValueError("amg: the matrix has zeros on its diagonal")
            dinv = 1.0 / d
            lmax = _rho_dinv_a(A, dinv)
            agg, count = aggregate(strength(A, theta))
            if count >= A.shape[0] or count == 0:
                break
            n = A.shape[0]
            if B is None:
                T = sp.csr_matrix((np.ones(n), (np.arange(n), agg)), shape=(n, count))
                T = T @ sp.diags(1.0 / np.sqrt(np.asarray(T.sum(axis=0)).ravel()))
            else:
                T, B = _fit_candidates(agg, count, B)
            P = (T - (4.0 / 3.0 / lmax) * sp.diags(dinv) @ (A @ T)).tocsr()
            self.levels.append((A, dinv, lmax, P))
            A = (P.T @ A @ P).tocsr()
            A.eliminate_zeros()
        inv = coarse_inverse(A.toarray())
        self.coarse_n = A.shape[0]
        self._dev = [self._to_device(Al, dinv, lmax, P) for Al, dinv, lmax, P in self.levels]
        self.coarse_inv = xp.asarray(inv)
        self.operator_complexity = (sum(lv[0].nnz for lv in self.levels) + A.nnz) / max(
            self.levels[0][0].nnz if self.levels else A.nnz, 1)

    def _to_device(self, A, dinv, lmax, P):
        xp = self.xp
        if xp is np:
            return A, dinv, lmax, P, P.T.tocsr()
        import cupyx.scipy.sparse as csp  # only on a GPU device; cupy is present then

        from .cuda import device_csr

        return (device_csr(csp.csr_matrix(A)), xp.asarray(dinv), lmax,
                device_csr(csp.csr_matrix(P)), device_csr(csp.csr_matrix(P.T.tocsr())))

    @property
    def nlevels(self) -> int:
        return len(self.levels) + 1

    def describe(self) -> str:
        sizes = [lv[0].shape[0] for lv in self.levels] + [self.coarse_n]
        return (f"smoothed aggregation, {self.nlevels} levels: "
                + " > ".join(map(str, sizes))
                + f", operator complexity {self.operator_complexity:.2f}")

    def _smooth(self, A, dinv, lmax, x, b, degree):
        """Chebyshev smoothing of D^-1 A on [0.3 lmax, lmax]."""
        hi = lmax
        lo = 0.3 * hi
        theta, delta = (hi + lo) / 2, (hi - lo) / 2
        sigma = theta / delta
        rho = 1.0 / sigma
        r = dinv * (b - A @ x)
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

    def vcycle(self, level, x, b):
        if level == len(self._dev):
            return self.coarse_inv @ b
        A, dinv, lmax, P, R = self._dev[level]
        x = self._smooth(A, dinv, lmax, x, b, self.degree)
        rc = R @ (b - A @ x)
        xc = self.vcycle(level + 1, self.xp.zeros(rc.shape[0]), rc)
        x += P @ xc
        return self._smooth(A, dinv, lmax, x, b, self.degree)

    def precondition(self, r, out):
        """out = one V-cycle applied to ``r`` from zero (any shape; flattened inside)."""
        flat = r.reshape(-1)
        z = self.vcycle(0, self.xp.zeros(flat.shape[0]), flat)
        out[...] = z.reshape(out.shape)
        return out
