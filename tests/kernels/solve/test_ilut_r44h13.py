"""Round 44 (h13): ``precond='ilut'``, an incomplete LU with threshold and fill.

skiff's ILU was ILU(0) (no fill): GMRES took 16 iterations on a convection-dominated upwind
matrix (100^2) where SciPy's ``spilu`` (threshold, fill) takes 3. Oracles: the numpy twin
of the kernel (``ilut_reference.dense_ilut``, row operations on a dense copy), the exact LU
(``drop_tol=0`` with room for all fill: ``L U = A``), SciPy's ``spilu`` + ``gmres`` and
``spsolve`` on the same matrices."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve import Solver, poisson, solve
from skiff.kernels.solve.ilut import ILUT

from .ilut_reference import dense_ilut


def _convection(m, eps=1e-3):
    h = 1.0 / (m + 1)
    T = sp.diags([-eps / h**2 - 1 / h, 2 * eps / h**2 + 1 / h, -eps / h**2], [-1, 0, 1],
                 shape=(m, m))
    eye = sp.identity(m)
    return (sp.kron(eye, T) + sp.kron(T, eye)).tocsr()


def _anisotropic(m, eps=1e-3):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    eye = sp.identity(m)
    return (sp.kron(eye, T) + eps * sp.kron(T, eye)).tocsr()


def _random(n=50, seed=3):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.1, random_state=rng, data_rvs=lambda k: rng.normal(size=k))
    return (A + sp.diags(rng.uniform(1.0, 2.0, n))).tocsr()


@pytest.mark.parametrize("case,drop_tol,fill_factor", [
    ("random", 1e-2, 1.5),       # the fill limit and the drop test both bite
    ("random", 1e-4, 10.0),
    ("convection", 1e-4, 10.0),
    ("anisotropic", 1e-3, 2.0),
])
def test_the_kernel_is_its_numpy_twin(case, drop_tol, fill_factor):
    A = {"random": _random, "convection": lambda: _convection(9),
         "anisotropic": lambda: _anisotropic(8)}[case]()
    L_ref, U_ref = dense_ilut(A, drop_tol, fill_factor)
    for python in (False, True):          # the numba kernel and its Python source
        L, U = ILUT(A, drop_tol, fill_factor, python=python).factors()
        scale = np.abs(U_ref).max()
        assert np.abs(L.toarray() - L_ref).max() <= 1e-12
        assert np.abs(U.toarray() - U_ref).max() <= 1e-12 * scale
        assert (L.toarray() != 0).sum() == (L_ref != 0).sum()   # the same pattern kept
    f = ILUT(A, drop_tol, fill_factor)
    assert f.nnz <= fill_factor * A.nnz + A.shape[0]


def test_no_dropping_gives_the_exact_lu():
    A = _random(40)
    f = ILUT(A, drop_tol=0.0, fill_factor=1000.0)
    L, U = f.factors()
    assert np.abs((L @ U - A).toarray()).max() <= 1e-12 * abs(A).max()
    b = np.arange(40.0)
    assert np.allclose(f.solve(b), spla.spsolve(A.tocsc(), b), rtol=1e-10, atol=1e-12)


def _spilu_iterations(A, b):
    M = spla.spilu(A.tocsc())
    count = [0]
    spla.gmres(A, b, M=spla.LinearOperator(A.shape, M.solve), rtol=1e-8, restart=30,
               callback=lambda r: count.__setitem__(0, count[0] + 1),
               callback_type="pr_norm")
    return count[0]


@pytest.mark.parametrize("make,most", [(_convection, 4), (_anisotropic, 7)])
def test_iterations_against_spilu(make, most):
    A = make(60)
    b = np.ones(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)
    ilu0 = solve(A, b, method="gmres", precond="ilu")
    ilut = solve(A, b, method="gmres", precond="ilut")
    # measured (60^2): convection ILU(0) 11, ILUT 4, spilu 3; anisotropic 12, 6, 4
    assert ilut.converged and ilut.iterations <= most
    assert ilut.iterations <= _spilu_iterations(A, b) + 3
    assert ilut.iterations < ilu0.iterations / 1.5
    assert np.linalg.norm(ilut.x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_options_auto_and_refusals():
    A = _convection(20)
    b = np.ones(A.shape[0])
    loose = Solver(A, precond=("ilut", {"drop_tol": 1e-2, "fill_factor": 2}))
    tight = Solver(A, precond="ilut")
    assert loose.M.ilu.nnz < tight.M.ilu.nnz
    assert "ILUT (drop_tol 0.01, fill_factor 2" in loose.M.describe()
    assert loose.solve(b).converged
    # a symmetric matrix: ILUT is not symmetric, so auto runs GMRES (CG would break)
    P = _anisotropic(20)
    s = Solver(P, precond="ilut")
    assert s.method == "gmres" and "ILUT is not symmetric" in s.auto_note
    sol = Solver(P, method="cg", precond="ilut").solve(np.ones(400))
    assert sol.converged
    with pytest.raises(ValueError, match="drop_tol must be in"):
        Solver(A, precond=("ilut", {"drop_tol": -1}))
    with pytest.raises(ValueError, match="fill_factor must be >= 1"):
        Solver(A, precond=("ilut", {"fill_factor": 0.5}))
    with pytest.raises(ValueError, match=r"unknown option\(s\) 'lfil'"):
        Solver(A, precond=("ilut", {"lfil": 5}))
    with pytest.raises(ValueError, match="precond='ilut' factors a matrix's entries"):
        Solver(poisson((8, 8)), precond="ilut")
    Z = sp.lil_matrix(A)
    Z[3, :] = 0
    with pytest.raises(ValueError, match="row 3 of the matrix is all zeros"):
        Solver(sp.csr_matrix(Z), method="gmres", precond="ilut")


def test_reverse_cuthill_mckee_before_the_factorisation():
    # ILUT of P A P^T: the anisotropic matrix, 300^2 27 -> 17 iterations (60^2: 6 -> 5)
    A = _anisotropic(40)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    plain = Solver(A, method="gmres", precond=("ilut", {"reorder": None}))
    rcm = Solver(A, method="gmres", precond=("ilut", {"reorder": "rcm"}))
    assert "RCM order" in Solver(A, method="gmres", precond="ilut").M.describe()  # r44h17
    assert "RCM order" in rcm.M.describe() and rcm.M.ilu.nnz < plain.M.ilu.nnz
    sol = rcm.solve(b, rtol=1e-10)
    ref = spla.spsolve(A.tocsc(), b)
    assert sol.converged and sol.iterations <= plain.solve(b, rtol=1e-10).iterations
    assert np.linalg.norm(sol.x - ref) <= 1e-8 * np.linalg.norm(ref)
    with pytest.raises(ValueError, match="reorder takes 'rcm'"):
        Solver(A, precond=("ilut", {"reorder": "colamd"}))
