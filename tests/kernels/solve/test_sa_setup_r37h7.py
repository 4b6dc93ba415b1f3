"""Round 37 (h7): evolution strength of a symmetric matrix in one numba pass
(``amg_strength._evolution_sym_py``) against the formed ``Z``, ``Z^T`` and ``S + S^T`` of the
general path, and SA's hierarchy with it against the one without (docs/solve.md "Round 37")."""

import numpy as np
import pytest
import scipy.sparse as sp

import skiff.kernels.solve.amg_strength as ev
from skiff.kernels.solve.amg import SmoothedAggregation


def _lap27(n):
    one = sp.diags([1.0, 1.0, 1.0], [-1, 0, 1], shape=(n, n))
    return (27.0 * sp.identity(n ** 3) - sp.kron(sp.kron(one, one), one)).tocsr()


def _mixed(n=200, seed=3):
    """SPD with off-diagonal entries of both signs, an explicit zero and a varied diagonal."""
    M = sp.random(n, n, 0.04, random_state=seed, data_rvs=lambda k: np.random.default_rng(
        seed).uniform(-1, 0.4, k))
    M = (M + M.T).tocsr()
    M = (M + sp.diags(np.asarray(abs(M).sum(1)).ravel() * np.linspace(1.05, 3, n))).tocsr()
    gap = M.indices - np.repeat(np.arange(n), np.diff(M.indptr))
    M.data[abs(gap) == 1] = 0.0   # explicit zeros on both sides: a symmetric pattern
    M.sort_indices()
    return M


def _general(A, **kw):
    """The formed path: what evolution_strength did before round 37."""
    B = sp.csr_matrix(A, copy=True)
    B.has_canonical_format = False
    return ev.evolution_strength(B, **kw)


def _grid(eps, n=24):
    e = np.ones(n)
    D = sp.diags([-e, 2 * e, -e], [-1, 0, 1], (n, n))
    I = sp.identity(n)
    return (sp.kron(D, I) + eps * sp.kron(I, D)).tocsr()


@pytest.mark.parametrize("make", [lambda: _lap27(6), _mixed, lambda: _grid(1e-2)])
def test_one_pass_evolution_strength_equals_the_formed_one(make, monkeypatch):
    A = make()
    A.sum_duplicates()
    ref = _general(A, symmetric=True)
    fast = ev.evolution_strength(A, symmetric=True)   # numba's kernel
    assert ref.nnz > 0 and (fast != ref).nnz == 0 and fast.nnz == ref.nnz
    d = A.diagonal()
    rho = ev.rho_dinv_a(A, 1 / d)
    indptr, indices = ev._evolution_sym_py(A.indptr, A.indices, A.data, 1 / d, 1 / rho,
                                           np.ones(A.shape[0]), 4.0)   # the Python twin
    twin = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=A.shape)
    assert (twin != ref).nnz == 0


def test_a_pattern_that_is_not_symmetric_takes_the_general_path():
    A = _grid(0.5, 8).tolil()
    A[0, 1] = 0.0            # an explicit zero on one side only: values symmetric within
    A[1, 0] = -1e-300        # 1e-8, patterns not
    A = A.tocsr()
    d = A.diagonal()
    out = ev._evolution_sym_py(A.indptr, A.indices, A.data, 1 / d, 0.2, np.ones(64), 4.0)
    assert out[0].shape == (1,)
    assert (ev.evolution_strength(A, symmetric=True) != _general(A, symmetric=True)).nnz == 0


def test_sa_hierarchy_is_the_same_with_and_without_the_one_pass_kernel(monkeypatch):
    A = _lap27(14)
    fast = SmoothedAggregation(A, max_coarse=50)
    monkeypatch.setattr(ev, "_evolution_symmetric", lambda *a: None)
    ref = SmoothedAggregation(A, max_coarse=50)
    assert len(fast.levels) == len(ref.levels) >= 2
    for a, b in zip(fast.levels[:-1], ref.levels[:-1]):
        for X, Y in ((a[0], b[0]), (a[3], b[3])):
            assert X.shape == Y.shape
            assert abs(X - Y).max() <= 1e-14 * abs(Y).max()


@pytest.mark.parametrize("theta", [0.0, 0.03])
@pytest.mark.parametrize("make", [lambda: _lap27(6), _mixed, lambda: _grid(1e-2)])
def test_symmetric_strength_kernel_equals_its_numpy_form(make, theta):
    from skiff.kernels.solve import amg

    A = make()
    ref = amg._strength_numpy(A, theta)
    assert ref.nnz > 0 and (amg.strength(A, theta) != ref).nnz == 0   # numba
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    indptr, indices, sym = amg._strength_py(A.indptr, A.indices, np.abs(A.data),
                                            np.abs(A.diagonal()), theta)   # the twin
    assert sym and (sp.csr_matrix((np.ones(indices.size), indices, indptr), A.shape)
                    != ref).nnz == 0
    B = A.tolil()
    B[0, A.shape[0] - 1] = -5.0   # one entry without its mirror: symmetrised after
    B = B.tocsr()
    assert not amg._strength_py(B.indptr, B.indices, np.abs(B.data), np.abs(B.diagonal()),
                                theta)[2]
    assert (amg.strength(B, theta) != amg._strength_numpy(B, theta)).nnz == 0


@pytest.mark.parametrize("make", [lambda: _lap27(16), lambda: _grid(1.0, 100)])
def test_a_constant_coefficient_stencil_gets_pyamgs_sa_levels(make):
    pyamg = pytest.importorskip("pyamg")
    A = make()
    ours = SmoothedAggregation(A)   # strength 'auto': symmetric for the uniform stencil
    theirs = pyamg.smoothed_aggregation_solver(A, max_coarse=400)
    assert ours.strength == "symmetric"
    assert [lv[0].shape[0] for lv in ours.levels] == \
        [lv.A.shape[0] for lv in theirs.levels]
    # anisotropy is not a uniform stencil: evolution strength stays
    assert SmoothedAggregation(_grid(1e-2, 40)).strength == "evolution"


def test_a_shifted_indefinite_laplacian_keeps_evolution_strength():
    A = (_grid(1.0, 30) - 0.5 * sp.identity(900)).tocsr()   # uniform stencil, not dominant
    assert SmoothedAggregation(A).strength == "evolution"
    assert SmoothedAggregation((_grid(1.0, 30) + 0.5 * sp.identity(900)).tocsr()).strength \
        == "symmetric"


def test_the_uniform_stencil_kernel_answers_as_its_numpy_form():
    from skiff.kernels.solve import amg

    cases = {"27-point": (_lap27(6), True), "5-point": (_grid(1.0, 20), True),
             "+ shift": ((_grid(1.0, 20) + 0.5 * sp.identity(400)).tocsr(), True),
             "- shift": ((_grid(1.0, 20) - 0.5 * sp.identity(400)).tocsr(), False),
             "anisotropy": (_grid(1e-2, 20), False), "mixed": (_mixed(), False)}
    for name, (A, want) in cases.items():
        A.sum_duplicates()
        got = (amg._uniform_stencil(A), amg._uniform_py(A.indptr, A.indices, A.data),
               amg._uniform_numpy(A))
        assert got == (want, want, want), name
