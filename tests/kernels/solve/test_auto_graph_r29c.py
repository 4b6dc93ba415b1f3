"""'auto' takes Jacobi on a graph Laplacian with no geometry (breadth-first depth <= log2 n),
AMG after all where Jacobi-CG runs past its budget, and AMG on PDE matrices (round 29, h15).
Oracles: SciPy's spsolve, lsqr and cg with a Jacobi preconditioner."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve.graph_auto import bfs_depth
from skiff.kernels.solve.problems import poisson

nx = pytest.importorskip("networkx")


def _laplacian(G):
    return nx.laplacian_matrix(G).astype(float).tocsr()


def _grounded(L):
    g = L.tolil()
    g[0, 0] += 1.0
    return g.tocsr()


GRAPHS = {
    "barabasi-albert grounded": lambda: _grounded(_laplacian(nx.barabasi_albert_graph(
        8000, 3, seed=1))),
    "watts-strogatz shifted": lambda: (_laplacian(nx.connected_watts_strogatz_graph(
        8000, 8, 0.1, seed=1)) + 1e-3 * sp.identity(8000)).tocsr(),
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_graph_laplacian_gets_jacobi_and_scipys_x(name):
    A = GRAPHS[name]()
    b = np.random.default_rng(3).standard_normal(A.shape[0])
    sol = skiff.solve(A, b, rtol=1e-10)
    x, info = spla.cg(A, b, rtol=1e-13, atol=0.0, M=sp.diags(1 / A.diagonal()), maxiter=5000)
    assert info == 0 and sol.converged
    assert np.allclose(sol.x, x, rtol=1e-6, atol=1e-6 * np.abs(x).max())
    text = sol.info["solver"]
    assert "Jacobi" in text and "algebraic multigrid" not in text
    assert "depth" in text and "log2(n)" in text   # says what auto chose and why


def test_singular_graph_laplacian_gets_jacobi():
    L = _laplacian(nx.barabasi_albert_graph(8000, 3, seed=2))
    b = np.random.default_rng(4).standard_normal(8000)
    b -= b.mean()
    sol = skiff.solve(L, b, rtol=1e-10)
    assert "Jacobi" in sol.info["solver"]
    x = spla.lsqr(L, b, atol=1e-14, btol=1e-14, iter_lim=5000)[0]
    d = (sol.x - sol.x.mean()) - (x - x.mean())
    assert np.linalg.norm(d) <= 1e-6 * np.linalg.norm(x - x.mean())


def test_explicit_amg_is_kept_on_a_graph():
    A = GRAPHS["barabasi-albert grounded"]()
    sol = skiff.solve(A, np.ones(A.shape[0]), precond="amg")
    assert "algebraic multigrid" in sol.info["solver"]


@pytest.mark.parametrize("shape", [(100, 100), (22, 22, 22)])
def test_pde_matrices_keep_amg(shape):
    A = poisson(shape).matrix().tocsr()
    assert bfs_depth(A) > np.log2(A.shape[0])   # a mesh's depth grows as n^(1/d)
    b = np.random.default_rng(5).standard_normal(A.shape[0])
    sol = skiff.solve(A, b, rtol=1e-10)
    assert "algebraic multigrid" in sol.info["solver"]
    assert "Jacobi" not in sol.info["solver"]
    x = spla.spsolve(A.tocsc(), b)
    assert np.allclose(sol.x, x, rtol=1e-6, atol=1e-6 * np.abs(x).max())


def test_amg_is_built_when_jacobi_cg_runs_past_its_budget(monkeypatch):
    from skiff.kernels.solve import graph_auto

    A = GRAPHS["watts-strogatz shifted"]()
    b = np.random.default_rng(6).standard_normal(A.shape[0])
    its = [0]
    x, info = spla.cg(A, b, rtol=1e-13, atol=0.0, M=sp.diags(1 / A.diagonal()), maxiter=5000,
                      callback=lambda xk: its.__setitem__(0, its[0] + 1))
    monkeypatch.setattr(graph_auto, "JACOBI_BUDGET", 10)   # SciPy's Jacobi-CG needs more
    assert info == 0 and its[0] > 10
    solver = skiff.Solver(A)
    assert solver.precond_name == "jacobi"
    sol = solver.solve(b, rtol=1e-10)
    assert sol.converged and solver.precond_name == "amg"
    assert "Jacobi-CG had not converged in 10 iterations" in sol.info["solver"]
    assert "algebraic multigrid" in sol.info["solver"]
    assert sol.residuals[10] > 1e-10 * np.linalg.norm(b)   # 10 Jacobi ones, then AMG's
    assert np.allclose(sol.x, x, rtol=1e-6, atol=1e-6 * np.abs(x).max())
    again = solver.solve(2 * b, rtol=1e-10)   # AMG kept for later solves
    assert "algebraic multigrid" in again.info["solver"]
    assert np.allclose(again.x, 2 * x, rtol=1e-6, atol=2e-6 * np.abs(x).max())


def test_disconnected_graph_has_no_depth():
    A = sp.block_diag([poisson((10, 10)).matrix()] * 2).tocsr()
    assert bfs_depth(A) is None
    assert bfs_depth(poisson((10, 10)).matrix().tocsr()) == 2 * (10 - 1)   # corner to corner
