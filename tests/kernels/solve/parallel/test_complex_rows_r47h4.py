"""Round 47 (h4): a complex matrix over the ranks of a row split takes the overlap (additive
Schwarz, the halo's corrections complex), the coarse level across the ranks in complex
arithmetic (R = P^T for a complex symmetric A, P^H else) and COCG (the unconjugated
``u^T v`` summed over the ranks); round 46 ran block Jacobi only. Helmholtz with absorbing
layers (complex symmetric) and a Hermitian matrix on thread ranks; x against SciPy's
``spsolve``, the iterations against the one-rank solve's."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve.parallel.rows import RowSolver
from skiff.kernels.solve.parallel.rows_job import RowJobSolver

from .helmholtz import helmholtz
from .thread_ranks import on_threads


def _helmholtz(n=24, k=16.0, layer=0.2):
    return helmholtz(n, k, layer)


def _run(A, b, size, **kw):
    def job(comm):
        s = RowSolver(A, comm=comm, **kw)
        r = s.iterate(b, rtol=1e-9, maxiter=1000)
        return r.converged, len(r.history) - 1, s.gather(r.x), s.coarse, s.overlap
    return on_threads(size, job)[0] if size > 1 else job(None)


@pytest.fixture(scope="module")
def helm():
    A = _helmholtz()
    rng = np.random.default_rng(0)
    b = rng.standard_normal(A.shape[0]) + 1j * rng.standard_normal(A.shape[0])
    return A, b, spla.spsolve(A.tocsc(), b)


def _close(x, ref):
    return np.abs(x - ref).max() <= 1e-7 * np.abs(ref).max()


def test_cocg_with_the_complex_coarse_level_over_the_ranks(helm):
    A, b, ref = helm
    ok1, one, x1, _, _ = _run(A, b, 1, method="cocg", precond="amg", coarse="none")
    ok, block, x, _, _ = _run(A, b, 2, method="cocg", precond="amg", coarse="none")
    ok2, two, x2, coarse, _ = _run(A, b, 2, method="cocg", precond="amg", coarse="amg")
    assert ok1 and ok and ok2 and coarse == "amg"
    assert _close(x1, ref) and _close(x, ref) and _close(x2, ref)
    # the coarse level brings two ranks back to one rank's count (measured 17, 28, 21)
    assert two <= one < block, (one, block, two)
    ok, it, x, coarse, _ = _run(A, b, 2, method="bicgstab", precond="ilu", coarse="ranks")
    assert ok and coarse == "ranks" and _close(x, ref)


def test_a_complex_overlap_over_the_ranks(helm):
    A, b, ref = helm
    ok0, it0, _, _, _ = _run(A, b, 2, method="gmres", precond="ilu", overlap=0)
    ok1, it1, x1, _, ov = _run(A, b, 2, method="gmres", precond="ilu", overlap=1)
    assert ok0 and ok1 and ov == 1 and _close(x1, ref)
    assert it1 < it0, (it0, it1)   # restricted additive Schwarz gains (measured 317 -> 263)
    ok, _, x, _, ov = _run(A, b, 2, method="cocg", precond="ilu", overlap=2,
                           schwarz="weighted", coarse="none")   # two layers: their own halo
    assert ok and ov == 2 and _close(x, ref)


def test_a_hermitian_matrix_takes_cg_with_the_coarse_level():
    n = 16
    h = 1.0 / (n + 1)
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)) / h ** 2
    S = sp.diags(np.ones(n * n - 1), 1, shape=(n * n, n * n))
    A = sp.csr_matrix(sp.kronsum(T, T) + 200j * (S - S.T))
    b = np.random.default_rng(1).standard_normal(n * n) * (1 + 0.5j)
    ref = spla.spsolve(A.tocsc(), b)
    ok, it, x, coarse, _ = _run(A, b, 2, method="cg", precond="amg", coarse="amg")
    assert ok and coarse == "amg" and _close(x, ref)
    ok, it, x, _, ov = _run(A, b, 2, method="cg", precond="ilu", overlap=1)
    assert ok and ov == 1 and _close(x, ref)


def test_cocg_over_the_ranks_is_auto_for_a_complex_symmetric_file_and_refused_else(helm):
    A, b, ref = helm
    assert RowJobSolver(A, method="auto").method == "cocg"
    assert RowJobSolver(A, method="auto", precond="ilut").method == "gmres"
    with pytest.raises(ValueError, match="method='cocg' needs a complex symmetric matrix"):
        RowSolver(sp.csr_matrix(A + sp.diags(np.ones(A.shape[0] - 1), 1)), method="cocg")
    with pytest.raises(ValueError, match="precond='ilut' is not"):
        RowSolver(A, method="cocg", precond="ilut")
    with pytest.raises(ValueError, match="--precond ilut is not symmetric and COCG"):
        RowJobSolver(A, method="cocg", precond="ilut")
