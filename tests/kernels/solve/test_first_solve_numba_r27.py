"""A first small solve in a fresh process does not import numba on the solving thread: a
matrix's (CG or GMRES with AMG: its setup, its Gauss-Seidel smoother, the Krylov updates) as
a grid's (the true residual after the solve), and its answer is SciPy's ``spsolve``'s.

No timing: an import hook records which thread first imports numba (the background loader's
``skiff-numba-load`` may, the main thread must not)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[3]

_HOOK = """
import sys, threading
first = []
class _Spy:
    def find_spec(self, name, path=None, target=None):
        if name == "numba" and not first:
            first.append(threading.current_thread().name)
        return None
sys.meta_path.insert(0, _Spy())
"""


def _fresh(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _HOOK + textwrap.dedent(code)],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1"))
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _poisson(n):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    I = sp.identity(n)
    return (sp.kron(I, T) + sp.kron(T, I)).tocsr()


def _convection(n, v=20.0):
    h = 1.0 / (n + 1)
    D = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)) / h**2
    C = sp.diags([-1.0, 1.0], [-1, 0], shape=(n, n)) * (v / h)   # upwind
    I = sp.identity(n)
    return (sp.kron(I, D + C) + sp.kron(D, I)).tocsr()


_SOLVE = """
import json
import numpy as np, scipy.sparse as sp
import skiff
A = sp.load_npz({path!r}).tocsr()
b = np.random.default_rng(3).standard_normal(A.shape[0])
sol = skiff.solve(A, b, rtol=1e-10)
print(json.dumps({{"first": first, "x": np.asarray(sol.x).tolist(),
                   "method": sol.method, "precond": sol.precond,
                   "converged": bool(sol.converged)}}))
"""


@pytest.mark.parametrize("matrix, method", [(_poisson, "cg"), (_convection, "gmres")])
def test_a_first_matrix_solve_does_not_import_numba_on_the_solving_thread(tmp_path, matrix,
                                                                          method):
    pytest.importorskip("numba")
    A = matrix(40)
    path = str(tmp_path / "A.npz")
    sp.save_npz(path, A)
    got = _fresh(_SOLVE.format(path=path))
    assert got["first"] in ([], ["skiff-numba-load"]), got["first"]   # never MainThread
    assert got["method"] == method and got["precond"] == "amg" and got["converged"]
    b = np.random.default_rng(3).standard_normal(A.shape[0])
    ref = sp.linalg.spsolve(A.tocsc(), b)
    x = np.asarray(got["x"])
    assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)


def test_a_first_grid_solve_checks_its_residual_without_numba():
    pytest.importorskip("numba")
    got = _fresh("""
        import json
        import numpy as np
        from skiff.kernels.solve import Solver, poisson
        p = poisson((48, 48))
        sol = Solver(p).solve(rtol=1e-10)
        print(json.dumps({"first": first, "x": sol.field.ravel().tolist(),
                          "true": sol.true_residual}))
    """)
    assert got["first"] in ([], ["skiff-numba-load"]), got["first"]
    from skiff.kernels.solve import poisson

    p = poisson((48, 48))
    ref = sp.linalg.spsolve(p.matrix().tocsc(), p.rhs.ravel())
    x = np.asarray(got["x"])
    assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)
    assert got["true"] <= 1e-9


@pytest.mark.parametrize("forward", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_the_scipy_gauss_seidel_sweep_is_the_loop_sweep(forward, dtype):
    """The sweep a deferred AMG uses against the sweep written as dense triangular algebra
    (numpy): x += (D + L)^-1 (b - A x) forward, (D + U) backward."""
    from skiff.kernels.solve.amg import _gauss_seidel_sp

    rng = np.random.default_rng(5)
    A = (_convection(9) + sp.random(81, 81, density=0.03, random_state=1)).tocsr()
    if dtype is np.complex128:
        A = (A + 1j * sp.diags(rng.standard_normal(81))).tocsr()
    A = A.astype(dtype)
    A.sort_indices()
    d = A.diagonal()
    x = rng.standard_normal(81).astype(dtype)
    b = rng.standard_normal(81).astype(dtype)
    Ad = A.toarray()
    T = np.tril(Ad, -1) if forward else np.triu(Ad, 1)
    want = x + np.linalg.solve(T + np.diag(d), b - Ad @ x)
    _gauss_seidel_sp(A.indptr, A.indices, A.data, d, x, b, forward)
    assert np.abs(x - want).max() <= 1e-10 * np.abs(want).max()


def test_a_matrix_above_the_deferral_bound_loads_numba_for_its_amg_setup(tmp_path):
    """Above ``DEFER_MATRIX_NNZ`` entries AMG's Python setup would cost more than loading numba
    (200x200 Poisson: 0.98 s against 0.48 s): the solve loads numba on its own thread, as
    before, and answers as SciPy."""
    pytest.importorskip("numba")
    from skiff.kernels.solve.fused import DEFER_MATRIX_NNZ

    A = _poisson(96)
    assert A.nnz > DEFER_MATRIX_NNZ
    path = str(tmp_path / "A.npz")
    sp.save_npz(path, A)
    got = _fresh(_SOLVE.format(path=path))
    assert got["first"] == ["MainThread"] and got["converged"]
    b = np.random.default_rng(3).standard_normal(A.shape[0])
    ref = sp.linalg.spsolve(A.tocsc(), b)
    assert np.linalg.norm(np.asarray(got["x"]) - ref) <= 1e-7 * np.linalg.norm(ref)
