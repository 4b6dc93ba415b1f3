"""Round 44 (h13): the solve kind's ``--precond ilut`` (a threshold ILU with fill, SciPy
spilu's defaults). Oracles: ``spsolve`` for x, SciPy's ``spilu`` + ``gmres`` for the count."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.jobs import submit


def _convection(m=30, eps=1e-3):
    h = 1.0 / (m + 1)
    T = sp.diags([-eps / h**2 - 1 / h, 2 * eps / h**2 + 1 / h, -eps / h**2], [-1, 0, 1],
                 shape=(m, m))
    return sp.kronsum(T, T).tocsr()


def test_precond_ilut_on_a_matrix_file(runs_dir, tmp_path):
    A = _convection()
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    np.save(tmp_path / "b.npy", b)
    job, _ = submit("solve", f"{tmp_path / 'A.mtx'} {tmp_path / 'b.npy'} --method gmres "
                    f"--precond ilut --rtol 1e-10", front="cli")
    assert job.wait(120).status == "done", job.error
    assert job.config["precond"] == "ilut"
    M = spla.spilu(A.tocsc())
    count = [0]
    spla.gmres(A, b, M=spla.LinearOperator(A.shape, M.solve), rtol=1e-10, restart=30,
               callback=lambda r: count.__setitem__(0, count[0] + 1), callback_type="pr_norm")
    assert job.value.iterations <= count[0] + 2        # measured: 4 against spilu's 3
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(np.asarray(job.value.x).ravel() - ref) <= 1e-8 * np.linalg.norm(ref)


@pytest.mark.parametrize("words, needle", [
    ("poisson --grid 16x16 --precond ilut", "--precond ilut factors a matrix's entries "
                                            "(ILUT, a threshold ILU with fill), and 'poisson'"),
    # round 45 (h4): --np 2 --precond ilut runs (each rank's block's ILUT), not with CG
    ("{A} --np 2 --precond ilut --method cg", "--np 2: --precond ilut is not symmetric and CG "
                                              "over the ranks needs a symmetric preconditioner"),
])
def test_where_ilut_does_not_run_is_one_line(words, needle, runs_dir, tmp_path):
    sp.save_npz(tmp_path / "A.npz", _convection(6))
    with pytest.raises(ValueError) as err:
        submit("solve", words.format(A=tmp_path / "A.npz"))
    assert needle in str(err.value) and "\n" not in str(err.value), str(err.value)
