"""Extended+i interpolation in one pass over the distance-two neighbourhoods (round 36, h7:
was a count, a fill and a reset pass) against a dense transcription of its formula (De
Sterck, Falgout, Nolting, Yang 2008, eqs. 4.10-4.11), the numba kernel against its Python
twin, and the kernels' shared longest-row helper."""

import numpy as np
import pytest
import scipy.sparse as sp

from skiff.kernels.solve.amg_rs import (
    RugeStuben,
    _extended_py,
    _longest_row,
    classical_strength,
    extended_interpolation,
    pmis_split,
    rs_split,
)


def _dense_extended(A, S, split, rows=None):
    """The formula, entry by entry, on dense arrays (the oracle: no CSR, no slots); only
    ``rows`` where given (the others zero)."""
    A = A.toarray()
    S = S.toarray() != 0
    n = A.shape[0]
    cindex = np.cumsum(split) - 1
    P = np.zeros((n, int(split.sum())))
    for i in range(n) if rows is None else rows:
        if split[i] == 1:
            P[i, cindex[i]] = 1.0
            continue
        strong = [j for j in np.flatnonzero(S[i]) if j != i]
        chat = {j for j in strong if split[j] == 1}
        for k in strong:
            if split[k] != 1:
                chat |= {m for m in np.flatnonzero(S[k]) if split[m] == 1}
        num = dict.fromkeys(chat, 0.0)
        d = A[i, i]
        for k in np.flatnonzero(A[i]):
            a = A[i, k]
            if k == i:
                continue
            if k in chat:
                num[k] += a
            elif k not in strong or split[k] == 1:
                d += a                                    # weak, outside C^_i
            else:                                         # strong F: distribute
                opposite = [m for m in np.flatnonzero(A[k])
                            if (m in chat or m == i) and (A[k, m] > 0) != (A[k, k] > 0)]
                den = sum(A[k, m] for m in opposite)
                if den == 0.0:
                    d += a
                    continue
                for m in opposite:
                    if m == i:
                        d += a * A[k, m] / den
                    else:
                        num[m] += a * A[k, m] / den
        if d * A[i, i] <= 0.0:
            d = A[i, i]
        for j, v in num.items():
            P[i, cindex[j]] = -v / d
    return P


def _aniso(m=14, eps=1e-2):
    T = sp.diags([-1, 2, -1], [-1, 0, 1], shape=(m, m))
    return sp.csr_matrix(sp.kronsum(T, eps * T))


def _random_m(n=220, seed=1):
    """A random diffusion M-matrix with coefficients over 4 decades."""
    rng = np.random.default_rng(seed)
    B = sp.random(n, n, density=0.015, random_state=rng)
    B.data = -(10.0 ** rng.uniform(-2, 2, B.nnz))
    B = sp.csr_matrix(B + B.T)
    B.setdiag(0)
    B.eliminate_zeros()
    return sp.csr_matrix(B + sp.diags(-np.asarray(B.sum(axis=1)).ravel() + 1e-3))


def _mixed(n=160, seed=2):
    """Symmetric with some positive off-diagonal entries (a P2-like row)."""
    A = _random_m(n, seed).tolil()
    rng = np.random.default_rng(seed)
    for _ in range(n // 4):
        i, j = rng.integers(0, n, 2)
        if i != j:
            A[i, j] = A[j, i] = 0.3
    return sp.csr_matrix(A)


def _dense_rows(n=90, k=24, seed=3):
    """Rows of ~2k strong entries: the distance-two sets outgrow the first allocation."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), k)
    cols = rng.integers(0, n, n * k)
    B = sp.csr_matrix((-rng.uniform(0.5, 1.5, n * k), (rows, cols)), shape=(n, n))
    B = sp.csr_matrix(B + B.T)
    B.setdiag(0)
    B.eliminate_zeros()
    return sp.csr_matrix(B + sp.diags(-np.asarray(B.sum(axis=1)).ravel() + 0.1))


MATRICES = {"anisotropic": _aniso, "random M": _random_m, "positive entries": _mixed,
            "dense rows": lambda: _dense_rows(90, 24)}


@pytest.mark.parametrize("case", sorted(MATRICES))
@pytest.mark.parametrize("cf", ["RS", "PMIS"])
def test_extended_is_its_formula_entry_by_entry(case, cf):
    A = MATRICES[case]()
    A.sum_duplicates()
    S = classical_strength(A)
    split = rs_split(S) if cf == "RS" else pmis_split(S)
    ref = _dense_extended(A, S, split)
    for kernel in (None, _extended_py):         # numba (32-bit indices) and its twin
        P = extended_interpolation(A, S, split, kernel=kernel, max_elements=0)
        np.testing.assert_allclose(P.toarray(), ref, rtol=1e-14, atol=1e-14 * abs(ref).max())


def test_the_growth_path_is_taken_and_rows_are_whole():
    A = _dense_rows(2000, 10)
    S = classical_strength(A)
    split = rs_split(S)
    bound = 2 * S.nnz + A.shape[0] + 16          # the kernel's first allocation
    P = extended_interpolation(A, S, split, max_elements=0)   # numba, 32-bit indices
    # the room asked for before some row (1 + |S_i| (1 + the longest S row)) passes the
    # first allocation: the arrays grew
    room = P.indptr[:-1] + 1 + np.diff(S.indptr) * (1 + np.diff(S.indptr).max())
    assert room.max() > bound
    grown = int(np.argmax(room > bound))
    rows = np.r_[0:40, grown:grown + 40, A.shape[0] - 40:A.shape[0]]  # before, at, after
    np.testing.assert_allclose(P.toarray()[rows], _dense_extended(A, S, split, rows)[rows],
                               rtol=1e-14, atol=1e-14)


def test_longest_row_is_numpys():
    rng = np.random.default_rng(0)
    ptr = np.concatenate([[0], np.cumsum(rng.integers(0, 9, 50))])
    assert _longest_row(ptr) == np.diff(ptr).max()
    assert _longest_row(np.zeros(1, dtype=np.int64)) == 0


def test_extended_hierarchy_solves_as_spsolve():
    from scipy.sparse.linalg import cg, spsolve

    A = _random_m(400, seed=5)
    b = np.random.default_rng(5).standard_normal(A.shape[0])
    M = RugeStuben(A, interpolation="extended+i", max_coarse=20).aspreconditioner()
    x, info = cg(A, b, M=M, rtol=1e-10, maxiter=200)
    assert info == 0
    np.testing.assert_allclose(x, spsolve(A.tocsc(), b), rtol=1e-7, atol=1e-7 * abs(x).max())
