"""Round 39 (h7): evolution strength's one-pass kernel forms each ``G_ij`` of ``G = A D^-1
A`` once for the pair (``M_ij d_j = d_j delta_ij - 2 w A_ij + w^2 G_ij``): the S of the
formed ``Z^2`` path on matrices whose diagonal varies (so ``Z^2`` is not symmetric, only
``G``), and SA's hierarchy on a varying-coefficient 27-point matrix as before."""

import numpy as np
import scipy.sparse as sp

import skiff.kernels.solve.amg_strength as ev
from skiff.kernels.solve.amg import SmoothedAggregation


def _varying27(n, seed=0):
    """A 27-point Laplacian scaled symmetrically by a coefficient spanning 1e4: S L S."""
    one = sp.diags([1.0, 1.0, 1.0], [-1, 0, 1], shape=(n, n))
    L = (27.0 * sp.identity(n ** 3) - sp.kron(sp.kron(one, one), one)).tocsr()
    s = sp.diags(10.0 ** np.random.default_rng(seed).uniform(-2, 2, n ** 3))
    A = (s @ L @ s).tocsr()
    A.sort_indices()
    return A


def _formed(A):
    B = sp.csr_matrix(A, copy=True)
    B.has_canonical_format = False   # the general path: Z, Z^T, Z^2 formed
    return ev.evolution_strength(B, symmetric=True)


def test_half_pass_evolution_equals_the_formed_path_on_a_varying_diagonal():
    for A in (_varying27(7), _varying27(6, seed=3)):
        ref = _formed(A)
        fast = ev.evolution_strength(A, symmetric=True)
        assert 0 < ref.nnz < A.nnz - A.shape[0]   # some connections dropped
        assert fast.nnz == ref.nnz and (fast != ref).nnz == 0
        d = A.diagonal()
        rho = ev.rho_dinv_a(A, 1 / d)
        indptr, indices = ev._evolution_sym_py(A.indptr, A.indices, A.data, 1 / d, 1 / rho,
                                               np.ones(A.shape[0]), 4.0)   # the Python twin
        twin = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=A.shape)
        assert (twin != ref).nnz == 0


def test_sa_hierarchy_on_a_varying_27_point_matrix_is_the_formed_paths(monkeypatch):
    A = _varying27(12)
    fast = SmoothedAggregation(A, max_coarse=40)
    monkeypatch.setattr(ev, "_evolution_symmetric", lambda *a: None)
    ref = SmoothedAggregation(A, max_coarse=40)
    assert len(fast.levels) == len(ref.levels) >= 2
    for a, b in zip(fast.levels[:-1], ref.levels[:-1]):
        for X, Y in ((a[0], b[0]), (a[3], b[3])):
            assert X.shape == Y.shape
            assert abs(X - Y).max() <= 1e-14 * abs(Y).max()
