"""Complex Matrix Market files (``complex`` and ``hermitian`` fields) are read as
``scipy.io.mmread`` reads them and solved from a terminal; SciPy's ``spsolve`` is the reference."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
import scipy.sparse.linalg as spl

from skiff.kernels.solve.files import read_matrix, read_vector


def _laplacian(m):
    e = np.ones(m)
    T = sp.diags([-e[:-1], 2 * e, -e[:-1]], [-1, 0, 1])
    return sp.kronsum(T, T).tocsr()


def _complex_systems(m=12):
    L = _laplacian(m)
    n = m * m
    # complex symmetric (not Hermitian): a damped Helmholtz-like matrix
    A = (L + 1j * sp.diags(np.linspace(0.1, 1.0, n))).tocsr()
    # Hermitian positive definite, written with Matrix Market's 'hermitian' symmetry
    H = (L + sp.diags(np.linspace(0, 1, n)) + 0.3j * (sp.eye(n, k=1) - sp.eye(n, k=-1))).tocsr()
    rng = np.random.default_rng(7)
    b = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    return A, H, b


def test_complex_matrix_market_reads_as_mmread(tmp_path):
    A, H, b = _complex_systems(6)
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    sio.mmwrite(str(tmp_path / "H.mtx"), H, symmetry="hermitian")
    assert "complex hermitian" in (tmp_path / "H.mtx").read_text().splitlines()[0]
    for name in ("A.mtx", "H.mtx"):
        got = read_matrix(tmp_path / name)
        ref = sio.mmread(str(tmp_path / name))
        assert got.dtype == np.complex128
        assert np.array_equal(got.toarray(), ref.toarray()), name
    sio.mmwrite(str(tmp_path / "b.mtx"), b[:, None])
    np.save(tmp_path / "b.npy", b)
    for name in ("b.mtx", "b.npy"):
        got = read_vector(tmp_path / name, b.size)
        assert got.dtype == np.complex128 and np.allclose(got, b, rtol=1e-15, atol=0), name
    # a real B stays real
    np.save(tmp_path / "r.npy", b.real)
    assert read_vector(tmp_path / "r.npy", b.size).dtype == np.float64


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "skiff", "solve", *args], capture_output=True,
                          text=True, timeout=180, cwd=cwd,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})


@pytest.mark.parametrize("which,method", [("A", "cocg"), ("H", "cg")])
def test_the_terminal_solves_a_complex_matrix_file(tmp_path, runs_dir, which, method,
                                                   capsys, monkeypatch):
    A, H, b = _complex_systems()
    M = A if which == "A" else H
    sio.mmwrite(str(tmp_path / "M.mtx"), M, symmetry="hermitian" if which == "H" else None)
    sio.mmwrite(str(tmp_path / "b.mtx"), b[:, None])
    from skiff.cli import main  # python -m skiff in this process (round 42 h14: an
    # interpreter less each; test_files' terminal test keeps one)

    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(["solve", "M.mtx", "b.mtx", "--rtol", "1e-10", "--save", "x.npz", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    assert doc["job"]["status"] == "done" and doc["result"]["converged"]
    assert doc["result"]["method"] == method   # auto: CG if Hermitian, COCG if A = A^T
    x = np.load(tmp_path / "x.npz")["field"].ravel()
    assert x.dtype == np.complex128
    ref = spl.spsolve(M.tocsc(), b)
    assert np.linalg.norm(x - ref) <= 1e-8 * np.linalg.norm(ref)


def test_a_complex_file_with_a_real_only_preconditioner_is_refused_before_a_job(
        tmp_path, runs_dir, capsys, monkeypatch):
    A, _, b = _complex_systems(6)
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    from skiff.cli import main  # in this process (round 41: an interpreter less)

    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(["solve", "A.mtx", "--precond", "chebyshev"])   # AMG takes complex (r27)
    err = capsys.readouterr().err
    assert code == 2, err   # a usage error, as for a notebook matrix
    assert "complex" in err and "--precond amg, jacobi or none" in err
    assert not runs_dir.exists() or not any(runs_dir.iterdir())   # no run folder was made
    # the remedy works: SciPy's gmres is the reference
    sio.mmwrite(str(tmp_path / "b.mtx"), b[:, None])
    ok = _cli("A.mtx", "b.mtx", "--precond", "jacobi", "--rtol", "1e-10", "--save", "x.npz",
              cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    x = np.load(tmp_path / "x.npz")["field"].ravel()
    assert np.linalg.norm(x - spl.spsolve(A.tocsc(), b)) <= 1e-8 * np.linalg.norm(x)
