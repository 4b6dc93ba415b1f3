"""``python -m skiff solve A.mtx B.csv`` with B of k columns: the kernel solves (n, k) since
round 29 (as SciPy's ``spsolve(A, B)``), but a B file was flattened and refused for its size.
Oracle: SciPy's spsolve(A, B)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve.files import read_vector


@pytest.fixture
def system(tmp_path):
    n = 60
    A = sp.diags([-1.0, 2.1, -1.0], [-1, 0, 1], shape=(n, n)).tocsr()
    B = np.random.default_rng(5).standard_normal((n, 3))
    scipy.io.mmwrite(str(tmp_path / "A.mtx"), A)
    np.savetxt(tmp_path / "B.csv", B, delimiter=",")
    np.save(tmp_path / "Bt.npy", B.T)
    return tmp_path, A, B


def _cli(*args, tmp_path):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", SKIFF_RUNS=str(tmp_path / "runs"))
    return subprocess.run([sys.executable, "-m", "skiff", "solve", *args], capture_output=True,
                          text=True, timeout=180, env=env)


def test_a_b_file_of_several_columns_solves_each(system):
    tmp, A, B = system
    out = _cli(str(tmp / "A.mtx"), str(tmp / "B.csv"), "--rtol", "1e-12", "--save",
               str(tmp / "x.npz"), tmp_path=tmp)
    assert out.returncode == 0, out.stderr
    x = np.load(tmp / "x.npz")["field"]
    want = spla.spsolve(A.tocsc(), B)
    assert x.shape == want.shape == (60, 3)
    np.testing.assert_allclose(x, want, rtol=1e-9, atol=1e-9)
    assert "(60 unknowns, 3 right-hand sides)" in out.stderr + out.stdout
    run = next((tmp / "runs").iterdir())
    assert not (run / "artifacts" / "field.png").exists()  # no grid to draw


def test_a_b_file_laid_out_by_rows_is_refused_naming_its_transpose(system):
    tmp, A, B = system
    with pytest.raises(ValueError, match="3 x 60: the right-hand sides go in its columns"):
        read_vector(tmp / "Bt.npy", 60)
    np.testing.assert_array_equal(read_vector(tmp / "B.csv", 60), np.loadtxt(
        tmp / "B.csv", delimiter=","))
    np.save(tmp / "b1.npy", B[:, :1])  # one column as (n, 1): a plain vector
    assert read_vector(tmp / "b1.npy", 60).shape == (60,)
