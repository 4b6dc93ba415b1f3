"""A graph Laplacian with an isolated node, or of a graph in several pieces (round 31):
SciPy's ``cg`` and pyamg solve them for a compatible b, skiff refused the first ("row i of the
matrix is all zeros") and on the second, with a b summing to zero over the graph but not over
each piece, said "cg found the matrix indefinite" and stagnated at |r|/|b| = 1. Oracles:
NumPy's ``lstsq`` (the minimum-norm least-squares x, which ``compatibility='project'``
returns) and SciPy's ``cg``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve import SolveError


def _grid_laplacian(m):
    one = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m)).tolil()
    one[0, 0] = one[m - 1, m - 1] = 1.0   # Neumann ends: rows sum to zero
    one = one.tocsr()
    return (sp.kron(sp.eye(m), one) + sp.kron(one, sp.eye(m))).tocsr()


def _pieces(isolated=2):
    """Two grids (12^2 and 8^2) and ``isolated`` nodes with no edge, as networkx's
    ``laplacian_matrix`` of such a graph is."""
    blocks = [_grid_laplacian(12), _grid_laplacian(8)] + [sp.csr_matrix((1, 1))] * isolated
    return sp.block_diag(blocks, format="csr")


def test_isolated_node_with_zero_b_there_is_solved_as_scipy_cg():
    L = sp.block_diag([_grid_laplacian(14), sp.csr_matrix((1, 1))], format="csr")
    n = L.shape[0]
    b = np.zeros(n)
    b[3], b[100] = 1.0, -1.0
    sol = skiff.solve(L, b)
    ref, info = spla.cg(L, b, rtol=1e-10)
    assert info == 0 and sol.converged, sol.status
    assert np.linalg.norm(b - L @ sol.x) <= 1.01e-8 * np.linalg.norm(b)
    assert sol.x[-1] == 0.0
    # up to a constant on the piece, the same x as SciPy's cg
    d = (sol.x - ref)[:-1]
    assert np.ptp(d) <= 1e-6 * np.abs(ref).max()


def test_project_gives_lstsq_minimum_norm_solution():
    L = _pieces()
    n = L.shape[0]
    rng = np.random.default_rng(0)
    b = rng.standard_normal(n)           # incompatible on every piece and isolated node
    ref = np.linalg.lstsq(L.toarray(), b, rcond=None)[0]
    sol = skiff.solve(L, b, compatibility="project")
    assert sol.converged, sol.status
    np.testing.assert_allclose(sol.x, ref, atol=1e-6 * np.abs(ref).max())


def test_b_across_pieces_is_refused_naming_project():
    L = _pieces(isolated=0)
    b = np.zeros(L.shape[0])
    b[0], b[-1] = 1.0, -1.0              # sums to zero, but not over each piece
    with pytest.raises(ValueError, match=r"2 separate pieces.*compatibility='project'"):
        skiff.solve(L, b)


def test_b_on_an_isolated_node_is_refused():
    L = _pieces(isolated=1)
    b = np.zeros(L.shape[0])
    b[0], b[1] = 1.0, -1.0
    b[-1] = 2.0
    with pytest.raises(SolveError, match=r"row 208 of the matrix is all zeros, its column too"):
        skiff.solve(L, b)


def test_pieces_with_compatible_b_converge():
    L = _pieces()
    b = np.zeros(L.shape[0])
    b[[0, 5, 150, 160]] = [1.0, -1.0, 2.0, -2.0]   # each piece sums to zero
    sol = skiff.solve(L, b)
    assert sol.converged, sol.status
    assert np.linalg.norm(b - L @ sol.x) <= 1.01e-8 * np.linalg.norm(b)
    assert np.all(sol.x[-2:] == 0.0)


def test_cli_and_magic_check_lets_an_isolated_node_through():
    """``%solve`` / ``python -m skiff solve``'s check before a job: an isolated node (its
    column empty too) is the solver's to take; a row left empty alone is still refused."""
    from skiff.kinds.solve import _check_empty_rows

    _check_empty_rows("L", _pieces(isolated=1))
    A = (_grid_laplacian(6) + sp.eye(36)).tolil()
    A[5, :] = 0.0
    with pytest.raises(ValueError, match="row 5 of the matrix is all zeros"):
        _check_empty_rows("A", A.tocsr())


def test_one_piece_and_an_isolated_node_projected_keeps_x_zero_there():
    """One connected piece and an isolated node with b = 3 there: 'project' sets b to 0
    there and removes the piece's mean; x there stays 0 (the mean over all of x moved it,
    and the true |b - Ax|/|b| was 2.8e-5: 'attainable accuracy')."""
    L = sp.block_diag([_grid_laplacian(14), sp.csr_matrix((1, 1))], format="csr")
    b = np.zeros(L.shape[0])
    b[0], b[7], b[-1] = 1.0, -0.5, 3.0
    sol = skiff.solve(L, b, compatibility="project")
    assert sol.converged, sol.status
    assert sol.x[-1] == 0.0
    ref = np.linalg.lstsq(L.toarray(), b, rcond=None)[0]
    np.testing.assert_allclose(sol.x, ref, atol=1e-6 * np.abs(ref).max())


def test_cli_and_magic_refuse_b_on_an_isolated_node_before_a_job():
    from skiff.kinds.solve import _check_isolated_b

    L = _pieces(isolated=1)
    b = np.zeros(L.shape[0])
    b[-1] = 1.0
    with pytest.raises(ValueError, match=r"row 208 of the matrix is all zeros, its column too"
                                         r".*--compatibility project"):
        _check_isolated_b("L", "b", L, b, {})
    _check_isolated_b("L", "b", L, b, {"compatibility": "project"})
    b[-1] = 0.0
    _check_isolated_b("L", "b", L, b, {})
