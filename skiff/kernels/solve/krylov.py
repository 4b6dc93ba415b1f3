"""Krylov methods: CG, pipelined CG, BiCGStab and restarted GMRES(m), preconditioned.

Each method takes an operator ``op`` with ``op.matvec(p, out)`` and ``op.matvec_dot(p, out)``
(out = A p; the second also returns ``p . A p``, fused on grids), a preconditioner ``M(r, out)``
(or None) and the right-hand side on the device. Vectors keep the shape of ``b`` (3D on grids).
They return ``(x, history, converged)``, ``history`` being the residual norms (the recurrence
residual) from the initial one on. Breakdown and, for the CG family, an indefinite matrix or
preconditioner raise :class:`SolveError` with the iteration and the offending value.

CG, BiCGStab and GMRES also run on complex vectors (numpy, one process): their inner products
are then ``vdot(a, b) = sum(conj(a) b)``, SciPy's, so that CG solves Hermitian positive
definite systems and GMRES rotates with complex Givens rotations.

The same loops run distributed: an operator over several ranks (``parallel.krylov``) gives
``op.allsum(x)``, the sum over ranks of a number or a tuple of numbers, and every dot product
is then a local sum and one ``allsum`` (pipelined CG's three in one call); its vectors are
padded blocks whose matvec outputs have zero ghosts, so sums over whole arrays are sums over
the blocks. Without ``allsum`` the sums are local (one process).
"""

from __future__ import annotations

import math

import numpy as np

from skiff.kernels.backend.report import JobCancelled

from . import fused

__all__ = ["SolveError", "Stagnation", "Divergence", "Breakdown", "cg", "pipelined_cg",
           "bicgstab", "gmres", "KRYLOV"]


class SolveError(ValueError):
    """The method cannot continue: breakdown, indefinite matrix, NaN."""


class Stagnation(SolveError):
    """The method stopped making progress; ``x`` (the best iterate) and ``history`` are kept
    so that the caller can return them as a non-converged result."""

    def __init__(self, message, x, history):
        super().__init__(message)
        self.x, self.history = x, history


class Divergence(Stagnation):
    """The residual grew without bound (see :class:`_Watch`): ``x`` is the best iterate
    (within a factor 2 of the smallest residual seen), ``history`` the residuals to the
    stop."""


#: a residual this many times above the smallest one seen, whose smallest value over
#: ``DIVERGE_WINDOW`` iterations is not a decade below its smallest over the window before,
#: is a divergence (at least two windows above). Converging runs pass far above their best:
#: BiCGStab+Jacobi on a Laplacian with rows scaled by 10^U(-6, 6) (60^2) is at 4e9 |b| by
#: iteration 9 and 81 iterations above 1e6 |b| before converging in 287, falling a decade
#: every 10-45 iterations on the way down.
DIVERGE_FACTOR = 1e6
DIVERGE_WINDOW = 50


class _Watch:
    """The smallest residual seen and (a copy of) its iterate, and the divergence test (see
    ``DIVERGE_FACTOR``). The iterate is copied when the residual has halved since the last
    copy (a fast run: one copy an iteration; a slow one fewer), so the x kept is within a
    factor 2 of the smallest residual's; the iterates themselves are untouched."""

    __slots__ = ("best", "kept", "x", "start", "low", "prev", "name")

    def __init__(self, name, r0, x):
        self.name = name
        self.best = self.kept = r0
        self.x = x.copy()
        self.start = self.prev = None
        self.low = math.inf

    def see(self, it, rnorm, x, history):
        if rnorm < self.best:
            self.best = rnorm
            if rnorm <= 0.5 * self.kept:
                self.kept = rnorm
                self.x[...] = x
        if not rnorm > DIVERGE_FACTOR * self.best:   # NaN: the callers' finite checks
            self.start = self.prev = None
            return
        if self.start is None:
            self.start, self.low = it, rnorm
        self.low = min(self.low, rnorm)
        if it - self.start + 1 < DIVERGE_WINDOW:
            return
        if self.prev is not None and not self.low < 0.1 * self.prev:
            b0 = history[0]
            raise Divergence(
                f"{self.name}: diverged, the residual grew to {rnorm / b0:.1e} times the "
                f"initial one ({rnorm / self.best:.1e} times its smallest, "
                f"{self.best / b0:.1e}) and "
                f"did not fall a decade over {DIVERGE_WINDOW} iterations (iteration {it}); "
                f"the iterate with the smallest residual is returned", self.x, history)
        self.prev, self.start, self.low = self.low, it + 1, math.inf


class Breakdown(SolveError):
    """BiCGStab broke down (a zero inner product): ``x`` (the iterate when it happened) and
    ``history`` are kept, and ``info`` is SciPy's negative code for it (-10: rho, -11: the
    others), which ``x, info = skiff.solve(...)`` returns as SciPy's ``bicgstab`` does."""

    def __init__(self, message, x, history, info):
        super().__init__(message)
        self.x, self.history, self.info = x, history, int(info)


def _dot(a, b) -> float:
    """``conj(a) . b``: a float for real vectors, a complex number for complex ones."""
    if a.dtype.kind == "c" or b.dtype.kind == "c":
        if type(a) is np.ndarray and type(b) is np.ndarray:   # BLAS, no conj() copy
            return complex(np.vdot(a, b))   # (a.conj() * b).sum() was 16 % of a GMRES solve
        return complex((a.conj() * b).sum())
    if type(a) is np.ndarray:  # the CPU: numpy's reduction, no dispatch
        return float((a * b).sum())
    return fused.dot(a, b)  # a GPU: one launch


def _norm(a) -> float:
    d = _dot(a, a)
    return math.sqrt(d.real if type(d) is complex else d)


def _real(value) -> float:
    """The real part of a Hermitian form's value (``p^H A p``, ``r^H M r``), which is real
    but for rounding; a real number unchanged."""
    return value.real if type(value) is complex else value


def _axpy_norm(x, r, p, q, alpha):
    """x += alpha p; r -= alpha q; returns (x, r, |r|^2): the fused kernel for real vectors."""
    if r.dtype.kind != "c":
        return fused.axpy_norm(x, r, p, q, alpha)
    x += alpha * p
    r -= alpha * q
    return x, r, _norm(r) ** 2


def _local(value):
    return value


def _sums(op):
    """``(dot, norm, total)`` for ``op``'s world: global dot product and norm, and the sum
    over ranks of local sums (the identity in one process)."""
    total = getattr(op, "allsum", None) or _local
    if total is _local:
        return _dot, _norm, total

    def dot(a, b) -> float:
        return float(total(_dot(a, b)))

    def norm(a) -> float:
        return math.sqrt(dot(a, a))

    return dot, norm, total


def _finite(value: float, what: str, it: int) -> None:
    if not math.isfinite(abs(value)):
        raise SolveError(f"{what} became {value} at iteration {it}: the system or the "
                         "preconditioner produces NaN/inf")


def _report(history, callback, it, x):
    if callback is not None:
        callback(it, history[-1], x)


SINGULAR_RAYLEIGH = 1e-8   # |p.Ap| / |p|^2 under this times A's scale: rounding's (round 47)


def _not_positive(op, p, pq, it, _dot) -> str:
    """CG's message for ``p.Ap <= 0`` at iteration ``it``: a matrix not positive definite,
    or (round 47 h4) ``p.Ap`` of rounding's size against A's scale (``|A v| / |v|``, one
    product on a fixed vector, paid here only): a positive semidefinite singular A whose
    b has a part outside its range, where CG's iterates grow along the null vector (a
    normalized graph Laplacian with b at random: ``p.Ap = -1.0e+13 at iteration 476``)."""
    text = (f"cg: the matrix is not positive definite (p.Ap = {pq:.3e} at iteration {it}); "
            f"use method='bicgstab' or 'gmres'")
    try:
        pp = _real(_dot(p, p))
        xp = getattr(op, "xp", None) or np
        v = xp.sin(xp.arange(p.size) * 0.7 + 0.3).reshape(p.shape).astype(p.dtype)
        w = v * 0
        op.matvec(v, w)
        scale = math.sqrt(_real(_dot(w, w)) / _real(_dot(v, v)))
    except Exception:   # noqa: BLE001 (the plain message is still right)
        return text
    if it > 1 and pq < 0 and pp > 0 and scale > 0 and -pq / pp <= SINGULAR_RAYLEIGH * scale:
        # (not p.Ap = 0 exactly on a first step: diag(1, -1) with b = 1 is indefinite)
        return (f"cg: p.Ap = {pq:.3e} at iteration {it} is rounding's size against A's "
                f"scale (|p.Ap| / |p|^2 = {abs(pq) / pp:.1e}, |A v| / |v| = {scale:.1e}): A "
                f"looks singular (positive semidefinite) and b has a part outside its range, "
                f"so no x solves it; method='minres' stops at a least-squares x and says so; "
                f"give a b in A's range, or compatibility='project' where A's null space is "
                f"the constant")
    return text


def cg(op, b, x, M=None, *, tol, maxiter, callback=None, flexible=False):
    """Preconditioned conjugate gradients (A symmetric positive definite, M positive definite).

    ``flexible=True`` uses the Polak-Ribiere beta (one extra dot product), which keeps CG
    converging when M is only nearly symmetric (a variable or non-symmetric preconditioner);
    every preconditioner of skiff is symmetric, so the default is the plain Fletcher-Reeves
    form, the one of scipy.sparse.linalg.cg."""
    _dot, _norm, total = _sums(op)
    r = b.copy()
    q = b * 0.0
    if _norm(x) > 0:
        op.matvec(x, q)
        r -= q
    z = r * 0.0 if M is not None else r
    rr = _real(_dot(r, r))
    history = [math.sqrt(rr)]
    _report(history, callback, 0, x)
    if history[-1] <= tol:
        return x, history, True
    if M is not None:
        M(r, z)
    rz = _real(_dot(r, z))
    if M is not None and rz <= 0:
        raise SolveError(f"cg: the preconditioner is not positive definite (r.Mr = {rz:.3e})")
    p = z.copy()
    watch = _Watch("cg", history[0], x)
    for it in range(1, int(maxiter) + 1):
        pq = op.matvec_dot(p, q)
        _finite(pq, "p.Ap", it)
        if pq <= 0:
            raise SolveError(_not_positive(op, p, pq, it, _dot))
        alpha = rz / pq
        x, r, rr = _axpy_norm(x, r, p, q, alpha)
        rr = float(total(rr))
        history.append(math.sqrt(rr))
        _report(history, callback, it, x)
        _finite(rr, "the residual", it)
        if history[-1] <= tol:
            return x, history, True
        watch.see(it, history[-1], x, history)
        if M is not None:
            M(r, z)
            rz_new = _real(_dot(r, z))
            if rz_new <= 0:
                raise SolveError(f"cg: the preconditioner is not positive definite "
                                 f"(r.Mr = {rz_new:.3e} at iteration {it})")
            # flexible (Polak-Ribiere) beta equals rz_new / rz for a symmetric M in exact
            # arithmetic
            beta = -alpha * _real(_dot(z, q)) / rz if flexible else rz_new / rz
        else:
            rz_new = rr
            beta = rz_new / rz
        rz = rz_new
        p *= beta
        p += z
    return x, history, False


def pipelined_cg(op, b, x, M=None, *, tol, maxiter, callback=None, restarts=10):
    """Pipelined CG (Ghysels and Vanroose): one fused pass per iteration updates eight vectors
    and computes the three dot products together, so a distributed run has a single global
    reduction per iteration, overlappable with the matvec and preconditioner.

    Its recurrences drift from the true residual sooner than CG's (attainable accuracy): when
    the recurrence meets the tolerance, or its ``r.Mr`` falls to rounding level, the true
    residual is checked (one matvec) and, if it is not met, the method restarts from the
    current iterate (at most ``restarts`` times). A recurred ``p.Ap`` or ``r.Mr`` <= 0 is
    recomputed from r, M and A before "not positive definite" is raised: round-off in the
    recurrences (not indefiniteness) restarts the method from the true residual instead."""
    _dot, _norm, total = _sums(op)
    shape = b.shape
    xp_like = b.ravel()
    vs = (xp_like[None, :] * 0.0).repeat(10, axis=0)   # x r u w z q s p m n
    V = [vs[i].reshape(shape) for i in range(10)]
    X, R, U, W, Z, Q, S, P, Mv, N = V
    X[...] = x

    def prec(src, dst):
        if M is None:
            dst[...] = src
        else:
            M(src, dst)

    def true_residual():
        op.matvec(X, Q)
        return _norm(b - Q)

    def direct(gamma_old):
        """r.Mr and p.Ap computed from r, M and A (not recurred), p = Mr + beta p, for the
        next step's direction; two spare vectors, allocated only here."""
        u, ap = b * 0.0, b * 0.0
        prec(R, u)
        g = _dot(R, u)
        p = u + (g / gamma_old) * P
        op.matvec(p, ap)
        return g, _dot(p, ap)

    history = []
    it = 0
    for _attempt in range(int(restarts) + 1):
        vs[1:] = 0.0
        op.matvec(X, Q)
        R[...] = b - Q
        Q[...] = 0.0
        prec(R, U)
        op.matvec(U, W)
        gamma, delta, rr = (float(v) for v in total(
            (float((R * U).sum()), float((W * U).sum()), float((R * R).sum()))))
        if not history:
            history.append(math.sqrt(rr))
            _report(history, callback, 0, X)
        else:
            history[-1] = math.sqrt(rr)
        if math.sqrt(rr) <= tol:
            return X.copy(), history, True
        alpha_old = gamma_old = None
        gamma0 = abs(gamma)
        stalled = False
        while it < int(maxiter):
            it += 1
            prec(W, Mv)
            op.matvec(Mv, N)
            if gamma_old is None:
                beta, denom = 0.0, delta
            else:
                beta = gamma / gamma_old
                denom = delta - beta * gamma / alpha_old
            _finite(denom, "the CG denominator", it)
            if (denom <= 0 or gamma <= 0) and abs(gamma) <= 1e-14 * gamma0:
                it -= 1          # rounding at the attainable accuracy, not indefiniteness
                stalled = True
                break
            if denom <= 0 or gamma <= 0:
                if gamma_old is None:   # computed directly at this (re)start: it is so
                    raise SolveError(f"pipecg: the matrix or preconditioner is not positive "
                                     f"definite (r.Mr = {gamma:.3e}, u.Au = {denom:.3e} at "
                                     f"iteration {it})")
                # the recurred values: round-off can make them negative on an SPD system
                # (the 1000:1 jump, 24x40, unpreconditioned: denominator -0.18 at iteration
                # 736); recompute r.Mr and p.Ap from r, M and A before blaming either
                direct_gamma, curvature = direct(gamma_old)
                if direct_gamma <= 0:
                    raise SolveError(f"pipecg: the preconditioner is not positive definite "
                                     f"(r.Mr = {direct_gamma:.3e} at iteration {it})")
                if curvature <= 0:
                    raise SolveError(f"pipecg: the matrix is not positive definite (p.Ap = "
                                     f"{curvature:.3e} at iteration {it})")
                it -= 1          # round-off in the recurrences: restart from the true residual
                stalled = True
                break
            alpha = gamma / denom
            gamma_old, alpha_old = gamma, alpha
            _, dots = fused.pipecg_update(vs, alpha, beta)
            gamma, delta, rr = (float(v) for v in total(dots))   # the one reduction
            history.append(math.sqrt(max(rr, 0.0)))
            _report(history, callback, it, X)
            _finite(rr, "the residual", it)
            if history[-1] <= tol:
                stalled = True
                break
        true = true_residual()
        if true <= tol:
            history[-1] = true
            return X.copy(), history, True
        if not stalled or it >= int(maxiter):
            break
    return X.copy(), history, False


def _breakdown_remedy(symmetric) -> str:
    """What to do after a BiCGStab breakdown, by what is known of the matrix: ``symmetric`` is
    True, False, None (unknown) or a function giving one of those (asked only here)."""
    if callable(symmetric):
        symmetric = symmetric()
    if symmetric:   # the 1000:1 jump, 24x40, unpreconditioned: rho = 0 at iteration 487
        return ("; the matrix is symmetric, where BiCGStab gains nothing and can still break "
                "down: use method='cg' if it is positive definite (with a preconditioner on an "
                "ill-conditioned one: precond='auto'), else method='gmres', which cannot")
    if symmetric is None:
        return "; BiCGStab can break down: use method='gmres', which cannot"
    return ("; BiCGStab can break down on strongly non-symmetric systems (convection"
            "-dominated): use method='gmres', which cannot")


def bicgstab(op, b, x, M=None, *, tol, maxiter, callback=None, symmetric=None):
    """Right-preconditioned BiCGStab for non-symmetric systems.

    ``symmetric`` (True, False, None for unknown, or a function returning one, called only on
    a breakdown) picks the remedy a breakdown's error names."""
    _dot, _norm, _ = _sums(op)
    tmp = b * 0.0
    r = b.copy()
    if _norm(x) > 0:
        op.matvec(x, tmp)
        r -= tmp
    rhat = r.copy()
    history = [_norm(r)]
    _report(history, callback, 0, x)
    if history[-1] <= tol:
        return x, history, True
    watch = _Watch("bicgstab", history[0], x)
    rho = alpha = omega = 1.0
    v = b * 0.0
    p = b * 0.0
    phat = b * 0.0
    shat = b * 0.0
    t = b * 0.0
    for it in range(1, int(maxiter) + 1):
        rho_new = _dot(rhat, r)
        _finite(rho_new, "rho", it)
        if abs(rho_new) < 1e-300:
            raise Breakdown(f"bicgstab: breakdown, rho = {rho_new:.3e} at iteration {it}"
                            f"{_breakdown_remedy(symmetric)}", x, history, -10)
        beta = (rho_new / rho) * (alpha / omega)
        rho = rho_new
        p[...] = r + beta * (p - omega * v)
        if M is None:
            phat[...] = p
        else:
            M(p, phat)
        op.matvec(phat, v)
        rv = _dot(rhat, v)
        if abs(rv) < 1e-300:
            raise Breakdown(f"bicgstab: breakdown, rhat.v = {rv:.3e} at iteration {it}"
                            f"{_breakdown_remedy(symmetric)}", x, history, -11)
        alpha = rho / rv
        s = r - alpha * v
        snorm = _norm(s)
        if snorm <= tol:
            x += alpha * phat
            history.append(snorm)
            # SciPy's bicgstab returns here without calling its callback (once an iteration,
            # after the full step): a callback with a ``half_step`` hook gets the half step
            # there (a reporter's progress, not the user's callback(xk))
            if callback is not None:
                getattr(callback, "half_step", callback)(it, snorm, x)
            return x, history, True
        if M is None:
            shat[...] = s
        else:
            M(s, shat)
        op.matvec(shat, t)
        tt = _dot(t, t)
        if tt == 0:
            raise Breakdown(f"bicgstab: breakdown, |t| = 0 at iteration {it}"
                            f"{_breakdown_remedy(symmetric)}", x, history, -11)
        omega = _dot(t, s) / tt
        x += alpha * phat + omega * shat
        r[...] = s - omega * t
        history.append(_norm(r))
        _report(history, callback, it, x)
        _finite(history[-1], "the residual", it)
        if history[-1] <= tol:
            return x, history, True
        watch.see(it, history[-1], x, history)
        if abs(omega) < 1e-300:   # after the update, as SciPy (its x, its -11)
            raise Breakdown(f"bicgstab: breakdown, omega = {omega:.3e} at iteration {it}"
                            f"{_breakdown_remedy(symmetric)}", x, history, -11)
    return x, history, False


def gmres(op, b, x, M=None, *, tol, maxiter, callback=None, restart=30, iterate=True,
          stall=None, grow_to=None, lengths=None):
    """Right-preconditioned restarted GMRES(m) with Givens rotations (``maxiter`` counts inner
    iterations; :class:`~.solver.Solver` passes SciPy's restart cycles times ``restart``).
    Complex vectors take complex rotations: ``[[conj(c), conj(s)], [-s, c]]`` with
    ``c = h_jj / d``, ``s = h_j+1,j / d``, ``d = sqrt(|h_jj|^2 + |h_j+1,j|^2)`` (unitary; the
    real rotation when the entries are real).

    ``callback(it, rnorm, xk)`` gets the current iterate ``xk = x0 + Z y`` of the cycle (one
    small triangular solve and ``j`` axpys at inner step ``j``, done only when a callback is
    given and ``iterate`` is true; scipy's ``callback_type='x'`` gives it once per restart).
    A cycle never makes ``x`` worse: its update is kept only when the true residual of the
    new iterate is not above the old one (on an inconsistent or singular system the small
    least-squares solve can be ill-conditioned and the update huge); otherwise the method
    stops with the old ``x``. ``stall=k``: raise :class:`Stagnation` (with the best ``x``)
    when ``k`` restarts in a row reduced the residual by less than 0.1 % in all, or a cycle
    could not improve it. ``grow_to``: a cycle that reduced the residual less than tenfold
    (but by 0.1 % at least: a stalled one is not helped) doubles the restart length, up to
    ``grow_to`` (``lengths`` gets each cycle's length): a symmetric indefinite Helmholtz
    matrix with AMG took 501 iterations at restart 30, 69 at 100, and did not converge in
    20 010 at k = 50 (196 at 200)."""
    _dot, _norm, _ = _sums(op)
    m = int(restart)
    if m < 1:
        raise ValueError(f"gmres: restart must be a positive integer, got {restart!r}")
    tmp = b * 0.0
    it = 0
    op.matvec(x, tmp)
    r = b - tmp
    beta = _norm(r)
    history = [beta]
    cycles = [beta]                      # the true residual at the end of each cycle
    _report(history, callback, 0, x)
    xk = b * 0.0 if callback is not None and iterate else None
    while it < maxiter:
        if beta <= tol:
            return x, history, True
        V = [r / beta]
        Zs = []
        kind = complex if b.dtype.kind == "c" else float
        H = np.zeros((m + 1, m), dtype=kind)
        cs, sn = np.zeros(m, dtype=kind), np.zeros(m, dtype=kind)
        g = np.zeros(m + 1, dtype=kind)
        g[0] = beta
        j_used = 0
        for j in range(m):
            it += 1
            z = V[j] * 0.0
            if M is None:
                z[...] = V[j]
            else:
                M(V[j], z)
            Zs.append(z)
            w = b * 0.0
            op.matvec(z, w)
            for i in range(j + 1):                       # modified Gram-Schmidt
                H[i, j] = _dot(V[i], w)                   # V_i^H w
                w -= H[i, j] * V[i]
            hnorm = H[j + 1, j] = _norm(w)
            _finite(hnorm, "the Arnoldi norm", it)
            for i in range(j):
                a, c = H[i, j], H[i + 1, j]
                H[i, j], H[i + 1, j] = (cs[i].conjugate() * a + sn[i].conjugate() * c,
                                        -sn[i] * a + cs[i] * c)
            d = math.hypot(abs(H[j, j]), abs(H[j + 1, j]))
            if d == 0:
                raise SolveError(f"gmres: breakdown at iteration {it} (a zero column after "
                                 f"the rotations): A M is singular on the Krylov space, so the "
                                 f"matrix (or the preconditioner) is singular and b is not in "
                                 f"the range reached; try precond='none', or for a least-"
                                 f"squares x scipy.sparse.linalg.lsqr")
            cs[j], sn[j] = H[j, j] / d, H[j + 1, j] / d
            H[j, j], H[j + 1, j] = d, 0.0
            g[j + 1] = -sn[j] * g[j]
            g[j] = cs[j].conjugate() * g[j]
            history.append(abs(g[j + 1]))
            j_used = j + 1
            if xk is not None:                           # the cycle's current iterate
                y = np.linalg.solve(np.triu(H[:j_used, :j_used]), g[:j_used])
                xk[...] = x
                for i in range(j_used):
                    xk += y[i] * Zs[i]
                _report(history, callback, it, xk)
            else:
                try:
                    _report(history, callback, it, x)
                except JobCancelled as exc:   # a cancel mid-cycle: the cycle's iterate goes
                    if getattr(exc, "x", None) is not None:   # with it (round 34)
                        y = np.linalg.solve(np.triu(H[:j_used, :j_used]), g[:j_used])
                        xc = x.copy()
                        for i in range(j_used):
                            xc += y[i] * Zs[i]
                        exc.x = xc
                    raise
            if abs(g[j + 1]) <= tol or it >= maxiter or hnorm == 0.0:
                break
            V.append(w / hnorm)
        y = np.linalg.solve(np.triu(H[:j_used, :j_used]), g[:j_used])
        dx = Zs[0] * y[0]
        for i in range(1, j_used):
            dx += y[i] * Zs[i]
        op.matvec(x + dx, tmp)
        r_new = b - tmp
        beta_new = _norm(r_new)
        if not (beta_new <= beta):       # worse, or NaN: keep x, the better iterate
            history[-1] = beta
            why = (f"gmres: a restart cycle could not reduce the residual (|r| = {beta:.3e}; "
                   f"the cycle's update gave {beta_new:.3e}) at iteration {it}, so the "
                   "iterate before it is returned; the system may be singular with b outside "
                   "its range (no solution), or the preconditioner unsuited to it")
            if stall is not None:
                raise Stagnation(why, x, history)
            return x, history, False
        x += dx
        r, beta = r_new, beta_new
        history[-1] = beta
        cycles.append(beta)
        if lengths is not None:
            lengths.append(j_used)
        if beta <= tol:
            return x, history, True
        if grow_to is not None and m < grow_to and 0.1 * cycles[-2] < beta <= (
                1 - 1e-3) * cycles[-2]:   # slow, not stalled (no longer basis helps then)
            m = min(2 * m, int(grow_to))
        k = None if stall is None else int(stall)
        if k is not None and len(cycles) > k and beta > (1 - 1e-3) * cycles[-1 - k]:
            raise Stagnation(f"gmres: no progress over the last {k} restarts ({k * m} "
                             f"iterations: |r| went from {cycles[-1 - k]:.3e} to {beta:.3e}) "
                             f"at iteration {it}", x, history)
    return x, history, beta <= tol


KRYLOV = {"cg": cg, "pipecg": pipelined_cg, "bicgstab": bicgstab, "gmres": gmres}
