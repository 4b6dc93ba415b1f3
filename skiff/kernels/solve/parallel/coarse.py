"""A coarse level across the ranks of a row split (round 41 h7): block Jacobi / additive
Schwarz loses iterations as ranks are added (each rank's block solve sees nothing of the
others: the smooth error spanning the ranks is left), so a two-level method adds a small
problem shared by every rank, as PETSc's GAMG / PCMG users expect of a preconditioner over
ranks.

The coarse space ``P`` is block diagonal over the ranks: each rank's columns are

* ``'aggregates'``: the basis of the coarsest grid of a smoothed-aggregation hierarchy set up
  on the rank's block (the composite prolongator ``P_0 P_1 ... P_L``, restricted to the
  rank's own rows: at most ``max_coarse`` = 400 columns a rank); the per-rank AMG's coarsest
  grids gathered. ``coarse='auto'`` with block AMG takes it where every rank's hierarchy
  has a coarse grid (blocks over 400 rows); on smaller blocks (each solved whole by its
  AMG) it adds nothing worth a setup;
* ``'ranks'``: one aggregate per rank (Nicolaides: the constant on the rank's rows);
* ``'amg'`` (round 42): the basis of the first coarse level of each rank's hierarchy (its
  ``P_0`` on the rank's own rows: about a ninth of the rows in 2-D), ``A_c = P^T A P``
  gathered sparse on every rank and solved by one V-cycle of a smoothed aggregation set up
  on it (the same on every rank): the intermediate level across the ranks that round 41's
  LU could not afford (6 700 coarse unknowns on a 200^2 Poisson: 4-20 s of SuperLU).

``A_c = P^T A P`` (``A P`` needs the ghosts' rows of ``P``: one all-to-all at setup) is
summed over the ranks (one Allreduce) and factored on each (dense LU up to 3000 unknowns,
else SuperLU); a coarse solve ``Q r = P A_c^-1 P^T r`` is one ``Allreduce`` of the coarse
residual.

The two-level preconditioner with the block solve ``B``:

* for CG with block Jacobi the symmetric V-cycle ``z = S r; z += Q (r - A z); z += S (r -
  A z)`` with ``S = p(B A) B`` a degree-2 Chebyshev polynomial in ``B A`` (round 45 h4;
  until then ``S = w B``, ``w`` damping ``B`` where the largest eigenvalue of ``B A`` nears
  2: past 8 ranks the jump and elasticity took about twice one rank's iterations; a plain
  Poisson-like matrix past 8 ranks keeps the damped B, :func:`smoothing_degree`, round 45
  h14); with additive
  Schwarz the same V-cycle (round 47 h13; before it the balancing form ``M = Q + (I - Q A)
  B (I - A Q)``, Mandel's BNN, as ``B A`` of an overlap passes 2, where the undamped V-cycle
  diverged: 587 iterations on an anisotropic Poisson; the Chebyshev interval comes from
  ``B A``'s own Lanczos estimate, so it takes the overlap's 2 in. Balancing took 12-14 CG
  iterations with an overlap where block Jacobi took 5-8; the V-cycle takes 4-8);
* for BiCGStab and GMRES the multiplicative ``z = B r; z += Q (r - A z)`` (one product, one
  coarse solve; Tang-Nabben-Vuik's A-DEF2).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["COARSE", "CoarseLevel", "coarse_basis", "two_level"]

COARSE = ("auto", "aggregates", "ranks", "amg", "none")
LANCZOS_STEPS = 8   # two_level's estimate of lambda_max(B A) for its smoothing
# round 45 (h4): CG's V-cycle smooths with a Chebyshev polynomial of this degree in B A over
# [CHEB_TOP lambda / CHEB_RATIO, CHEB_TOP lambda] (lambda from the Lanczos steps) in place
# of B damped by 1.8 / lambda. Measured (/work/round45/h4w/cheb.py, CG iterations, thread
# ranks, damped -> Chebyshev): the jump 160^2 over 8 / 16 / 32 ranks 11 / 11 / 11 -> 8 / 8 /
# 8 (one rank 5-6), 100^2 over 2 / 16 / 32 10 / 11 / 14 -> 7 / 7 / 8; elasticity 50^2 over
# 8 / 16 / 32 10 / 12 / 19 -> 8 / 8 / 17; Poisson 100^2 over 2 / 8 / 16 / 32 7 / 8 / 8 / 8 ->
# 6 / 6 / 7 / 7; anisotropic (1:100) 100^2 over 16 8 -> 6. Degree 3 or ratio 3-20: within
# one iteration; the solve's CPU about the same (twice the block solves an iteration, fewer
# iterations). Safer too: the V-cycle stays positive definite for lambda_max(B A) up to
# (1 + 1 / CHEB_RATIO) CHEB_TOP = 1.375 times the estimate, the damped B's to 1.8 / 1.8 = 1.11.
CHEB_DEGREE, CHEB_RATIO, CHEB_TOP = 2, 4.0, 1.1
# round 45 (h14): ... except for a plain Poisson-like matrix past PLAIN_RANKS ranks
# (:func:`smoothing_degree`): there the Chebyshev cut at most one CG iteration of 8-10 and
# doubled the block solves, so the solve cost up to 1.3x h23's damped B (Poisson 160^2 over
# 24 thread ranks, 8 -> 8 iterations, solve CPU 0.52 -> 0.67 s); such a matrix smooths with
# the damped B again (degree 1). PLAIN_SPREAD: the largest ratio of two off-diagonal
# magnitudes of A that still counts as one constant coefficient.
PLAIN_RANKS, PLAIN_SPREAD = 8, 10.0
_DENSE_MAX = 3000


def coarse_basis(block, kind, m, amg=None, cut=None, contrast=None) -> sp.csr_matrix:
    """This rank's coarse basis (``m`` own rows; ``block`` the matrix the rank's solve is set
    up on, its first ``m`` rows and columns the rank's own unknowns): ``kind`` 'aggregates'
    (the composite prolongator of ``amg``, or of a smoothed aggregation set up on ``block``)
    or 'ranks' (one column of ones). Columns with no entry on the own rows are dropped.
    ``kind`` 'amg' with ``cut`` =
    ``(local, d)`` (the plan's rows, own columns then ghosts, and ``|diag A|`` on those
    columns): the rows the block left out of every aggregate that are strongly connected
    across the rank boundary become aggregates of their own (:func:`_tentative`).
    ``contrast``: the whole matrix's high-contrast answer for an AMG set up here."""
    if kind == "ranks" or m == 0:
        return sp.csr_matrix(np.ones((m, 1 if m else 0)))
    if amg is None or len(amg.levels) < 2:   # no hierarchy (a block under max_coarse rows,
        # solved whole by its AMG): aggregates of about ten rows for the coarse basis
        from ..amg import SmoothedAggregation

        amg = SmoothedAggregation(sp.csr_matrix(block),
                                  max_coarse=max(1, block.shape[0] // 10), contrast=contrast)
    if kind == "amg":
        return _tentative(amg, m, cut)
    P = sp.identity(block.shape[0], format="csr")
    for lv in amg.levels[:-1]:
        P = sp.csr_matrix(P @ lv.P)
    P = sp.csr_matrix(P[:m])
    P.eliminate_zeros()
    keep = np.flatnonzero(np.diff(P.tocsc().indptr))
    return sp.csr_matrix(P[:, keep])


CUT_THETA = 0.1   # |a_ij| >= CUT_THETA sqrt(|a_ii a_jj|) to a ghost: a row cut from its aggregate


def _cut_rows(local, d, m, agg) -> np.ndarray:
    """The own rows (of ``m``) in no aggregate of the block (``agg`` < 0) with a strong
    connection to a ghost (``|a_ij| >= CUT_THETA sqrt(|a_ii a_jj|)``, ``d`` = ``|diag A|``
    on the plan's columns): their strong neighbours are all across the rank boundary."""
    miss = np.flatnonzero(agg < 0)
    if not miss.size or local.shape[1] == m:
        return miss[:0]
    L = sp.csr_matrix(local[miss])
    r = np.repeat(np.arange(miss.size), np.diff(L.indptr))
    c = L.indices
    ghost = c >= m
    strong = np.abs(L.data[ghost]) >= CUT_THETA * np.sqrt(d[miss[r[ghost]]] * d[c[ghost]])
    hit = np.zeros(miss.size, dtype=bool)
    hit[r[ghost][strong]] = True
    return miss[hit]


def _tentative(amg, m, cut=None):
    """The first level's aggregates of the rank's AMG on its own ``m`` rows as a tentative
    prolongator (one normalized column of ones an aggregate, pyamg's ``T`` for ``B = 1``),
    and the smoothing weight ``4/3 / rho(D^-1 A)`` of the block's first level. Smoothed
    with the whole A (the ghosts' rows of T across the boundary, :class:`CoarseLevel`): the
    basis of a global smoothed aggregation whose aggregates stop at the ranks' boundaries
    (a block's own smoothed P, cut at the boundary, took 17 CG iterations over 2 ranks on a
    100^2 Poisson against 9 for one rank's AMG)."""
    agg = np.asarray(amg.aggregates[0][0])
    if agg.size != amg.levels[0][0].shape[0]:   # node aggregates (blocks): no T here
        raise ValueError("coarse='amg' builds on scalar aggregates; this block's AMG "
                         "aggregates nodes: give coarse='aggregates'")
    agg = agg[:m]
    if cut is not None:   # round 43 (h7): a row whose strong neighbours are all across the
        # boundary (a high-coefficient island cut there) is in no aggregate of its block,
        # so in no coarse function: one of its own. 30 % of the cells 1e4 at random, 80^2:
        # CG over 2 / 4 ranks 31 / 45 iterations -> 11 / 12 (one rank 5)
        extra = _cut_rows(cut[0], cut[1], m, agg)
        if extra.size:
            agg = agg.copy()
            agg[extra] = agg.max(initial=-1) + 1 + np.arange(extra.size)
    rows = np.flatnonzero(agg >= 0)
    cols, agg_c = np.unique(agg[rows], return_inverse=True)
    T = sp.csr_matrix((np.ones(rows.size), (rows, agg_c)), shape=(m, cols.size))
    T = sp.csr_matrix(T @ sp.diags(1.0 / np.sqrt(np.asarray(T.sum(axis=0)).ravel())))
    lmax = float(amg.levels[0][2])
    rho = lmax / 1.1 if amg.symmetric else lmax
    return T, 4.0 / 3.0 / rho


class CoarseLevel:
    """``Q r = P A_c^-1 P^T r`` over the ranks of ``op`` (a :class:`~.rows._Rows`), ``P``
    this rank's coarse basis (own rows x own coarse unknowns)."""

    def __init__(self, op, P, comm, cycle=False, contrast=None, constant_null=False,
                 near_nullspace=None, transpose=False):
        self.op, self.comm = op, comm
        # round 47 (h4): a complex A's coarse level in complex arithmetic (P smoothed with
        # its D^-1 A, A_c = R A P), R = P^T for a complex symmetric A (``transpose``: A_c
        # and Q complex symmetric, as COCG needs), else P^H (pyamg's complex SA likewise)
        self.dtype = np.dtype(getattr(op, "dtype", np.float64))
        self.contrast = contrast
        self.constant_null = bool(constant_null)   # A 1 = 0 (round 44 h4): A_c is singular
        self.amg = None
        self.Bc = None
        smooth = None
        if isinstance(P, tuple):   # 'amg': (T, omega), T smoothed once with the whole A
            P, smooth = P   # one weight on every rank: the largest rho(D^-1 A) of the blocks
            smooth = smooth if comm is None else min(comm.allgather(smooth))
        self.omega = smooth
        P = sp.csr_matrix(P, dtype=self.dtype)
        nc = P.shape[1]
        if near_nullspace is not None and cycle:   # round 46 (h6): this rank's rows of the
            # near-null vectors restricted to its coarse unknowns, T^T B (T's columns are
            # orthonormal: the aggregate means), gathered for A_c's AMG (its B)
            Bc = np.asarray(P.T @ np.asarray(near_nullspace, dtype=np.float64)).real
            Bc = Bc.reshape(nc, -1)
            self.Bc = Bc if comm is None else np.vstack(comm.allgather(Bc))
        counts = [nc] if comm is None else list(comm.allgather(nc))
        self.N = int(sum(counts))
        rank = 0 if comm is None else comm.Get_rank()
        off = int(sum(counts[:rank]))
        Pg = sp.csr_matrix((P.data, P.indices + off, P.indptr), shape=(P.shape[0], self.N))
        AP = self._times_A(Pg)
        if smooth is not None:   # P = (I - omega D^-1 A) T on the own rows, ghosts' T included
            m = op.plan.hi - op.plan.lo
            dinv = 1.0 / np.asarray(op.plan.local[:, :m].diagonal(), dtype=self.dtype)
            Pg = sp.csr_matrix(Pg - sp.diags(smooth * dinv) @ AP)
            Pg.eliminate_zeros()
            AP = self._times_A(Pg)
        self.P = Pg
        self.PT = sp.csr_matrix(Pg.T if transpose or self.dtype.kind != "c" else Pg.T.conj())
        if cycle:   # the gathered coarse problem, sparse, and an AMG of it on every rank
            Ac = sp.csr_matrix(self.PT @ AP)
            if comm is not None:
                Ac = sp.csr_matrix(sum(comm.allgather(Ac)))
            Ac.sum_duplicates()
            self.Ac = Ac
            self._cycle(Ac)
            return
        Ac = (self.PT @ AP).toarray()
        if comm is not None:
            whole = np.empty_like(Ac)
            comm.Allreduce(Ac, whole, op=op._mpi.SUM)
            Ac = whole
        self.Ac = Ac
        self._factor(Ac)

    def _cycle(self, Ac):
        """``A_c^-1`` approximated by one V-cycle of smoothed aggregation on ``A_c`` (a
        symmetric positive definite V-cycle for a symmetric A: CG keeps its two-level
        preconditioner symmetric)."""
        from ..amg import SmoothedAggregation

        N = Ac.shape[0]
        if N <= 400:   # small enough: exactly, as 'aggregates'
            return self._factor(Ac.toarray())
        d = Ac.diagonal()
        if not (np.all(d != 0) if np.iscomplexobj(d) else np.all(d > 0)):
            raise ValueError(f"the coarse problem across the ranks ({N} unknowns) has a "
                             f"diagonal entry <= 0: give coarse='aggregates' or 'none'")
        # round 44 (h4): a high-contrast A (``contrast``, the whole matrix's) keeps its
        # symmetric strength on A_c, whose diagonal (of smoothed aggregates) does not show the
        # bands: evolution strength there took CG 35 iterations over 32 ranks (30 % of the
        # cells 1e4 at random, 160^2; an exact A_c^-1 12), now 12
        self.amg = SmoothedAggregation(Ac, contrast=True if self.contrast else None,
                                       B=self.Bc)
        pre = self.amg.aspreconditioner()
        dt = self.dtype
        self._solve = lambda r: np.asarray(pre.matvec(r), dtype=dt).ravel()

    def _times_A(self, Pg):
        """This rank's rows of ``A P`` (the ghosts' rows of P from their owners)."""
        plan, comm = self.op.plan, self.comm
        if comm is None:
            ghost_rows = sp.csr_matrix((0, self.N))
        else:
            got = comm.alltoall([Pg[s] for s in plan.sends])
            parts = [g for g, want in zip(got, plan.ghosts) if want.size]
            ghost_rows = sp.vstack(parts).tocsr() if parts else sp.csr_matrix((0, self.N))
        return sp.csr_matrix(plan.local @ sp.vstack([Pg, ghost_rows]).tocsr())

    def _factor(self, Ac):
        N = Ac.shape[0]
        scale = np.abs(Ac).max() if N else 1.0
        if self.constant_null and N:   # round 44 (h4): A's rows sum to zero (a pure Neumann
            # problem, a graph Laplacian): A_c = P^T A P holds the constant too (P keeps it),
            # singular; shifted by 1e-10 max|diag| as one rank's coarsest level is
            # (amg._sparse_lu): CG on a compatible b then converges (HEAD refused the
            # job: 'give coarse=none'; 30^2 Neumann over 2 ranks, block AMG: now 7
            # iterations, one rank 8)
            Ac = Ac + 1e-10 * float(np.abs(Ac.diagonal()).max()) * (
                np.identity(N) if isinstance(Ac, np.ndarray) else sp.identity(N))
        if N <= _DENSE_MAX:
            import warnings

            import scipy.linalg as la

            with warnings.catch_warnings():   # a singular A_c is said below, in one line
                warnings.simplefilter("ignore", la.LinAlgWarning)
                lu, piv = la.lu_factor(Ac, check_finite=False)
            d = np.abs(np.diag(lu))
            if N and (not np.all(np.isfinite(d)) or d.min() <= 1e-13 * scale):
                raise ValueError(f"the coarse problem across the ranks ({N} unknowns) is "
                                 f"singular (A has a null space, e.g. a pure Neumann "
                                 f"problem): give coarse='none'")
            self._solve = lambda r: la.lu_solve((lu, piv), r, check_finite=False)
        else:
            import scipy.sparse.linalg as sla

            try:
                f = sla.splu(sp.csc_matrix(Ac))
            except RuntimeError as e:
                raise ValueError(f"the coarse problem across the ranks ({N} unknowns) is "
                                 f"singular ({e}): give coarse='none'") from None
            self._solve = f.solve

    def restrict(self, r) -> np.ndarray:
        """``P^T r`` whole on every rank (one Allreduce)."""
        mine = np.ascontiguousarray(self.PT @ r, dtype=self.dtype)
        if self.comm is None:
            return mine
        whole = np.empty(self.N, dtype=self.dtype)
        self.comm.Allreduce(mine, whole, op=self.op._mpi.SUM)
        return whole

    def __call__(self, r) -> np.ndarray:
        """``Q r``: this rank's rows of ``P A_c^-1 P^T r``."""
        return self.P @ self._solve(self.restrict(r))


def smoothing_degree(A, size: int, contrast) -> int:
    """The degree of CG's V-cycle smoother in ``B A`` (:func:`two_level`): 1 (``B`` damped by
    ``min(1, 1.8 / lambda)``, round 44 h23) for a plain matrix over more than
    ``PLAIN_RANKS`` ranks, else ``CHEB_DEGREE`` (the Chebyshev polynomial, round 45 h4).
    Plain: an M-matrix (every off-diagonal entry <= 0) with no coefficient contrast
    (``contrast``, the whole matrix's, :func:`~.rows.whole_contrast`) whose off-diagonal
    magnitudes lie within ``PLAIN_SPREAD`` of each other: a constant-coefficient Laplacian
    with or without a reaction term (round 45 h14, thread ranks, CG iterations damped /
    Chebyshev and solve CPU: Poisson 160^2 over 16 / 24 / 32 ranks 10 / 8 / 9 against 9 / 8
    / 8, 0.30 / 0.52 / 0.64 s against 0.38 / 0.67 / 0.72). Everything else keeps the
    Chebyshev: the jump (contrast, 11 -> 8 over 16-32 ranks), elasticity (positive
    off-diagonals, 12 -> 8 over 16), an anisotropic Laplacian (1:100, its off-diagonals 100
    apart, 9 -> 6 over 32), a variable coefficient (its spread), and every split over up to
    8 ranks (Poisson 100^2 over 8 ranks 8 -> 6 at the same CPU)."""
    if size <= PLAIN_RANKS or contrast or np.iscomplexobj(A.data):
        return CHEB_DEGREE
    A = sp.coo_matrix(A)
    off = A.data[(A.row != A.col) & (A.data != 0)]
    if off.size == 0 or np.any(off > 0):
        return CHEB_DEGREE
    off = np.abs(off)
    return 1 if float(off.max()) <= PLAIN_SPREAD * float(off.min()) else CHEB_DEGREE


def two_level(B, Q: CoarseLevel, op, symmetric: bool, overlap: int = 0, pair=None,
              degree: int = CHEB_DEGREE, bilinear: bool = False, damping: float = 1.0):
    """The two-level preconditioner from the block solve ``B`` and the coarse solve ``Q``
    (module docstring): for CG (``symmetric``) with block Jacobi or an overlap the
    symmetric V-cycle ``S, Q, S`` with ``S`` the Chebyshev polynomial in ``B A`` of
    :func:`chebyshev` over ``[1.1 lambda / 4, 1.1 lambda]`` (``lambda`` the largest
    eigenvalue of ``B A``, eight Lanczos steps; before round 45 ``B`` damped by ``min(1, 1.8
    / lambda)``), with additive Schwarz (whose ``B A`` reaches 2 where blocks overlap: the
    Lanczos estimate sees it) the same (round 47 h13: until then the balancing ``Q, B, Q``,
    12 / 13 CG iterations on Poisson / the 30-degree anisotropy 64^2 over 2 ranks with an
    overlap where block Jacobi took 5 / 7; now 5 / 6); for BiCGStab / GMRES
    ``B`` then ``Q``. COCG (``bilinear``) takes the V-cycle ``B, Q, B`` with or without an
    overlap, ``B`` scaled by ``damping`` (round 47 h12: an overlap's basic Schwarz corrects
    its rows once per block holding them, so ``B A`` reaches 2 there; its balancing form
    took 182 iterations on a Helmholtz 48^2 over 4 ranks where the V-cycle with ``B / 2``
    takes 37, block Jacobi's 44)."""
    if symmetric and pair is not None:
        ras, ras_t = pair

        def apply(r):
            z = ras(r)
            z = z + Q(r - op.matvec(z))
            return z + ras_t(r - op.matvec(z))
        return apply
    if symmetric and bilinear:   # round 47 (h4): COCG's M = M^T: the V-cycle with B
        # undamped (B A's spectrum is complex: no Lanczos interval for it); round 47 (h12):
        # with an overlap too, B scaled by ``damping`` (the balancing Q, B, Q: 4x the count)
        w = float(damping)

        def apply(r):
            z = w * B(r)
            z = z + Q(r - op.matvec(z))
            return z + w * B(r - op.matvec(z))
        apply.lam, apply.interval, apply.degree = None, None, 0
    elif symmetric:   # round 47 (h13): with an overlap too: the balancing Q, B, Q took
        # 12-14 CG iterations where block Jacobi's V-cycle took 5-8 (Poisson, the anisotropy,
        # elasticity 48^2 over 2 / 4 ranks), the V-cycle with the overlap's B takes 4-8, never
        # more than block Jacobi's. An overlap keeps the Chebyshev where a plain matrix past 8
        # ranks takes the damped B: its damped overlap took 14 where block Jacobi took 8
        # (Poisson 64^2 over 9 ranks), its Chebyshev takes 5
        lam = lambda_max(B, op, LANCZOS_STEPS)
        degree = CHEB_DEGREE if overlap and degree == 1 else degree
        if degree == 1:   # round 44 (h23)'s damped B (smoothing_degree: a plain matrix)
            omega = 1.0 if lam <= 1.8 else 1.8 / lam

            def smooth(r):
                return omega * B(r)
            smooth.interval = None
        else:
            smooth = chebyshev(B, op, CHEB_TOP * lam / CHEB_RATIO, CHEB_TOP * lam, degree)

        def apply(r):
            z = smooth(r)
            z = z + Q(r - op.matvec(z))
            return z + smooth(r - op.matvec(z))
        apply.lam, apply.interval, apply.degree = lam, smooth.interval, degree
    else:
        def apply(r):
            z = B(r)
            return z + Q(r - op.matvec(z))
    return apply


def chebyshev(B, op, lo, hi, degree):
    """``r -> p(B A) B r``: ``degree`` steps of the Chebyshev iteration for ``A z = r`` from
    zero, preconditioned by ``B``, over ``[lo, hi]`` (Saad, Algorithm 12.1): the residual
    polynomial of ``B A`` is the Chebyshev one, at most ``1 / T_degree(sigma)`` on ``[lo,
    hi]`` and under 1 on ``(0, hi + lo)``; symmetric for a symmetric ``B``. ``degree - 1``
    products with A (halo exchanges), no dot product."""
    theta, delta = (hi + lo) / 2.0, (hi - lo) / 2.0
    sigma = theta / delta

    def smooth(r):
        d = B(r) / theta
        z, rho = d.copy(), 1.0 / sigma
        for _ in range(degree - 1):
            rho_next = 1.0 / (2.0 * sigma - rho)
            d = (rho_next * rho) * d + (2.0 * rho_next / delta) * B(r - op.matvec(z))
            z += d
            rho = rho_next
        return z
    smooth.interval = (lo, hi)
    return smooth


def lambda_max(B, op, steps) -> float:
    """The largest eigenvalue of ``B A`` (``B``, ``A`` symmetric positive definite) by
    ``steps`` Lanczos steps in A's inner product over the ranks (one ``B`` and one matvec a
    step, as a power step): the largest Ritz value, a lower bound much nearer than the power
    steps' Rayleigh quotient (round 44: 8 steps 1.905-1.97 where 30 power steps give
    1.92-1.97 and 6 gave 1.6-1.87; the jump, Poisson and elasticity over 16 ranks)."""
    v = np.random.default_rng(7 + op.plan.lo).standard_normal(op.plan.hi - op.plan.lo)
    Av = op.matvec(v)
    nv = op.dot(v, Av).real   # real for a Hermitian A (round 47 h4: a complex one)
    if not nv > 0:
        return 0.0
    v, Av = v / np.sqrt(nv), Av / np.sqrt(nv)
    v_old = Av_old = np.zeros_like(v)
    alpha, beta = [], []
    for _ in range(steps):
        w = B(Av)
        Aw = op.matvec(w)
        a = op.dot(w, Av).real
        alpha.append(a)
        w = w - a * v - (beta[-1] * v_old if beta else 0.0)
        Aw = Aw - a * Av - (beta[-1] * Av_old if beta else 0.0)
        nw = op.dot(w, Aw).real
        if not nw > 1e-28 * a * a:
            break
        beta.append(float(np.sqrt(nw)))
        v_old, Av_old = v, Av
        v, Av = w / beta[-1], Aw / beta[-1]
    m = len(alpha)
    if m == 0:
        return 0.0
    T = np.diag(alpha) + np.diag(beta[:m - 1], 1) + np.diag(beta[:m - 1], -1)
    return float(np.linalg.eigvalsh(T)[-1])
