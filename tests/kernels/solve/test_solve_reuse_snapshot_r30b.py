"""Round 30b: ``skiff.solve``'s kept setup compares the matrix's arrays bit for bit with a
copy taken at setup (it hashed them: 0.3 s a call at 5e6 entries). Any change in place, of
one entry by one ulp, a swap of two entries (equal sums) or a new column index, must set up
again; equal arrays (even new array objects) reuse. Oracle: SciPy's spsolve of the matrix as
it is at each call."""

import threading

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff.kernels.solve.solver as solver_module
from skiff.kernels.solve import solve


def _matrix(n=30):
    d = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    lap = sp.kron(sp.identity(n), d) + sp.kron(d, sp.identity(n))
    return (sp.identity(n * n) + 50.0 * lap).tocsr()


@pytest.fixture
def setups(monkeypatch):
    count = [0]
    real = solver_module.Solver

    def counting(*args, **kwargs):
        if threading.current_thread() is threading.main_thread():
            count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(solver_module, "Solver", counting)
    solver_module._LAST_SETUP.clear()
    yield count
    solver_module._LAST_SETUP.clear()


def _check(A, b):
    sol = solve(A, b, rtol=1e-11)
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-8 * np.linalg.norm(ref)
    return "setup" in sol.info


def test_every_kind_of_in_place_change_sets_up_again(setups):
    A = _matrix()
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    assert not _check(A, b)
    assert _check(A, b) and setups[0] == 1                 # unchanged: reused
    k = A.nnz // 2
    A.data[k] = np.nextafter(A.data[k], np.inf)           # one entry, one ulp
    assert not _check(A, b) and setups[0] == 2
    row = A.shape[0] // 3                                  # two entries of a row swapped
    lo, hi = A.indptr[row], A.indptr[row + 1]
    A.data[lo:hi] = A.data[lo:hi][::-1].copy()
    assert not _check(A, b) and setups[0] == 3
    A.data[A.indptr[row]] *= 1.0 + 1e-3                    # and a visible change
    assert not _check(A, b) and setups[0] == 4


def test_a_new_column_index_or_a_new_array_object(setups):
    A = _matrix()
    b = np.ones(A.shape[0])
    assert not _check(A, b)
    A.data = A.data.copy()                   # another array, the same bits: reused
    assert _check(A, b) and setups[0] == 1
    row = 5                                  # an off-diagonal entry moved to another column
    lo, hi = A.indptr[row], A.indptr[row + 1]
    cols = A.indices[lo:hi]
    free = np.setdiff1d(np.arange(A.shape[1]), cols)[-1]
    A.indices[hi - 1] = free
    A.sort_indices()
    A.has_sorted_indices = True
    assert not _check(A, b) and setups[0] == 2


def test_nan_free_float32_and_complex_are_compared_bitwise(setups):
    A = _matrix(16).astype(np.complex128)
    b = np.ones(A.shape[0], dtype=complex)
    assert not _check(A, b)
    A.data[3] += 1e-9j                       # the imaginary half of one entry
    assert not _check(A, b) and setups[0] == 2
    bits = solver_module._bits(np.array([0.0, -0.0]))
    assert bits[0] != bits[1]                # -0.0 is another matrix entry's bits
