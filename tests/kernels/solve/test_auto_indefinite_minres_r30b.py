"""Round 30b: 'auto' on a real symmetric indefinite matrix with a positive diagonal (the
Helmholtz-like ``L - k^2 I``) ran CG+AMG until CG found it indefinite, then GMRES+AMG (AMG
built on an indefinite matrix): 399 iterations in 9.8 s at 128^2, k = 50, and a stall at
|r|/|b| = 0.12 at 256^2, k = 100, where MINRES without a preconditioner converges. A Lanczos
check at setup now picks MINRES and says why. Oracles: SciPy's spsolve (x), SciPy's minres
(the iterations of the same method), NumPy's eigvalsh (definiteness)."""

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve import Solver, solve


def _laplacian(n):
    h = 1.0 / (n + 1)
    d = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1]) / h**2
    return (sp.kron(sp.identity(n), d) + sp.kron(d, sp.identity(n))).tocsr()


def test_a_shifted_laplacian_takes_minres_and_says_why():
    n, k = 40, 40.0
    A = (_laplacian(n) - k**2 * sp.identity(n * n)).tocsr()
    eigs = np.linalg.eigvalsh(A.toarray())
    assert eigs[0] < 0 < eigs[-1] and A.diagonal().min() > 0     # indefinite, CG-looking
    b = np.random.default_rng(0).standard_normal(n * n)
    sol = solve(A, b, rtol=1e-10)
    assert sol.converged and sol.method == "minres" and sol.precond == "none"
    assert "indefinite" in sol.info["solver"] and "Lanczos" in sol.info["solver"]
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)
    count = [0]
    spla.minres(A, b, rtol=1e-10, maxiter=20 * n * n,
                callback=lambda xk: count.__setitem__(0, count[0] + 1))
    assert sol.iterations <= 1.5 * count[0]                      # SciPy's MINRES's pace


def test_positive_definite_matrices_keep_cg_and_amg():
    n = 30
    L = _laplacian(n)
    lam1 = np.linalg.eigvalsh(L.toarray())[0]
    for A in (L, (L - 0.5 * lam1 * sp.identity(n * n)).tocsr()):  # not diagonally dominant
        assert np.linalg.eigvalsh(A.toarray())[0] > 0
        s = Solver(A)
        assert (s.method, s.precond_name) == ("cg", "amg") and s.auto_note is None
        b = np.ones(n * n)
        x = s.solve(b, rtol=1e-10).x
        ref = spla.spsolve(A.tocsc(), b)
        assert np.linalg.norm(x - ref) <= 1e-8 * np.linalg.norm(ref)


def test_explicit_choices_are_kept():
    n, k = 24, 40.0
    A = (_laplacian(n) - k**2 * sp.identity(n * n)).tocsr()
    s = Solver(A, method="gmres")                               # asked for: no override
    assert (s.method, s.precond_name) == ("gmres", "amg")
    s = Solver(A, precond="jacobi")
    assert s.precond_name == "jacobi"


def test_a_finite_element_helmholtz_matrix_takes_minres():
    skfem = __import__("pytest").importorskip("skfem")
    from skfem.models.poisson import laplace, mass

    ib = skfem.Basis(skfem.MeshTri.init_circle(4), skfem.ElementTriP1())
    K, M = laplace.assemble(ib), mass.assemble(ib)
    inner = np.setdiff1d(np.arange(K.shape[0]), ib.get_dofs().flatten())
    A = (K - 20.0**2 * M)[inner][:, inner].tocsr()            # Dirichlet disc, k = 20
    assert np.linalg.eigvalsh(A.toarray())[0] < 0
    b = (M @ np.ones(K.shape[0]))[inner]
    sol = solve(A, b, rtol=1e-10)
    assert sol.converged and sol.method == "minres" and "indefinite" in sol.info["solver"]
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)
