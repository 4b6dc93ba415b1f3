"""A SciPy / pyamg / MPI user's keywords (round 39, h7): ``Solver(A, np=2)`` and
``Solver(A, rtol=...)`` were Python's bare "unexpected keyword argument"; a pyamg user's
``ml.solve(b, tol=, accel='cg', residuals=)`` on skiff's hierarchies was an AttributeError.
pyamg and SciPy's ``spsolve`` are the oracles."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve import RugeStuben, SmoothedAggregation, Solver, poisson

pyamg = pytest.importorskip("pyamg")


@pytest.fixture(scope="module")
def lap():
    A = pyamg.gallery.poisson((40, 40), format="csr")
    return A, A @ np.ones(A.shape[0])


@pytest.mark.parametrize("word", ["np", "ranks", "comm"])
def test_solver_ranks_keyword_names_the_way(lap, word):
    A, _ = lap
    with pytest.raises(TypeError, match=rf"Solver\(\) takes no {word}= keyword.*mpirun -n 2"
                                        rf".*parallel\.row_solve\(A, b.*save_npz"
                                        rf".*solve A\.npz b\.npy --np 2.*drop {word}="):
        Solver(A, **{word: 2})
    # a grid problem: the distributed solver under mpirun, or the job
    with pytest.raises(TypeError, match=r"DistributedSolver\(problem\).*--np 4"):
        Solver(poisson((16, 16)), np=4)


def test_solver_solve_keywords_say_where_they_go(lap):
    A, b = lap
    with pytest.raises(TypeError, match=r"Solver\(\) takes no rtol=.*Solver\(A\)\.solve\(b, "
                                        r"rtol=\.\.\.\)"):
        Solver(A, rtol=1e-8)
    with pytest.raises(TypeError, match=r"takes no tol=.*solve\(b, rtol=\.\.\.\)"):
        Solver(A, tol=1e-8)
    with pytest.raises(TypeError, match=r"Solver\(\) takes no accel=.*method='cg'"):
        Solver(A, accel="cg")
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) smooth; it takes "
                                        r"method, precond"):
        Solver(A, smooth=2)
    s = Solver(A)
    with pytest.raises(TypeError, match=r"Solver\.solve\(\) takes rtol=.*not tol=: "
                                        r"rtol=1e-10"):
        s.solve(b, tol=1e-10)
    with pytest.raises(TypeError, match=r"no accel=.*Solver\(A, method='cg', precond='amg'\)"):
        s.solve(b, accel="cg")
    with pytest.raises(TypeError, match=r"no np=.*--np 2"):
        s.solve(b, np=2)
    with pytest.raises(TypeError, match=r"no M=.*Solver\(A, M=\.\.\.\)"):
        s.solve(b, M=sp.identity(A.shape[0]))
    # the one-call form still lists its own keywords (Solver's **unknown is not one of them)
    import skiff

    with pytest.raises(TypeError, match=r"solve\(\) got unexpected keyword argument\(s\) "
                                        r"smooth; .*amg_options") as err:
        skiff.solve(A, b, smooth=2)
    assert "unknown" not in str(err.value)
    assert s.solve(b, rtol=1e-10).converged


@pytest.mark.parametrize("kind", ["sa", "rs"])
@pytest.mark.parametrize("accel", [None, "cg", "bicgstab"])
def test_pyamg_ml_solve(lap, kind, accel):
    """``RugeStuben(A).solve(b, tol=, accel=, residuals=)`` as pyamg's ``ml.solve``: the
    same stopping test, cycles within 1.3x pyamg's (+2), x as spsolve's."""
    A, b = lap
    ours = RugeStuben(A) if kind == "rs" else SmoothedAggregation(A)
    peer = (pyamg.ruge_stuben_solver if kind == "rs" else
            pyamg.smoothed_aggregation_solver)(A)
    res, res_p = [], []
    x, info = ours.solve(b, tol=1e-10, accel=accel, residuals=res, return_info=True)
    peer.solve(b, tol=1e-10, accel=accel, residuals=res_p)
    assert info == 0
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)
    assert np.isclose(res[0], np.linalg.norm(b))               # the start's |b - A x0|
    assert np.isclose(res[-1], np.linalg.norm(b - A @ x))
    if accel is None:   # the stationary test is pyamg's: |r| < tol |b|
        assert res[-1] < 1e-10 * np.linalg.norm(b) <= res[-2]
    assert len(res) - 1 <= 1.3 * (len(res_p) - 1) + 2


def test_pyamg_ml_solve_edges(lap):
    A, b = lap
    ml = SmoothedAggregation(A)
    # x0, maxiter, callback, a column b, a complex b on a real hierarchy
    seen = []
    x, info = ml.solve(b, x0=np.ones(A.shape[0]) * 0.5, maxiter=2, callback=seen.append,
                       return_info=True)
    assert info == 2 and len(seen) == 2
    x = ml.solve(b[:, None], tol=1e-9)
    assert x.shape == (A.shape[0], 1)
    bc = b + 1j * b[::-1]
    for accel in (None, "cg"):
        xc = ml.solve(bc, tol=1e-9, accel=accel)
        assert xc.dtype == np.complex128
        assert np.linalg.norm(bc - A @ xc) <= 1e-8 * np.linalg.norm(bc)
    assert not ml.solve(np.zeros(A.shape[0])).any()
    with pytest.raises(ValueError, match="accel='cgs'.*'cg', 'gmres'"):
        ml.solve(b, accel="cgs")
    with pytest.raises(ValueError, match="V-cycles only"):
        ml.solve(b, cycle="W")
    # a non-symmetric matrix (upwind convection): GMRES takes it, CG is refused
    n = 30
    C = (pyamg.gallery.poisson((n, n), format="csr")
         + 4 * sp.kron(sp.eye(n), sp.diags([-1.0, 1.0], [-1, 0], shape=(n, n)))).tocsr()
    bn = np.random.default_rng(0).standard_normal(C.shape[0])
    for S in (RugeStuben, SmoothedAggregation):
        ml = S(C)
        with pytest.raises(ValueError, match="accel='cg' needs a symmetric"):
            ml.solve(bn, accel="cg")
        for accel in (None, "gmres"):
            x, info = ml.solve(bn, tol=1e-8, accel=accel, return_info=True)
            assert info == 0
            assert np.linalg.norm(bn - C @ x) <= 1e-7 * np.linalg.norm(bn)


def test_pyamg_aspreconditioner_cycle_and_print(lap):
    """pyamg's ``M = ml.aspreconditioner(cycle='V')`` (a TypeError before) and ``print(ml)``."""
    A, b = lap
    for ml in (SmoothedAggregation(A), RugeStuben(A)):
        M = ml.aspreconditioner(cycle="V")
        r = np.random.default_rng(2).standard_normal(A.shape[0])
        assert np.array_equal(M @ r, ml.aspreconditioner() @ r)
        x, info = spla.cg(A, b, rtol=1e-10, M=M)
        assert info == 0 and np.linalg.norm(b - A @ x) <= 1e-9 * np.linalg.norm(b)
        with pytest.raises(ValueError, match="V-cycles only"):
            ml.aspreconditioner(cycle="W")
        assert "levels" in repr(ml) and type(ml).__name__ in repr(ml)


def test_a_notebook_matrix_with_np_names_the_row_split():
    """``%solve A b --np 2`` (and a matrix file) keep their refusal and name row_solve."""
    from skiff.kinds.solve import KIND

    A = sp.identity(20, format="csr") * 2.0
    with pytest.raises(ValueError, match=r"solved on one rank only .*mpirun -n 2.*"
                                         r"parallel\.row_solve\(A, b.*drop --np"):
        KIND.prepare({"problem": "A", "b": "b", "np": 2}, user_ns={"A": A, "b": np.ones(20)},
                     where="mpi")
