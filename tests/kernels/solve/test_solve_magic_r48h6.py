"""Round 48 (h6, requested in skiff/kinds/solve.py): %solve with the notebook's matrix takes
several right-hand sides at once (an (n, k) B, as ``skiff.solve(A, B)`` and the CLI's file
do; it was refused with "%solve takes one vector"), and a matrix with a NaN / inf entry is
refused before any job, naming the variable (the job failed with a traceback)."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kinds.solve import _objects_request


def _laplacian(n):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return sp.csr_matrix(sp.kronsum(T, T))


def test_several_right_hand_sides_solve_each_column():
    A = _laplacian(24)   # 576 unknowns: AMG with two levels, not one LU
    B = np.random.default_rng(0).standard_normal((A.shape[0], 3))
    B[:, 1] = 0.0   # a zero column: x = 0 there, as SciPy's cg returns
    ns = {"A": A, "B": B}   # a plain namespace, not the shared shell's
    request = _objects_request({"problem": "A", "b": "B", "rtol": 1e-10}, ns)
    sol = request.fn(request.config, None)
    ref = spla.spsolve(A.tocsc(), B)
    assert np.shape(sol.x) == B.shape
    # rtol 1e-10 of each column's |b|, A's condition number ~2.4e2: x within 1e-7 relative
    err = np.linalg.norm(np.asarray(sol.x) - ref, axis=0)
    assert err[1] == 0.0
    assert np.all(err <= 1e-7 * np.maximum(np.linalg.norm(ref, axis=0), 1e-300)), err


def test_a_nan_matrix_is_refused_before_any_job():
    A = _laplacian(8).astype(float)
    A.data[3] = np.nan
    ns = {"An": A, "b": np.ones(A.shape[0])}
    with pytest.raises(ValueError, match=r"^PROBLEM 'An': the matrix has 1 non-finite entry "
                                         r"\(NaN or inf\), the first at row 1"):
        _objects_request({"problem": "An", "b": "b"}, ns)
    dense = A.toarray()
    with pytest.raises(ValueError, match="PROBLEM 'D': the matrix has 1 non-finite entry"):
        _objects_request({"problem": "D", "b": "b"}, {"D": dense, "b": ns["b"]})
