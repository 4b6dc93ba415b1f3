"""Round 30: ``skiff.solve(A, b)`` called in a loop with the same matrix (implicit time
steps) set AMG up on every call; the last matrix's setup is now kept and reused while its
entries (hashed) and the options are the same. Oracle: SciPy's spsolve at every step."""

import threading

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff.kernels.solve.solver as solver_module
from skiff.kernels.solve import solve


def _heat_matrix(n=40, dt=1e-2):
    d = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1]) * n * n
    lap = sp.kron(sp.identity(n), d) + sp.kron(d, sp.identity(n))
    return (sp.identity(n * n) + dt * lap).tocsr()


@pytest.fixture
def amg_setups(monkeypatch):
    count = [0]
    real = solver_module.SmoothedAggregation

    def counting(*args, **kwargs):
        # the background numba load warms up on a small Solver of its own (another thread)
        if threading.current_thread() is threading.main_thread():
            count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(solver_module, "SmoothedAggregation", counting)
    solver_module._LAST_SETUP.clear()
    yield count
    solver_module._LAST_SETUP.clear()


def _close(A, b, x):
    ref = spla.spsolve(A.tocsc(), b)
    return np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)


def test_a_time_loop_sets_up_once(amg_setups):
    A = _heat_matrix()
    u = np.exp(-np.linspace(-3, 3, A.shape[0]) ** 2)
    for step in range(4):
        b = u.copy()
        sol = solve(A, b, x0=u, rtol=1e-10)
        assert sol.converged and _close(A, b, sol.x)
        assert ("setup" in sol.info) == (step > 0)
        u = sol.x
    assert amg_setups[0] == 1


def test_entries_changed_in_place_are_set_up_again(amg_setups):
    A = _heat_matrix()
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    assert _close(A, b, solve(A, b, rtol=1e-10).x)
    A.data *= 3.0                      # same object, same pattern, new entries
    sol = solve(A, b, rtol=1e-10)
    assert "setup" not in sol.info and amg_setups[0] == 2
    assert _close(A, b, sol.x)


def test_other_options_or_matrices_are_not_reused(amg_setups):
    A = _heat_matrix()
    b = np.ones(A.shape[0])
    solve(A, b)
    sol = solve(A, b, precond="jacobi")
    assert "setup" not in sol.info and sol.precond == "jacobi" and _close(A, b, sol.x)
    B = A.copy()                        # equal entries, another object: set up anew
    sol = solve(B, b)
    assert "setup" not in sol.info and _close(B, b, sol.x)
    sol = solve(B.tocoo(), b)           # another format: no mix-up
    assert "setup" not in sol.info and _close(B, b, sol.x)


def test_an_indefinite_matrix_keeps_its_switch(amg_setups):
    n = 24
    A = (_heat_matrix(n, dt=1.0) - 40.0 * sp.identity(n * n)).tocsr()   # shifted: indefinite
    assert np.linalg.eigvalsh(A.toarray()).min() < 0                      # SciPy/NumPy: it is
    rng = np.random.default_rng(1)
    for step in range(2):
        b = rng.standard_normal(A.shape[0])
        sol = solve(A, b, rtol=1e-10)
        assert sol.converged and _close(A, b, sol.x)
        assert ("setup" in sol.info) == (step > 0)
