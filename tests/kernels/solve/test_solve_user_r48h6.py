"""Round 48 (h6): a user's systems against pyamg and SciPy.

* A BSR matrix (2-D elasticity as pyamg's gallery returns it) without ``near_nullspace``:
  AMG takes pyamg's default candidates for a BSR input, each unknown of a node's constant
  (it took the scalar constant alone: 3-4x pyamg's CG iterations at nu 0.45).
* A NaN / inf ``x0`` is refused in one line naming x0 (it ran and blamed the matrix: "the
  solution became NaN/inf ... the matrix may be singular"), also a ``--x0`` file's; a
  non-finite ``near_nullspace`` is refused (it ran without a word).
* A singular matrix (a Neumann checkerboard of 1e-4 / 1e4) whose b is in its range (mean 0,
  which skiff checks) is no longer said to have b outside it, by MINRES or by CG below
  rounding; the status names a preconditioner or the tolerance.
* pyamg's keywords (``B=``, ``residuals=``, ``strength=``) are named with skiff's spelling.
"""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

pyamg = pytest.importorskip("pyamg")

from pyamg.gallery import linear_elasticity  # noqa: E402

from skiff.kernels.solve import SolveError, Solver, solve  # noqa: E402
from skiff.kernels.solve.entry import load_x0  # noqa: E402


def _pyamg_cg(A, b, **kw):
    """pyamg's SA with CG as its users call it: iterations and x (its residuals are
    |b - A x| of each iterate, initial first; tol relative to |b| as rtol here)."""
    ml = pyamg.smoothed_aggregation_solver(A, **kw)
    res = []
    x = ml.solve(b, tol=1e-8, accel="cg", residuals=res, maxiter=400)
    return len(res) - 1, x


def test_bsr_elasticity_without_modes_takes_pyamgs_candidates():
    # 24^2 nodes, nu 0.45 (nearly incompressible: the rotations and the constant alone are
    # far from the translations of each displacement): pyamg 16 CG iterations, skiff 19;
    # with the scalar constant alone (before) about 3x pyamg's. Bound: 1.5x pyamg's + 2,
    # a margin for another BLAS's rounding of the same hierarchy (a count, not a time)
    A, _ = linear_elasticity((24, 24), nu=0.45, format="bsr")
    b = np.random.default_rng(3).standard_normal(A.shape[0])
    peer, _ = _pyamg_cg(A, b)
    sol = solve(A, b, method="cg", precond="amg", rtol=1e-8)
    assert sol.converged
    assert sol.iterations <= 1.5 * peer + 2, (sol.iterations, peer)
    xs = spla.spsolve(A.tocsc(), b)
    # rtol 1e-8 of b; A's condition number here ~1e4: x within 1e-3 relative of the LU's
    assert np.linalg.norm(sol.x - xs) <= 1e-3 * np.linalg.norm(xs)
    # the same matrix as CSR with no node information stays as it was (the scalar AMG);
    # the BSR path's candidates are pyamg's: with B given explicitly the same count
    T = np.kron(np.ones((A.shape[0] // 2, 1)), np.eye(2))
    given = solve(A, b, method="cg", precond="amg", rtol=1e-8, near_nullspace=T)
    assert given.iterations == sol.iterations


def test_nan_x0_is_refused_in_one_line(tmp_path, monkeypatch):
    n = 64
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    A = sp.csr_matrix(sp.kronsum(T, T))
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    bad = np.zeros(A.shape[0])
    bad[5] = np.nan
    for call in (lambda: solve(A, b, x0=bad), lambda: solve(A, b, x0=bad, method="gmres"),
                 lambda: Solver(A, method="cg", precond="jacobi").solve(b, x0=bad)):
        with pytest.raises(ValueError, match=r"^x0 contains NaN or inf \(first at index 5"):
            call()
    bad[5] = np.inf
    with pytest.raises(ValueError, match="x0 contains NaN or inf"):
        solve(A, b, x0=bad, method="bicgstab", precond="jacobi")
    # several right-hand sides: x0 (n, k), the (row, column) named
    X0 = np.zeros((A.shape[0], 3))
    X0[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"x0 contains NaN or inf \(first at index \(2, 1\)"):
        solve(A, np.ones((A.shape[0], 3)), x0=X0, method="cg", precond="jacobi")
    # a finite x0 solves to SciPy's x with the same x0 (the same method and tolerance,
    # |r| / |b|): A's condition number ~1.7e3, so x within 1e-6 relative at rtol 1e-10
    x0 = np.full(A.shape[0], 0.5)
    ref, info = spla.cg(A, b, x0=x0, rtol=1e-10, maxiter=5000)
    assert info == 0
    sol = solve(A, b, x0=x0, rtol=1e-10, method="cg", precond="none")
    assert np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)
    # the CLI's --x0 file (entry.load_x0): one line naming the file
    path = tmp_path / "x0.npy"
    np.save(path, np.r_[np.ones(10), np.nan])
    with pytest.raises(ValueError, match=r"x0 '.*x0\.npy' has 1 entries not finite; the "
                                         r"first is x0\[10\] = nan"):
        load_x0(path)
    np.save(path, np.ones(11))
    assert load_x0(path).shape == (11,)


def test_non_finite_near_nullspace_is_refused():
    A, B = linear_elasticity((6, 6), format="bsr")
    B = np.array(B, dtype=float)
    B[4, 2] = np.nan
    b = np.ones(A.shape[0])
    with pytest.raises(ValueError, match=r"near_nullspace contains NaN or inf \(first at "
                                         r"row 4\)"):
        solve(A, b, near_nullspace=B)


def _checkerboard_neumann(n, block):
    """Finite volumes in 3-D with no Dirichlet side (rows sum to 0: the constant is A's
    null space), the coefficient 1e-4 and 1e4 on a checkerboard of ``block``^3 cells."""
    k = np.where((np.indices((n, n, n)) // block).sum(0) % 2 == 0, 1e-4, 1e4)
    idx = np.arange(n ** 3).reshape(n, n, n)
    rows, cols, vals = [], [], []
    for ax in range(3):
        lo = [slice(None)] * 3
        hi = [slice(None)] * 3
        lo[ax], hi[ax] = slice(0, n - 1), slice(1, n)
        k1, k2 = k[tuple(lo)], k[tuple(hi)]
        t = (2 * k1 * k2 / (k1 + k2)).ravel()   # harmonic mean across the face
        i, j = idx[tuple(lo)].ravel(), idx[tuple(hi)].ravel()
        rows += [i, j, i, j]
        cols += [j, i, i, j]
        vals += [-t, -t, t, t]
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(n ** 3, n ** 3))


@pytest.mark.parametrize("n, block", [(8, 2), (12, 3)])
def test_singular_minres_with_b_in_range_says_so(n, block):
    # b of mean 0 is in the range of this symmetric A (its null space the constant, one
    # piece); unpreconditioned MINRES cannot resolve the near-null vectors of 1e8 contrast.
    # SciPy's minres returns info 0 with a true |b - Ax|/|b| over 1e-2; skiff says it did
    # not converge, and (round 48) no longer that b is outside A's range
    A = _checkerboard_neumann(n, block)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    b -= b.mean()
    x_sp, info = spla.minres(A, b, rtol=1e-8, maxiter=5000)
    assert info == 0 and np.linalg.norm(b - A @ x_sp) > 1e-2 * np.linalg.norm(b)
    sol = solve(A, b, method="minres", rtol=1e-8)
    assert not sol.converged
    assert "not in its range" not in sol.status and "outside its range" not in sol.status
    assert "b is orthogonal to A's null space as far as it is known (the constant" in (
        sol.status)
    assert "precond='amg'" in sol.status
    # what it names solves it: CG + AMG to rtol 1e-8, x = the LU's of A grounded at one
    # unknown (x[0] = 0, then SPD), up to the constant: within 1e-7 here (cond ~1e10),
    # bound 1e-5. (SciPy cg with pyamg's V-cycle as M misses here: info 0 with |r|/|b|
    # 8e-6 on 8^3, not converged on 12^3.)
    good = solve(A, b, method="cg", precond="amg", rtol=1e-8)
    assert good.converged
    assert np.linalg.norm(b - A @ good.x) <= 1e-7 * np.linalg.norm(b)
    ref = np.r_[0.0, spla.spsolve(sp.csc_matrix(A[1:, 1:]), b[1:])]
    d = (good.x - good.x.mean()) - (ref - ref.mean())
    assert np.linalg.norm(d) <= 1e-5 * np.linalg.norm(ref - ref.mean())


def test_singular_cg_below_rounding_names_the_tolerance():
    # the 12^3 checkerboard (cond ~1e10), b of mean 0: the grounded LU solves it to
    # |r|/|b| ~4e-8 (b is in the range), CG + AMG reaches ~1e-8 and, asked for 1e-10, meets
    # p.Ap of rounding's size; it said "b has a part outside its range", now the tolerance
    A = _checkerboard_neumann(12, 3)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    b -= b.mean()
    ref = np.r_[0.0, spla.spsolve(sp.csc_matrix(A[1:, 1:]), b[1:])]
    assert np.linalg.norm(b - A @ ref) <= 1e-6 * np.linalg.norm(b)
    with pytest.raises(SolveError) as info:
        solve(A, b, method="cg", precond="amg", rtol=1e-10)
    text = str(info.value)
    assert "outside its range" not in text, text
    assert "the tolerance is likely below what rounding leaves on this A: raise rtol" in text


def test_pyamg_keywords_are_named():
    # a pyamg user's B= (the rigid-body modes) and residuals= said only "unexpected keyword";
    # each now names skiff's spelling, and that spelling gives pyamg's answer
    A, B = linear_elasticity((16, 16), nu=0.3, format="bsr")
    b = np.random.default_rng(5).standard_normal(A.shape[0])
    with pytest.raises(TypeError, match=r"^solve\(\) takes no B= keyword \(pyamg's\): here "
                                        r"it is near_nullspace=B"):
        solve(A, b, B=B)
    with pytest.raises(TypeError, match=r"^Solver\(\) takes no B= keyword .*near_nullspace"):
        Solver(A, B=B)
    with pytest.raises(TypeError, match=r"^Solver.solve\(\) takes no residuals= keyword "
                                        r"\(pyamg's\): here it is the returned Solution's "
                                        r"\.residuals"):
        Solver(A).solve(b, residuals=[])
    with pytest.raises(TypeError, match=r"strength= keyword \(pyamg's\): here it is "
                                        r"amg_options=\{'strength'"):
        solve(A, b, strength="evolution")
    peer, _ = _pyamg_cg(A, b, B=B)
    sol = solve(A, b, method="cg", precond="amg", near_nullspace=B, rtol=1e-8)
    assert sol.converged and sol.iterations <= 1.5 * peer + 2, (sol.iterations, peer)
    # .residuals is pyamg's list's kind: |r| of each iterate, |b| first
    assert sol.residuals[0] == pytest.approx(np.linalg.norm(b), rel=1e-12)
