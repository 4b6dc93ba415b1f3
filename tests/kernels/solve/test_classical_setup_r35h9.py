"""Classical AMG setup kernels made cheaper in round 35 (h9): the strength of connection as a
numba loop (was numpy only) and the classical interpolation reading a strong F neighbour's
row once, against their references: the numpy strength (`_strength_numpy`), pyamg's
``classical_strength_of_connection`` and ``classical_interpolation``, and round 34's
two-pass loop (kept below), bit for bit."""

import numpy as np
import pytest
import scipy.sparse as sp

pyamg = pytest.importorskip("pyamg")

from pyamg.classical.interpolate import classical_interpolation as pyamg_interp  # noqa: E402
from pyamg.strength import classical_strength_of_connection  # noqa: E402

from skiff.kernels.solve.amg_rs import (  # noqa: E402
    RugeStuben,
    _interp_py,
    _strength_numpy,
    _strength_py,
    classical_interpolation,
    classical_strength,
    rs_split,
)


def _interp_round34(indptr, indices, data, sptr, sidx, split, cindex, diag, pptr):
    """Round 34's loop (a strong F neighbour's row read twice, its sign from ``diag``)."""
    n = split.shape[0]
    pidx = np.zeros(pptr[n], dtype=np.int64)
    pval = np.zeros(pptr[n], dtype=np.float64)
    slot = np.full(n, -1, dtype=np.int64)
    strong = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        q = pptr[i]
        if split[i] == 1:
            pidx[q] = cindex[i]
            pval[q] = 1.0
            continue
        for p in range(sptr[i], sptr[i + 1]):
            j = sidx[p]
            strong[j] = True
            if split[j] == 1:
                slot[j] = q
                pidx[q] = cindex[j]
                q += 1
        d = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            k = indices[p]
            a = data[p]
            if k == i or not strong[k]:
                d += a
            elif split[k] == 1:
                pval[slot[k]] += a
            else:
                pos = diag[k] > 0
                den = 0.0
                for r in range(indptr[k], indptr[k + 1]):
                    m = indices[r]
                    if slot[m] >= 0 and (data[r] > 0) != pos:
                        den += data[r]
                if den == 0.0:
                    d += a
                else:
                    for r in range(indptr[k], indptr[k + 1]):
                        m = indices[r]
                        if slot[m] >= 0 and (data[r] > 0) != pos:
                            pval[slot[m]] += a * data[r] / den
        if d * diag[i] <= 0.0:
            d = diag[i]
        for q in range(pptr[i], pptr[i + 1]):
            pval[q] = -pval[q] / d if d != 0.0 else 0.0
        for p in range(sptr[i], sptr[i + 1]):
            j = sidx[p]
            strong[j] = False
            slot[j] = -1
    return pptr, pidx, pval


def _weighted(n, seed, positive=0.0, negative_rows=0.0):
    """A 2-D 5-point matrix with edge weights over two decades, a fraction ``positive`` of
    the off-diagonal pairs made positive (not an M-matrix) and of rows with a negative
    diagonal (the sign test of a strong F neighbour's row), unsorted indices and duplicates."""
    rng = np.random.default_rng(seed)
    L = sp.csr_matrix(pyamg.gallery.poisson((n, n), format="csr"))
    off = sp.triu(L, 1).tocoo()
    w = 10.0 ** rng.uniform(-1, 1, off.nnz)
    w[rng.random(off.nnz) < positive] *= -1.0
    W = sp.coo_matrix((-w, (off.row, off.col)), shape=L.shape)
    W = W + W.T
    d = np.abs(np.asarray(W.sum(axis=1)).ravel()) + 0.5
    d[rng.random(d.size) < negative_rows] *= -1.0
    A = (W + sp.diags(d)).tocoo()
    # split every entry in two (duplicates) and shuffle each row's order
    perm = rng.permutation(2 * A.nnz)
    r = np.concatenate([A.row, A.row])[perm]
    c = np.concatenate([A.col, A.col])[perm]
    v = np.concatenate([0.25 * A.data, 0.75 * A.data])[perm]
    return sp.csr_matrix((v, (r, c)), shape=A.shape)


MATRICES = {
    "m-matrix": lambda: _weighted(30, 0),
    "positive pairs": lambda: _weighted(30, 1, positive=0.2),
    "negative rows": lambda: _weighted(30, 2, positive=0.1, negative_rows=0.1),
    "rotated": lambda: pyamg.gallery.stencil_grid(
        pyamg.gallery.diffusion_stencil_2d(1e-3, np.pi / 8), (40, 40), format="csr"),
    "3-D": lambda: pyamg.gallery.poisson((12, 12, 12), format="csr"),
}


def _pattern(S):
    S = sp.csr_matrix(S, copy=True)
    S.setdiag(0)
    S.eliminate_zeros()
    S.sort_indices()
    return S


@pytest.mark.parametrize("theta", [0.0, 0.25, 0.5, 0.9])
@pytest.mark.parametrize("case", sorted(MATRICES))
def test_strength_kernel_is_the_numpy_twin_and_pyamgs(case, theta):
    A = sp.csr_matrix(MATRICES[case]())
    A.sum_duplicates()
    A.data[::17] = 0.0            # explicit zeros: never strong
    A = sp.csr_matrix((A.data, A.indices.astype(np.int64), A.indptr.astype(np.int64)),
                      shape=A.shape) if case == "3-D" else A   # int64 indices too
    ref = _strength_numpy(A, theta)
    for S in (classical_strength(A, theta), classical_strength(A, theta, kernel=_strength_py)):
        np.testing.assert_array_equal(S.indptr, ref.indptr)
        np.testing.assert_array_equal(S.indices, ref.indices)
        np.testing.assert_array_equal(S.data, ref.data)
    theirs = _pattern(classical_strength_of_connection(A, theta=theta))
    mine = _pattern(classical_strength(A, theta))
    np.testing.assert_array_equal(mine.indptr, theirs.indptr)
    np.testing.assert_array_equal(mine.indices, theirs.indices)


def test_strength_of_empty_and_diagonal_rows():
    A = sp.csr_matrix(np.array([[2.0, 0, 0, 0], [0, 0, 0, 0], [-1, 0, 3, -1e-3],
                                [0, 0, -1, 1]]))
    S = classical_strength(A)
    np.testing.assert_array_equal(S.indptr, [0, 0, 0, 1, 2])
    np.testing.assert_array_equal(S.indices, [0, 2])
    assert classical_strength(sp.csr_matrix((5, 5))).nnz == 0


@pytest.mark.parametrize("second_pass", [False, True])
@pytest.mark.parametrize("case", sorted(MATRICES))
def test_interpolation_is_round34s_bit_for_bit(case, second_pass):
    A = sp.csr_matrix(MATRICES[case]())
    A.sum_duplicates()
    S = classical_strength(A)
    split = rs_split(S, second_pass=second_pass)
    P = classical_interpolation(A, S, split)                        # numba
    Ptwin = classical_interpolation(A, S, split, kernel=_interp_py)  # its Python source
    Pref = classical_interpolation(A, S, split, kernel=_interp_round34)
    for Q in (P, Ptwin):
        np.testing.assert_array_equal(Q.indptr, Pref.indptr)
        np.testing.assert_array_equal(Q.indices, Pref.indices)
        np.testing.assert_array_equal(Q.data, Pref.data)
    if second_pass and case in ("m-matrix", "3-D"):
        # M-matrices, every strong F-F pair sharing a C point: pyamg's modified classical
        # interpolation (the rotated stencil has positive entries, where the two differ)
        theirs = sp.csr_matrix(pyamg_interp(A, _pattern(S), split.astype("intc"),
                                            modified=True))
        assert abs(P - theirs).max() < 1e-14


def test_whole_hierarchy_as_pyamgs_levels():
    # the strength kernel on every level (coarse ones not M-matrices): with pyamg's order
    # and direct interpolation, pyamg's levels (classical interpolation differs from pyamg's
    # where entries are positive: amg_rs._interp_py)
    A = pyamg.gallery.stencil_grid(pyamg.gallery.diffusion_stencil_2d(1e-3, np.pi / 6),
                                   (50, 50), format="csr")
    mine = RugeStuben(A, max_coarse=10, order="pyamg", interpolation="direct")
    ml = pyamg.ruge_stuben_solver(A, max_coarse=10, interpolation="direct")
    # (skiff stops where the coarse level is dense enough for its inverse: a level less)
    assert len(mine.levels) >= 5   # with the coarsest (round 39 h12)
    assert [lv[0].shape[0] for lv in mine.levels] == [
        lv.A.shape[0] for lv in ml.levels[:len(mine.levels)]]
    for lv, lp in zip(mine.levels[:-1], ml.levels):
        assert abs(lv[3] - lp.P).max() < 1e-12


@pytest.mark.parametrize("order", ["lowest", "pyamg", "front"])
@pytest.mark.parametrize("case", sorted(MATRICES))
def test_splitting_on_32_bit_indices_is_the_64_bit_twins(case, order):
    # rs_split runs the numba kernels on int32 arrays where they fit; the Python twin on
    # int64 arrays, called directly, gives the same splitting; pyamg's order is pyamg's RS
    from pyamg.classical.split import RS

    from skiff.kernels.solve.amg_rs import _rs_py, _rs_pyamg_py

    A = sp.csr_matrix(MATRICES[case]())
    A.sum_duplicates()
    S = classical_strength(A)
    T = S.T.tocsr()
    i64 = np.int64
    args = (S.indptr.astype(i64), S.indices.astype(i64), T.indptr.astype(i64),
            T.indices.astype(i64), S.shape[0])
    ref = (_rs_py(*args) if order == "lowest" else
           _rs_pyamg_py(*args, 1 if order == "front" else 0))
    split = rs_split(S, order=order)
    assert split.dtype == np.int64
    np.testing.assert_array_equal(split, ref)
    if order == "pyamg":
        np.testing.assert_array_equal(split, RS(_pattern(classical_strength_of_connection(
            A, theta=0.25))))


@pytest.mark.parametrize("bs", [1, 2, 3])
def test_gauss_seidel_row_splits_kernel_is_the_numpy_twin(bs):
    from skiff.kernels.solve.amg_gs import _splits, _splits_numpy, _splits_py

    A = sp.csr_matrix(_weighted(18, 4, positive=0.1))   # 324 rows: bs 1, 2, 3 divide it
    A.sum_duplicates()
    A = sp.csr_matrix(A.multiply(sp.random(324, 324, density=1.0, random_state=1) > 0.3))
    A = sp.csr_matrix(sp.diags((np.arange(324) != 7).astype(float)) @ A)
    A.eliminate_zeros()      # an empty row
    A.sort_indices()
    ref = _splits_numpy(A, bs)
    for lo, hi in (_splits(A, bs), _splits_py(A.indptr, A.indices, bs)):
        assert lo.dtype == hi.dtype == np.uint64
        np.testing.assert_array_equal(lo, ref[0])
        np.testing.assert_array_equal(hi, ref[1])
    # the meaning: lo..hi holds exactly the columns of the row's node
    node = np.repeat(np.arange(324), np.diff(A.indptr)) // bs
    inside = A.indices // bs == node
    for i in range(0, 324, 7):
        cols = A.indices[int(ref[0][i]):int(ref[1][i])]
        assert set(cols) == set(A.indices[A.indptr[i]:A.indptr[i + 1]][
            inside[A.indptr[i]:A.indptr[i + 1]]])


@pytest.mark.parametrize("m", [1, 2, 4, 7])
def test_truncation_kernel_is_the_numpy_twin(m):
    from skiff.kernels.solve.amg_rs import _truncate_numpy, _truncate_py, truncate_rows

    rng = np.random.default_rng(m)
    n, nc = 400, 150
    counts = rng.integers(0, 12, n)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    indices = np.concatenate([np.sort(rng.choice(nc, c, replace=False)) for c in counts])
    data = np.round(rng.standard_normal(indptr[-1]), 1)   # ties in magnitude, both signs
    data[rng.random(data.size) < 0.05] = 0.0
    data[5] = np.nan
    P = sp.csr_matrix((data, indices, indptr), shape=(n, nc))
    ref = _truncate_numpy(P, m)
    for Q in (truncate_rows(P, m), truncate_rows(P, m, kernel=_truncate_py)):
        np.testing.assert_array_equal(Q.indptr, ref.indptr)
        np.testing.assert_array_equal(Q.indices, ref.indices)
        np.testing.assert_array_equal(Q.data, ref.data)   # NaN where NaN
    assert np.diff(ref.indptr).max() <= m
    # the meaning: rows that kept a nonzero sum keep their sum
    sums, kept = np.asarray(P.sum(axis=1)).ravel(), np.asarray(ref.sum(axis=1)).ravel()
    big = np.asarray(abs(ref).max(axis=1).toarray()).ravel()
    # (a kept part summing to rounding noise scales the row by 1e16: not comparable)
    ok = np.isfinite(sums) & (np.abs(kept) > 1e-8) & (big < 10)
    np.testing.assert_allclose(kept[ok], sums[ok], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", sorted(MATRICES))
def test_extended_kernel_on_32_bit_indices_is_the_64_bit_twin(case):
    from skiff.kernels.solve.amg_rs import _extended_py, extended_interpolation, pmis_split

    A = sp.csr_matrix(MATRICES[case]())
    A.sum_duplicates()
    S = classical_strength(A)
    for split in (pmis_split(S), rs_split(S)):
        P = extended_interpolation(A, S, split, max_elements=0)   # numba, int32 arrays
        i64 = np.int64
        cindex = np.cumsum(split) - 1
        ptr, idx, val = _extended_py(A.indptr.astype(i64), A.indices.astype(i64), A.data,
                                     S.indptr.astype(i64), S.indices.astype(i64),
                                     split.astype(i64), cindex, A.diagonal())
        ref = sp.csr_matrix((val, idx, ptr), shape=P.shape)
        ref.sort_indices()
        np.testing.assert_array_equal(P.indptr, ref.indptr)
        np.testing.assert_array_equal(P.indices, ref.indices)
        np.testing.assert_array_equal(P.data, ref.data)
        if case not in ("m-matrix", "3-D"):
            continue   # (positive entries: a row lumped past zero takes its diagonal)
        # M-matrix rows of zero sum keep the constant
        zero = np.abs(np.asarray(A.sum(axis=1)).ravel()) < 1e-12 * np.abs(A.diagonal())
        ones = P @ np.ones(P.shape[1])
        np.testing.assert_allclose(ones[zero & (np.diff(P.indptr) > 0)], 1.0, atol=1e-12)


def test_smoothers_and_prolongators_from_the_levels_diagonal_are_the_rebuilt_ones():
    # RugeStuben hands each level's diagonal to the interpolation and 1/diagonal to the
    # Gauss-Seidel smoother: the same as computing them again
    from skiff.kernels.solve.amg_gs import BlockSGS

    A = sp.csr_matrix(_weighted(40, 5))
    A.sum_duplicates()
    A.sort_indices()
    h = RugeStuben(A, max_coarse=50)
    assert h._sgs is not None and len(h.levels) >= 2
    for (Al, _d, _, P, _), sgs, split in zip(h.levels, h._sgs, h.splittings):
        ref = BlockSGS.build(Al, 1, 1)
        np.testing.assert_array_equal(sgs.dinv, ref.dinv)
        np.testing.assert_array_equal(sgs.lo, ref.lo)
        np.testing.assert_array_equal(sgs.hi, ref.hi)
        Q = classical_interpolation(Al, classical_strength(Al), split)
        np.testing.assert_array_equal(P.indptr, Q.indptr)
        np.testing.assert_array_equal(P.data, Q.data)
