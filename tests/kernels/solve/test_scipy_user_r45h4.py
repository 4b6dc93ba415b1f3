"""Round 45 (h4): a SciPy user's problems. MINRES on a singular system whose b is not in A's
range (a normalized graph Laplacian from ``scipy.sparse.csgraph``, its null vector D^1/2 1,
not the constant) ran on until the lost orthogonality of its Lanczos vectors let the
recurrence pass the tolerance while x grew along the null space: "converged" in 969
iterations with a true |r|/|b| of 1.7e14. SciPy's minres stops when |A r| / (|A| |r|) is
small (its test2) with the least-squares x; so does skiff's now, saying why. And SciPy
spilu's other keywords in ``precond=('ilut', {...})``: taken where they mean what skiff's
ILUT does, else one line naming its equivalent."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import laplacian

import skiff


def _graph(n=400, seed=1):
    W = sp.random(n, n, density=8 / n, random_state=seed)
    W = (W + W.T).tolil()
    W.setdiag(0)
    W = W.tocsr()
    W.eliminate_zeros()
    W.data[:] = 1.0
    return W


def test_minres_stops_at_the_least_squares_x_where_b_is_not_in_the_range():
    W = _graph()
    L = sp.csr_matrix(laplacian(W, normed=True))
    b = np.random.default_rng(0).standard_normal(L.shape[0])
    count = [0]
    xs, info = spla.minres(L, b, rtol=1e-8, callback=lambda xk: count.__setitem__(
        0, count[0] + 1))
    floor = np.linalg.norm(b - L @ xs)          # SciPy: info 0, 15 iterations, 3.0e-2 |b|
    d = np.sqrt(np.asarray(W.sum(axis=1)).ravel())   # the null vector: b's part along it
    least = abs(d @ b) / np.linalg.norm(d)      # is the least residual any x leaves
    assert info == 0 and abs(floor - least) <= 1e-6 * least
    sol = skiff.solve(L, b, method="minres")
    true = np.linalg.norm(b - L @ np.asarray(sol.x))
    assert not sol.converged and true <= 1.001 * least, (sol.iterations, true / least)
    assert sol.iterations <= count[0] + 2, (sol.iterations, count[0])   # HEAD: 969
    assert "b is not in its range" in sol.status and "least-squares" in sol.status
    # a b in the range: converged as before (SciPy's cg: 14 iterations)
    bc = b - d * (d @ b) / (d @ d)
    sol = skiff.solve(L, bc, method="minres")
    assert sol.converged and np.linalg.norm(bc - L @ np.asarray(sol.x)) <= 1e-8 * np.linalg.norm(
        bc) * 1.01


def _upwind(m=20, eps=1e-2):
    h = 1.0 / (m + 1)
    T = sp.diags([-eps / h**2 - 1 / h, 2 * eps / h**2 + 1 / h, -eps / h**2], [-1, 0, 1],
                 shape=(m, m))
    return sp.kronsum(T, T).tocsr()


def test_spilu_keywords_in_ilut_are_taken_or_named():
    A = _upwind()
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)

    def run(opts):
        sol = skiff.solve(A, b, method="gmres", precond=("ilut", opts), rtol=1e-10)
        assert np.abs(np.asarray(sol.x) - ref).max() <= 1e-7 * np.abs(ref).max()
        return sol.iterations, sol.info["solver"]

    # permc_spec='NATURAL' is A's own order (reorder=None); 'basic,prows' is ILUT's rule
    assert run({"permc_spec": "NATURAL"}) == run({"reorder": None})
    assert "RCM" not in run({"permc_spec": "natural"})[1]
    assert run({"drop_rule": "basic,prows"}) == run({})
    for opts, needle in (({"permc_spec": "COLAMD"}, "reverse Cuthill-McKee order "
                                                    "(reorder='rcm', the default"),
                         ({"drop_rule": "basic,area"}, "not skiff's rule, which is SuperLU's "
                                                       "'basic,prows'"),
                         ({"diag_pivot_thresh": 0.1}, "does not pivot"),
                         ({"relax": 3}, "SuperLU's supernodes")):
        with pytest.raises(ValueError, match="spilu|SuperLU|skiff's ILUT") as err:
            skiff.solve(A, b, method="gmres", precond=("ilut", opts))
        assert needle in str(err.value) and "\n" not in str(err.value), str(err.value)
    with pytest.raises(TypeError, match=r"precond=\('ilut', \{'drop_tol': 1e-05\}\)"):
        skiff.solve(A, b, precond="ilut", drop_tol=1e-5)
