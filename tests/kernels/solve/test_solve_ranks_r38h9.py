"""Round 38 (h9): ``skiff.solve(A, b, np=2)`` as a user of ``%solve --np`` writes it.

The function solves in this process; MPI ranks are a job's (``python -m skiff solve ... --np
N``), for the built-in grids only. It used to list every keyword it takes, naming no --np."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve.problems import poisson


def _laplacian(n=20):
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], (n, n))
    return (sp.kron(t, sp.eye(n)) + sp.kron(sp.eye(n), t)).tocsr()


@pytest.mark.parametrize("word", ["np", "ranks", "comm"])
def test_matrix_with_ranks_names_the_cli(word):
    a = _laplacian()
    with pytest.raises(TypeError) as err:
        skiff.solve(a, np.ones(a.shape[0]), **{word: 2})
    text = str(err.value)
    assert f"no {word}= keyword" in text and "an assembled matrix" in text
    assert "python -m skiff solve poisson --grid 300x300 --np 2" in text
    assert "one rank" in text


def test_grid_problem_with_np_says_grid_problem():
    with pytest.raises(TypeError, match="a GridProblem is solved on one rank only.*--np 4"):
        skiff.solve(poisson((16, 16)), np=4)


def test_without_np_the_same_matrix_solves_as_scipy():
    """The refusal is for the keyword only: the call without it gives SciPy's answer."""
    a = _laplacian()
    b = np.arange(a.shape[0], dtype=float)
    sol = skiff.solve(a, b, rtol=1e-12)
    ref = spla.spsolve(a.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-9 * np.linalg.norm(ref)
