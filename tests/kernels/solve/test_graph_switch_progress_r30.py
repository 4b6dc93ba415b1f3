"""Round 30: where 'auto' builds AMG after Jacobi-CG ran past its budget on a graph, the
iterations reported to a reporter (a notebook's residual plot) started again at 1; they now
go on from Jacobi-CG's. Oracle: SciPy's Jacobi-CG for x; the steps against the callback's
own count."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff

nx = pytest.importorskip("networkx")


class Steps:
    def __init__(self):
        self.steps = []

    def metric(self, name, value, step=None):
        self.steps.append(step)

    def progress(self, *args, **kwargs):
        pass

    def check(self):
        pass

    def info(self, **kwargs):
        pass


def test_reported_steps_go_on_across_the_switch_to_amg(monkeypatch):
    from skiff.kernels.solve import graph_auto

    G = nx.connected_watts_strogatz_graph(5000, 8, 0.1, seed=2)
    A = (nx.laplacian_matrix(G).astype(float) + 1e-3 * sp.identity(5000)).tocsr()
    b = np.random.default_rng(4).standard_normal(5000)
    x_ref, info = spla.cg(A, b, rtol=1e-12, atol=0.0, M=sp.diags(1 / A.diagonal()),
                          maxiter=5000)
    assert info == 0
    monkeypatch.setattr(graph_auto, "JACOBI_BUDGET", 8)
    reporter, calls = Steps(), []
    sol = skiff.solve(A, b, rtol=1e-10, reporter=reporter, callback=lambda xk: calls.append(1))
    assert sol.converged and "Jacobi-CG had not converged in 8" in sol.info["solver"]
    steps = [s for s in reporter.steps if s is not None]
    assert steps == sorted(set(steps)), steps            # no step reported twice or back
    assert steps[-1] == sol.iterations == len(calls) > 8
    assert np.linalg.norm(sol.x - x_ref) <= 1e-6 * np.linalg.norm(x_ref)


def test_float32_status_says_the_rounded_x_misses_the_tolerance():
    n = 60
    d = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    A = (sp.kron(sp.identity(n), d) + sp.kron(d, sp.identity(n))).tocsr().astype(np.float32)
    b = np.random.default_rng(5).standard_normal(n * n).astype(np.float32)
    sol = skiff.solve(A, b, rtol=1e-10)
    A64, b64 = A.astype(np.float64), b.astype(np.float64)
    by_hand = np.linalg.norm(b64 - A64 @ sol.x.astype(np.float64)) / np.linalg.norm(b64)
    assert sol.x.dtype == np.float32 and by_hand > 1e-9       # float32 cannot hold 1e-10
    assert "above the tolerance" in sol.status and f"{by_hand:.1e}" in sol.status
    loose = skiff.solve(A, b, rtol=1e-4)                       # within float32's reach
    by_hand = np.linalg.norm(b64 - A64 @ loose.x.astype(np.float64)) / np.linalg.norm(b64)
    assert by_hand <= 1e-4 and loose.status == "converged"
