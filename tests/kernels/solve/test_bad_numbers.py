"""The library never returns a silent answer to bad numbers or a bad matrix (issue 15.9,
15.10): one clear error naming the value, and NaN never returned as a solution."""

import numpy as np
import pytest
import scipy.sparse as sp

from skiff.kernels.solve import SolveError, solve
from skiff.kernels.solve.estimate import needed_bytes

A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(40, 40)).tocsr()


@pytest.mark.parametrize("kw, needle", [
    ({"maxiter": -1}, "maxiter must be an integer >= 0"),
    ({"maxiter": 2.5}, "maxiter must be an integer >= 0"),
    ({"rtol": 2.0}, "must be below 1"),
    ({"rtol": float("inf")}, "rtol must be a finite number"),
    ({"rtol": float("nan")}, "rtol must be a finite number"),
    ({"atol": float("inf")}, "atol must be a finite number"),
])
def test_bad_tolerances_and_limits(kw, needle):
    with pytest.raises(ValueError, match=needle):
        solve(A, np.ones(40), **kw)


def test_a_string_is_not_a_matrix():
    with pytest.raises(ValueError) as err:
        solve("A", np.ones(4))
    assert "got str 'A'" in str(err.value) and "shape None" not in str(err.value)


def test_direct_on_a_singular_matrix_names_it():
    S = sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))
    with pytest.raises(SolveError, match="singular"):
        solve(S, np.ones(3), method="direct")
    # a regular matrix still solves, and agrees with numpy
    sol = solve(A, np.ones(40), method="direct")
    assert np.allclose(sol.field, np.linalg.solve(A.toarray(), np.ones(40)))


def _indefinite(negative_diagonal: bool):
    if negative_diagonal:   # symmetric, half of the diagonal negative
        return (sp.diags(np.r_[np.ones(20), -np.ones(20)])
                + 0.1 * sp.diags(np.ones(39), 1) + 0.1 * sp.diags(np.ones(39), -1)).tocsr()
    # symmetric with a positive diagonal, and two negative eigenvalues
    Q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((40, 40)))
    M = Q @ np.diag(np.r_[np.linspace(1, 10, 38), -0.5, -2.0]) @ Q.T
    assert np.diag(M).min() > 0
    return sp.csr_matrix((M + M.T) / 2)


@pytest.mark.parametrize("negative_diagonal", [True, False])
@pytest.mark.parametrize("precond", ["jacobi", "amg", "none"])
def test_an_indefinite_matrix_is_blamed_not_the_preconditioner(negative_diagonal, precond):
    M = _indefinite(negative_diagonal)
    assert np.linalg.eigvalsh(M.toarray()).min() < 0        # the reference: it is indefinite
    try:
        sol = solve(M, np.ones(40), method="cg", precond=precond)
    except SolveError as exc:
        assert "the matrix is not positive definite" in str(exc)
        assert "preconditioner" not in str(exc)
    else:   # CG may still converge on an indefinite matrix; then the answer must be right
        assert sol.converged and np.allclose(M @ sol.field, 1.0, atol=1e-6)


def test_jacobi_refuses_a_zero_diagonal():
    Z = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 2.0]]))
    with pytest.raises(SolveError, match="diagonal entry 0 is 0"):
        solve(Z, np.ones(2), precond="jacobi")


def test_the_memory_estimate_bounds_the_vectors():
    # CG with multigrid keeps at least the five CG vectors and the right-hand side
    assert needed_bytes((100, 100), method="cg", precond="mg") >= 6 * 8 * 100 * 100
    assert needed_bytes((100, 100), method="gmres", precond="none", restart=30) > \
        needed_bytes((100, 100), method="cg", precond="none")


def test_a_direct_call_on_a_grid_too_big_for_the_host_is_refused_before_allocating():
    """``skiff.solve(poisson((10**6, 10**6)))`` called directly, not through ``%solve``: one
    clear error from the problem's constructor, nothing allocated (7 TiB would be)."""
    import tracemalloc

    from skiff.kernels.solve.problems import poisson

    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"grid 1000000x1000000 needs at least .* host"):
            poisson((1_000_000, 1_000_000))
        assert tracemalloc.get_traced_memory()[1] < 2**20
    finally:
        tracemalloc.stop()


def test_a_solver_refuses_a_grid_that_does_not_fit_its_device(monkeypatch):
    """The Solver checks the whole solve's estimate against the device's memory (here a
    device that says it has 100 kB free) before its hierarchy or vectors exist."""
    from dataclasses import replace

    from skiff.kernels.solve import solver as solver_module
    from skiff.kernels.solve.problems import poisson

    small = poisson((64, 64))
    real = solver_module.resolve_device

    monkeypatch.setattr(solver_module, "resolve_device",
                        lambda d: replace(real(d), free_memory=100_000))
    with pytest.raises(ValueError, match=r"grid 64x64 needs at least .* 97.7 KiB available"):
        solve(small, method="cg", precond="mg")
    monkeypatch.setattr(solver_module, "resolve_device",
                        lambda d: replace(real(d), free_memory=2**30))
    assert solve(small, method="cg", precond="mg").converged
