"""COCG: conjugate orthogonal conjugate gradients, for complex symmetric systems (A = Aᵀ, not
Hermitian), such as Helmholtz with an absorbing boundary or a complex shift.

CG's recurrences with the *unconjugated* bilinear form ``uᵀv`` in place of ``uᴴv`` (van der
Vorst and Melissen, 1990): one product with A and one preconditioner application per
iteration, and three vectors besides x, r, z, where GMRES keeps ``restart`` of them and
BiCGStab needs two of each per iteration. The preconditioner must be complex symmetric too
(``Mᵀ = M``): Jacobi and skiff's AMG V-cycle on a complex symmetric matrix (Gauss–Seidel
forward then backward before and after the coarse correction, R = Pᵀ) are. The residual
norm is not monotone (COCG minimises nothing); the loop stops on ``|r| <= tol`` as every
method here. A zero ``rᵀz`` or ``pᵀAp`` with a non-zero residual is a breakdown (the form is
not a norm: a non-zero vector can have ``vᵀv = 0``) and raises :class:`.krylov.SolveError`;
``method='auto'`` then goes on with GMRES.

Measured (Helmholtz, P1, ``K - k²M - ik M_∂``, k = 20, 16 641 unknowns, rtol 1e-8, skiff's AMG
as M): COCG 66 iterations (66 V-cycles) against BiCGStab 40 (80 V-cycles), GMRES(30) 82 and
GMRES(100) 68 (SciPy's, same M); without a preconditioner COCG 875, SciPy's gmres(30) 2122,
bicgstab 4729.
"""

from __future__ import annotations

import numpy as np

from .krylov import SolveError, _finite, _report, _Watch

__all__ = ["cocg", "transpose_asymmetry"]

SYMMETRY_RTOL = 1e-8


def _tdot(a, b) -> complex:
    """The bilinear form ``aᵀ b`` (no conjugate)."""
    return complex(np.dot(a.ravel(), b.ravel()))


def cocg(op, b, x, M=None, *, tol, maxiter, callback=None, breakdown=1e-30):
    """Preconditioned COCG for complex symmetric ``A`` (and ``M``); returns ``(x, history,
    converged)`` with ``history`` the residual 2-norms, as the other Krylov methods."""
    r = b.astype(np.result_type(b.dtype, np.complex128), copy=True)
    x = x.astype(r.dtype, copy=False)
    q = np.zeros_like(r)
    if np.any(x):
        op.matvec(x, q)
        r -= q
    history = [float(np.linalg.norm(r.ravel()))]
    _report(history, callback, 0, x)
    if history[-1] <= tol:
        return x, history, True
    z = np.empty_like(r) if M is not None else r
    if M is not None:
        M(r, z)
    rz = _tdot(r, z)
    p = z.copy()
    watch = _Watch("cocg", history[0], x)
    for it in range(1, int(maxiter) + 1):
        op.matvec(p, q)
        pq = _tdot(p, q)
        _finite(abs(pq), "p^T A p", it)
        if abs(pq) <= breakdown * float(np.linalg.norm(p.ravel()) * np.linalg.norm(q.ravel())):
            raise SolveError(f"cocg: breakdown, p^T A p = {pq:.3e} at iteration {it} (the "
                             f"bilinear form is no norm); use method='gmres' or 'bicgstab'")
        alpha = rz / pq
        x += alpha * p
        r -= alpha * q
        history.append(float(np.linalg.norm(r.ravel())))
        _report(history, callback, it, x)
        _finite(history[-1], "the residual", it)
        if history[-1] <= tol:
            return x, history, True
        watch.see(it, history[-1], x, history)
        if M is not None:
            M(r, z)
        rz_new = _tdot(r, z)
        if abs(rz_new) <= breakdown * history[-1] * max(float(np.linalg.norm(z.ravel())),
                                                        1e-300):
            raise SolveError(f"cocg: breakdown, r^T M r = {rz_new:.3e} at iteration {it} "
                             f"with |r| = {history[-1]:.3e}; use method='gmres' or "
                             f"'bicgstab'")
        p *= rz_new / rz
        p += z
        rz = rz_new
    return x, history, False


def transpose_asymmetry(op, rtol: float = SYMMETRY_RTOL) -> str | None:
    """Why ``A`` differs from its transpose ``Aᵀ`` (no conjugate), or None when ``A = Aᵀ`` to
    ``rtol``: COCG's condition. Two products with random real vectors first (``uᵀAv``
    against ``vᵀAu``), then, for a matrix whose products differ, the largest entry of
    ``A - Aᵀ`` is named (O(nnz))."""
    rng = np.random.default_rng(1)
    u, v = rng.standard_normal(op.n), rng.standard_normal(op.n)
    kind = complex if getattr(op, "complex", False) else float
    au, av = np.empty(op.n, kind), np.empty(op.n, kind)
    op.matvec(u.astype(kind), au)
    op.matvec(v.astype(kind), av)
    uav, vau = complex(np.dot(u, av)), complex(np.dot(v, au))
    scale = max(float(np.linalg.norm(u) * np.linalg.norm(av)),
                float(np.linalg.norm(v) * np.linalg.norm(au)))
    if abs(uav - vau) <= rtol * scale:
        return None
    if op.callable:
        return f"u^T A v = {uav:.6g} but v^T A u = {vau:.6g} for random vectors u, v"
    A = op.A
    D = (A - A.T).tocoo()
    gap = np.abs(D.data)
    k = int(np.argmax(gap))
    i, j = int(D.row[k]), int(D.col[k])
    return (f"A[{i}, {j}] - A[{j}, {i}] = {complex(D.data[k]):.3g}, with entries up to "
            f"{float(np.abs(A.data).max()):.3g}")
