"""``Solver(A, method='direct')`` keeps its sparse LU across solves, as a SciPy user keeps
``splu(A)`` in a time-stepping loop (round 38, h7; it called ``spsolve`` each solve: a full
factorisation per step). SciPy's ``spsolve`` is the oracle for every x."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve import Solver


def _laplacian(m=24):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    eye = sp.identity(m)
    return (sp.kron(eye, T) + sp.kron(T, eye)).tocsr()


@pytest.fixture
def count_splu(monkeypatch):
    calls = []
    real = spla.splu

    def counting(A, *args, **kwargs):
        calls.append(A.shape)
        return real(A, *args, **kwargs)

    monkeypatch.setattr(spla, "splu", counting)
    return calls


def test_a_time_stepping_loop_factorises_once(count_splu):
    A = (sp.identity(24 * 24) + 0.1 * _laplacian()).tocsr()
    u = np.random.default_rng(0).random(A.shape[0])
    solver = Solver(A, method="direct")
    for _ in range(4):
        sol = solver.solve(u)
        ref = spla.spsolve(A.tocsc(), u)
        assert sol.converged and np.linalg.norm(sol.x - ref) <= 1e-13 * np.linalg.norm(ref)
        u = sol.x
    assert len(count_splu) == 1


def test_an_edit_in_place_and_update_factorise_again(count_splu):
    A = (sp.identity(24 * 24) + _laplacian()).tocsr()
    b = np.ones(A.shape[0])
    solver = Solver(A, method="direct")
    solver.solve(b)
    A.data *= 2.0                        # the kept matrix edited in place: seen
    sol = solver.solve(b)
    assert np.allclose(sol.x, spla.spsolve(A.tocsc(), b), rtol=1e-13, atol=0)
    B = (3.0 * sp.identity(24 * 24) + _laplacian()).tocsr()
    sol = solver.update(B).solve(b)
    assert np.allclose(sol.x, spla.spsolve(B.tocsc(), b), rtol=1e-13, atol=0)
    assert len(count_splu) == 3


@pytest.mark.parametrize("adt, bdt", [(np.float64, np.complex128), (np.float32, np.float64),
                                      (np.int64, np.float64), (np.complex128, np.float64)])
def test_dtypes_as_spsolve(adt, bdt):
    A = (4 * sp.identity(24 * 24) + _laplacian()).astype(adt).tocsr()
    if np.dtype(adt).kind == "c":
        A = (A + 0.5j * sp.identity(A.shape[0])).tocsr()
    rng = np.random.default_rng(1)
    b = rng.random(A.shape[0]).astype(bdt)
    if np.dtype(bdt).kind == "c":
        b = b + 1j * rng.random(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)
    sol = skiff.solve(A, b, method="direct")
    assert sol.x.dtype == ref.dtype
    assert np.linalg.norm(sol.x - ref) <= 1e-13 * np.linalg.norm(ref)
