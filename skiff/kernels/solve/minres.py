"""MINRES: the minimum-residual method for symmetric (Hermitian) systems that may be
indefinite (saddle points, shifted Laplacians), with a symmetric positive definite
preconditioner M.

Paige and Saunders' method: the Lanczos process of ``M^-1 A`` (three-term, so the memory and
the work per iteration are CG's, whatever the iteration count) builds a tridiagonal T; one
Givens rotation per iteration keeps T's QR factorisation, and x is updated along directions
``w`` so that each iterate minimises the residual over the Krylov space, in the ``M^-1``
norm. The iterates are SciPy's ``minres``'s (``scipy.sparse.linalg.minres``, same method).

What differs from SciPy: the stopping test is skiff's ``|b - A x| <= max(rtol |b|, atol)``,
the same as CG's and GMRES's (SciPy's stops on ``|r| / (|T| |x|) <= rtol``, a backward error
with an estimate of ``|A|``, so it stops at a different iteration for the same rtol). Without
M the residual norm is the rotation's ``phibar`` (no extra work); with M that is the
``M^-1``-norm, so the 2-norm residual is carried by a recurrence on ``A w`` (three vectors
more). Complex Hermitian systems take ``vdot`` inner products (SciPy's minres is real).
Where b is not in A's range (a singular A), without M, it stops as SciPy's does on
``|A r| / (|A| |r|) <= min(1e-8, rtol)`` (r then lies in A's null space: x is a
least-squares solution) and says so (round 45 h4: it ran on, and x grew along the null
space).

``scipy_rtol`` (``Solver.solve(..., stop='scipy')``) replaces that test by SciPy's own, so a
SciPy user gets SciPy's iteration count: stop when ``phibar / (|T| |x|) <= rtol`` (a
backward error, ``|T|`` the Frobenius norm of the Lanczos tridiagonal so far, an estimate of
``|A|``), or ``|A r| / (|A| |r|) <= rtol``, or ``|A| |x| eps >= beta1`` (x is as good as
float64 gets), or the estimate ``cond(A) >= 0.1/eps``, or the Lanczos vectors vanish at the
first step; each of them counts as converged, as SciPy's ``info = 0``. With M, ``phibar`` is
the residual in the ``M^-1`` norm, as SciPy's.
"""

from __future__ import annotations

import math

import numpy as np

from .krylov import SolveError, Stagnation, _finite, _real, _report, _sums

__all__ = ["minres"]


def _symmetric_remedy() -> str:
    return ("MINRES needs a symmetric (Hermitian) matrix: use method='gmres' for a "
            "non-symmetric one")


def minres(op, b, x, M=None, *, tol, maxiter, callback=None, scipy_rtol=None):
    """Preconditioned MINRES; returns ``(x, history, converged)`` as the other Krylov methods
    (``history``: the 2-norms ``|b - A x_k|`` by recurrence, from the initial one on).
    ``scipy_rtol``: stop on SciPy's tests with this rtol instead of ``|r| <= tol`` (module
    text).

    Raises :class:`~.krylov.SolveError` when M is not positive definite (``r.Mr <= 0``) or
    the Lanczos process finds A (or M) not symmetric (a negative ``beta^2``)."""
    dot, norm, _ = _sums(op)
    r1 = b.copy()
    tmp = b * 0.0
    if norm(x) > 0:
        op.matvec(x, tmp)
        r1 -= tmp
    history = [norm(r1)]
    _report(history, callback, 0, x)
    scipy = scipy_rtol is not None
    if history[-1] <= (0.0 if scipy else tol):
        return x, history, True
    y = r1.copy()
    if M is not None:
        M(r1, y)
    beta1 = _real(dot(r1, y))
    _finite(beta1, "r.Mr", 0)
    if beta1 <= 0:
        raise SolveError(f"minres: the preconditioner is not positive definite (r.Mr = "
                         f"{beta1:.3e}); MINRES needs a symmetric positive definite M (AMG "
                         f"or Jacobi built on an indefinite matrix is not one): "
                         f"precond='none', or method='gmres' for an indefinite M")
    beta1 = math.sqrt(beta1)
    # with M, the 2-norm residual r = r1 - sum phi_k A w_k by recurrence (A w like w)
    r = r1.copy() if M is not None else None
    aw = aw1 = aw2 = av = None
    if M is not None:
        aw, aw1, aw2, av = (b * 0.0 for _ in range(4))
    w = b * 0.0
    w1 = b * 0.0
    w2 = b * 0.0
    r2 = r1.copy()
    v = b * 0.0
    oldb, beta = 0.0, beta1
    dbar = epsln = 0.0
    phibar = beta1
    cs, sn = -1.0, 0.0
    eps = float(np.finfo(np.float64).eps)
    # the least-squares stop (round 45 h4), without M: SciPy's test2 at rtol, at most 1e-8
    ls_tol = min(1e-8, tol / history[0])
    tnorm2, gmax, gmin = 0.0, 0.0, math.inf   # SciPy's estimates of |A| and cond(A)
    for it in range(1, int(maxiter) + 1):
        v[...] = y * (1.0 / beta)
        op.matvec(v, y)                        # y = A v
        if av is not None:
            av[...] = y
        if it >= 2:
            y -= (beta / oldb) * r1
        alfa = _real(dot(v, y))
        _finite(alfa, "v.Av", it)
        y -= (alfa / beta) * r2
        r1, r2 = r2, r1                         # r1 <- r2; r2 <- y (r1's old array reused)
        r2[...] = y
        if M is not None:
            M(r2, y)
        else:
            y[...] = r2
        oldb = beta
        beta2 = _real(dot(r2, y))
        _finite(beta2, "the Lanczos beta^2", it)
        if beta2 < 0:
            what = "the preconditioner is" if M is not None else "the matrix is"
            raise SolveError(f"minres: {what} not symmetric positive definite where it must "
                             f"be (beta^2 = {beta2:.3e} < 0 at iteration {it}); "
                             f"{_symmetric_remedy()}, and a symmetric positive definite M")
        beta = math.sqrt(beta2)
        tnorm2 += alfa * alfa + oldb * oldb + beta2
        first_vanished = it == 1 and beta / beta1 <= 10 * eps   # SciPy's istop = -1
        oldeps = epsln
        delta = cs * dbar + sn * alfa
        gbar = sn * dbar - cs * alfa
        epsln = sn * beta
        dbar = -cs * beta
        root = math.hypot(gbar, dbar)             # |A r| / |r|, SciPy's test2 numerator
        gamma = max(math.hypot(gbar, beta), eps if scipy else 1e-300)
        cs, sn = gbar / gamma, beta / gamma
        phi = cs * phibar
        phibar = sn * phibar
        w1, w2, w = w2, w, w1                   # w1 <- w2, w2 <- w; w's new array: old w1
        w[...] = (v - oldeps * w1 - delta * w2) * (1.0 / gamma)
        x += phi * w
        if M is None:
            rnorm = abs(phibar)
        else:
            aw1, aw2, aw = aw2, aw, aw1
            aw[...] = (av - oldeps * aw1 - delta * aw2) * (1.0 / gamma)
            r -= phi * aw
            rnorm = norm(r)
        history.append(rnorm)
        _report(history, callback, it, x)
        _finite(rnorm, "the residual", it)
        if scipy:
            gmax, gmin = max(gmax, gamma), min(gmin, gamma)
            anorm, ynorm = math.sqrt(tnorm2), norm(x)
            test1 = abs(phibar) / (anorm * ynorm) if anorm and ynorm else math.inf
            test2 = root / anorm if anorm else math.inf
            if (first_vanished or test1 <= scipy_rtol or test2 <= scipy_rtol
                    or 1 + test1 <= 1 or 1 + test2 <= 1 or anorm * ynorm * eps >= beta1
                    or gmax / gmin >= 0.1 / eps):
                return x, history, True
        elif rnorm <= tol:
            return x, history, True
        elif M is None and ls_tol > 0 and tnorm2 > 0 and root / math.sqrt(tnorm2) <= ls_tol:
            # round 45 (h4): |A r| / (|A| |r|) ~ 0 with |r| above the tolerance: r lies in
            # A's null space, so no x does better (b is not in A's range). Going on, the
            # Lanczos vectors' lost orthogonality let the recurrence fall below the tolerance
            # while x grew along the null space: a normalized graph Laplacian (400 nodes, b
            # not orthogonal to D^1/2 1) "converged" in 969 iterations with a true |r|/|b| of
            # 1.7e14; SciPy's minres stops here (its test2) with the least-squares x, 3.0e-2
            raise Stagnation(
                f"minres: A is singular and b is not in its range: |A r| / (|A| |r|) = "
                f"{root / math.sqrt(tnorm2):.1e} at iteration {it} while |r| = {rnorm:.3e} "
                f"stays above the tolerance {tol:.3e}; x is a least-squares solution (SciPy's "
                f"minres returns it with info = 0). Give a b in A's range (a graph "
                f"Laplacian's: orthogonal to its null vectors, D^1/2 1 when normed), or "
                f"compatibility='project' where A's null space is the constants",
                x, history)
        if beta == 0.0:   # the Krylov space is invariant: x is the best it holds
            raise SolveError(f"minres: the Krylov space became invariant at iteration {it} "
                             f"with |r| = {rnorm:.3e} above the tolerance: A is singular and "
                             f"b is not in its range (a least-squares x: "
                             f"scipy.sparse.linalg.lsqr)")
    return x, history, False
