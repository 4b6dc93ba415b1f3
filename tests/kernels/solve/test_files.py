"""A system from files, as a terminal user has it: ``python -m skiff solve A.mtx b.npy`` (Matrix
Market, SciPy's sparse .npz, a dense .npy; B as .npy, a text column or Matrix Market, or left
out: b = A 1). SciPy's direct solve is the reference."""

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


def _system(m: int = 30):
    """A 2D Laplacian with a variable reaction term, and a random right-hand side."""
    e = np.ones(m)
    T = sp.diags([-e[:-1], 2 * e, -e[:-1]], [-1, 0, 1])
    A = (sp.kronsum(T, T) + sp.diags(0.5 * np.linspace(0, 1, m * m))).tocsr()
    return A, np.random.default_rng(3).standard_normal(m * m)


def test_each_format_reads_the_same_matrix(tmp_path):
    A, b = _system(12)
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    sp.save_npz(tmp_path / "A.npz", A)
    np.save(tmp_path / "A.npy", A.toarray())
    for name in ("A.mtx", "A.npz", "A.npy"):
        got = read_matrix(tmp_path / name)
        dense = got.toarray() if sp.issparse(got) else got
        assert np.array_equal(dense, A.toarray()), name
    np.save(tmp_path / "b.npy", b)
    np.savetxt(tmp_path / "b.txt", b)
    sio.mmwrite(str(tmp_path / "b.mtx"), b[:, None])
    for name in ("b.npy", "b.txt", "b.mtx"):
        assert np.allclose(read_vector(tmp_path / name, b.size), b, rtol=1e-15, atol=0), name


def test_bad_files_are_one_clear_error(tmp_path):
    (tmp_path / "notes.mtx").write_text("not a matrix\n")
    with pytest.raises(ValueError, match=r"cannot read 'notes.mtx' as a matrix"):
        read_matrix(tmp_path / "notes.mtx")
    np.save(tmp_path / "wide.npy", np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"'wide.npy' holds a 3x4 array; .* square matrix"):
        read_matrix(tmp_path / "wide.npy")
    np.save(tmp_path / "b.npy", np.ones(5))
    with pytest.raises(ValueError, match=r"B 'b.npy' has 5 entries; the matrix has 9 rows"):
        read_vector(tmp_path / "b.npy", 9)
    with pytest.raises(FileNotFoundError, match=r"right-hand side B"):
        read_vector(tmp_path / "none.npy", 9)


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "skiff", "solve", *args], capture_output=True,
                          text=True, timeout=180, cwd=cwd,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})


def test_the_terminal_solves_a_matrix_file(tmp_path, runs_dir, capsys, monkeypatch):
    A, b = _system()
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    np.save(tmp_path / "b.npy", b)
    out = _cli("A.mtx", "b.npy", "--rtol", "1e-10", "--save", "x.npz", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["job"]["status"] == "done" and doc["result"]["converged"]
    x = np.load(tmp_path / "x.npz")["field"].ravel()
    ref = spl.spsolve(A.tocsc(), b)
    assert np.linalg.norm(x - ref) <= 1e-8 * np.linalg.norm(ref)
    from skiff.cli import main  # python -m skiff, in this process (round 41: two more
    # interpreters importing skiff for two refusals; round 42 h14: and for b = A 1)

    monkeypatch.chdir(tmp_path)
    # no B: b = A 1, and the error against the all-ones solution is reported
    capsys.readouterr()
    assert main(["solve", "A.mtx", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["error"] < 1e-6
    # a missing file or a wrong one: one line, exit 2, no run folder made for it
    for args, needle in ((("nothere.mtx",), "no such matrix file: 'nothere.mtx'"),
                         (("A.mtx", "nob.npy"), "no such file for the right-hand side B")):
        capsys.readouterr()
        code = main(["solve", *args])
        err = capsys.readouterr().err
        assert code == 2 and needle in err and "Traceback" not in err, err
