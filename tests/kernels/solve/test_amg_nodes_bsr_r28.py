"""AMG aggregates a system's nodes on the finest level too (round 28): a BSR input's blocks,
or the nodes that rigid-body modes show, as pyamg amalgamates its BSR levels. Oracle: pyamg's
``smoothed_aggregation_solver`` on the same matrix (level sizes, CG iterations)."""

from __future__ import annotations

import numpy as np
import pyamg
import pytest
import scipy.sparse as sp

from skiff.kernels.solve import Solver
from skiff.kernels.solve.amg import SmoothedAggregation, _node_size


@pytest.fixture(scope="module")
def elasticity():
    A, B = pyamg.gallery.linear_elasticity((90, 90), format="bsr")
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    return A, B, b


def _pyamg(A, B, b):
    ml = pyamg.smoothed_aggregation_solver(A, B=B, max_coarse=400)
    res = []
    ml.solve(b, tol=1e-8, accel="cg", residuals=res)
    return [lv.A.shape[0] for lv in ml.levels], len(res) - 1


@pytest.mark.parametrize("fmt", ["bsr", "csr"])
def test_nodes_kept_together_as_pyamg(elasticity, fmt):
    """BSR 2x2 blocks, or CSR with the rigid-body modes: the same hierarchy as pyamg's and
    no more CG iterations than pyamg's (the unknowns aggregated one by one split nodes)."""
    A, B, b = elasticity
    M = A if fmt == "bsr" else A.tocsr()
    sizes, its = _pyamg(M, B, b)
    s = Solver(M, method="cg", precond="amg", near_nullspace=B)
    sol = s.solve(b, rtol=1e-8)
    amg = s.M.amg
    mine = [lv[0].shape[0] for lv in amg.levels]
    assert sol.converged
    assert mine == sizes
    assert sol.iterations <= its + 1


def test_node_blocks_change_the_hierarchy(elasticity):
    """The unknowns aggregated one by one (blocksize=1, the way before) split nodes: a
    coarser second level at a higher operator complexity than pyamg's, which the nodes
    give (16 200 unknowns: 300 coarse unknowns at 1.27 by node, 123 at 1.57 by unknown)."""
    A, B, b = elasticity
    by_node = SmoothedAggregation(A.tocsr(), B=B)
    by_unknown = SmoothedAggregation(A.tocsr(), B=B, blocksize=1)
    ml = pyamg.smoothed_aggregation_solver(A.tocsr(), B=B, max_coarse=400)
    assert by_node.coarse_n == ml.levels[-1].A.shape[0] != by_unknown.coarse_n
    assert by_node.operator_complexity < by_unknown.operator_complexity
    assert abs(by_node.operator_complexity - ml.operator_complexity()) < 0.02


def test_node_size_from_modes():
    _, B2 = pyamg.gallery.linear_elasticity((5, 5))
    from skiff.kernels.solve.amg_modes import rigid_body_modes

    pts = np.random.default_rng(1).uniform(size=(10, 3))
    B3 = rigid_body_modes(np.repeat(pts, 3, axis=0))
    assert _node_size(B2) == 2 and _node_size(B3) == 3
    assert _node_size(np.ones((20, 1))) == 1
    assert _node_size(np.random.default_rng(0).standard_normal((12, 3))) == 1


def test_scalar_bsr_and_bad_blocksize():
    """A scalar problem stored as BSR blocks: its nodes aggregate together, and CG+AMG
    still converges to spsolve's x; a blocksize that does not divide n is refused."""
    from scipy.sparse.linalg import spsolve

    m = 40
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    L = sp.kronsum(T, T).tocsr()
    b = np.ones(m * m)
    sol = Solver(L.tobsr(blocksize=(2, 2)), method="cg", precond="amg").solve(b, rtol=1e-10)
    assert sol.converged
    ref = spsolve(L.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-8 * np.linalg.norm(ref)
    with pytest.raises(ValueError, match="blocksize=3 must be a positive integer dividing"):
        SmoothedAggregation(L, blocksize=3)


@pytest.mark.parametrize("theta", [0.0, 0.1, 0.25])
def test_symmetric_strength_is_pyamgs(elasticity, theta):
    """The strength pattern built straight in CSR (round 28, 2-3x faster) is pyamg's
    symmetric strength of connection without its diagonal."""
    from pyamg.strength import symmetric_strength_of_connection

    from skiff.kernels.solve.amg import strength

    A = elasticity[0].tocsr()
    mine = strength(A, theta)
    ref = sp.csr_matrix(symmetric_strength_of_connection(A, theta))
    ref.setdiag(0)
    ref.eliminate_zeros()
    ref = (ref != 0).astype(np.float64)
    assert mine.nnz == ref.nnz and (mine != ref).nnz == 0
