"""Round 29 (h11): the Schwarz smoothers' block inverses built batch by batch (each batch a
slice of the entries sorted by patch size; S = R^T blockdiag R) against a dense oracle: for
every patch ``numpy.linalg.pinv`` of its block (SciPy's submatrix), summed."""

import numpy as np
import pytest
import scipy.sparse as sp

from skiff.kernels.solve import amg_schwarz
from skiff.kernels.solve.amg_schwarz import block_inverse


def _oracle(A, patches):
    n = A.shape[0]
    S = np.zeros((n, n), dtype=A.dtype)
    dense = A.toarray()
    for p in patches:
        S[np.ix_(p, p)] += np.linalg.pinv(dense[np.ix_(p, p)], hermitian=True)
    return S


def _patches(A, agg, count, overlap):
    groups = [np.flatnonzero(agg == a) for a in range(count)]
    groups += [np.array([i]) for i in np.flatnonzero(agg < 0)]
    if overlap:
        P = (abs(A) > 0).astype(int)
        groups = [np.union1d(g, P[g].indices) for g in groups]
    return groups


def _laplacian(n, seed, complex_=False):
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, 6 * n)
    j = rng.integers(0, n, 6 * n)
    w = rng.uniform(0.1, 10.0, i.size)
    if complex_:
        w = w * np.exp(1j * rng.uniform(0, 2 * np.pi, i.size))
    W = sp.coo_matrix((w, (i, j)), shape=(n, n)).tocsr()
    W = W + W.conj().T
    W.setdiag(0)
    W.eliminate_zeros()
    return (sp.diags(np.asarray(abs(W).sum(axis=1)).ravel() + 0.5) - W).tocsr()


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("complex_", [False, True])
def test_many_patch_sizes_in_several_batches_match_dense_pinv(overlap, complex_, monkeypatch):
    # a small batch limit: the patches go through many batches, of sizes 1 to ~40
    monkeypatch.setattr(amg_schwarz, "BATCH_ENTRIES", 600)
    n = 160
    A = _laplacian(n, 3, complex_)
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 12, 40)
    agg = np.repeat(np.arange(sizes.size), sizes)[:n]
    agg = np.concatenate([agg, -np.ones(n - agg.size, dtype=int)])
    agg = agg[rng.permutation(n)]
    count = int(agg.max()) + 1
    S = block_inverse(A, agg, count, overlap=overlap)
    want = _oracle(A, _patches(A, agg, count, overlap))
    assert S.dtype == A.dtype
    assert np.abs(S.toarray() - want).max() <= 1e-10 * np.abs(want).max()


def test_a_singular_patch_among_regular_ones_matches_dense_pinv(monkeypatch):
    monkeypatch.setattr(amg_schwarz, "BATCH_ENTRIES", 100)
    # two pure-Neumann pieces (singular as a whole) next to a regular chain
    L = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(5, 5)).tolil()
    L[0, 0] = L[4, 4] = 1.0
    A = sp.block_diag([L, L, _laplacian(30, 5)]).tocsr()
    agg = np.concatenate([np.zeros(5, int), np.ones(5, int), 2 + np.arange(30) // 4])
    S = block_inverse(A, agg, int(agg.max()) + 1)
    want = _oracle(A, _patches(A, agg, int(agg.max()) + 1, False))
    assert np.abs(S.toarray() - want).max() <= 1e-10 * np.abs(want).max()
