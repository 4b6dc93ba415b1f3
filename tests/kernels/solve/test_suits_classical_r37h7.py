"""Round 37 (h7): ``suits_classical``'s one-pass kernel (numba and its Python twin) against
its numpy form, on matrices taking each of its answers."""

import numpy as np
import pytest
import scipy.sparse as sp

from skiff.kernels.solve import amg_rs


def _grid(ey, n=20, ez=None):
    e = np.ones(n)
    D = sp.diags([-e, 2 * e, -e], [-1, 0, 1], (n, n))
    I = sp.identity(n)
    if ez is None:
        return (sp.kron(D, I) + ey * sp.kron(I, D)).tocsr()
    return (sp.kron(sp.kron(D, I), I) + ey * sp.kron(sp.kron(I, D), I)
            + ez * sp.kron(sp.kron(I, I), D)).tocsr()


def _contrast(n=30):
    k = np.where(np.random.default_rng(1).random(n * n) < 0.3, 1e6, 1.0).reshape(n, n)
    rows, cols, vals = [], [], []
    for i in range(n):
        for j in range(n):
            me = i * n + j
            diag = 0.0
            for a, b in ((i + 1, j), (i - 1, j), (i, j + 1), (i, j - 1)):
                if 0 <= a < n and 0 <= b < n:
                    w = 2 / (1 / k[i, j] + 1 / k[a, b])
                    rows.append(me), cols.append(a * n + b), vals.append(-w)
                    diag += w
                else:
                    diag += k[i, j]
            rows.append(me), cols.append(me), vals.append(diag)
    return sp.csr_matrix((vals, (rows, cols)), shape=(n * n, n * n))


def _graph():
    A = sp.random(300, 300, 0.03, random_state=2)
    A = ((A + A.T) > 0).astype(float)
    A.setdiag(0)
    A.eliminate_zeros()
    return (sp.diags(np.asarray(A.sum(1)).ravel()) - A).tocsr()


CASES = {
    "anisotropy": (lambda: _grid(1e-3), "for the anisotropy"),
    "anisotropy 3-D": (lambda: _grid(1e-2, 12, 1e-2), "for the anisotropy"),
    "contrast": (_contrast, "for the coefficient's contrast"),
    "isotropic": (lambda: _grid(1.0), ""),
    "positive entry": (lambda: (_grid(1e-3) + sp.eye(400, k=3) * 1e-3).tocsr(), ""),
    "not dominant": (lambda: (_grid(1e-3) - 0.5 * sp.eye(400)).tocsr(), ""),
    "long rows": (_graph, ""),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_kernel_answers_as_the_numpy_form(name):
    make, want = CASES[name]
    A = make()
    A.sort_indices()
    d = A.diagonal()
    assert amg_rs._suits_numpy(A, d) == want
    assert amg_rs.suits_classical(A) == want   # numba's kernel
    twin = amg_rs._suits_py(A.indptr, A.indices, A.data, d, amg_rs.CLASSICAL_SPREAD,
                            amg_rs.CLASSICAL_ROW)   # the Python twin
    assert amg_rs._suits_answer(*twin) == want
