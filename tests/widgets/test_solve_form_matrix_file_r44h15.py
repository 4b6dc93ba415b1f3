"""Round 44 (h15): the Solve form takes a matrix file, as ``%solve A.mtx b.npy`` does.

The form refused every matrix file, with a message that contradicted itself ("'A.mtx' is
not a matrix file skiff reads (Matrix Market .mtx, SciPy .npz or .npy)"): its check was the
built-in problems' config, while the magic and the terminal take the file. A missing file
was "unknown problem ...: choose from poisson, ..." where the terminal says "no such matrix
file". Oracles: SciPy's direct solve of the same system, and the terminal's refusal."""

from __future__ import annotations

import numpy as np
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.widgets.panels import solve_form


def _system(tmp_path):
    n = 40
    rng = np.random.default_rng(3)
    A = sp.diags([-1.0, 2.5, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    b = rng.standard_normal(n)
    scipy.io.mmwrite(tmp_path / "A.mtx", A)
    np.save(tmp_path / "b.npy", b)
    return A, b


def test_a_matrix_file_is_solved_from_the_form(tmp_path, runs_dir):
    A, b = _system(tmp_path)
    form = solve_form()
    form.set(problem=str(tmp_path / "A.mtx"), b=str(tmp_path / "b.npy"), rtol=1e-12,
             method="cg", precond="jacobi")
    assert form.values is not None, (form.errors, form.status.value)
    assert form.cli.startswith(f"python -m skiff solve {tmp_path / 'A.mtx'} "
                               f"{tmp_path / 'b.npy'}"), form.cli
    # what Launch runs (its view and the solution's plot left out: matplotlib's seconds)
    job = form.launcher(form, dict(form.values))
    job.wait(120)
    assert job.status == "done", job.error
    x = np.asarray(job.value.x).ravel()
    want = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(x - want) <= 1e-9 * np.linalg.norm(want)


def test_a_missing_matrix_file_is_said_as_the_terminal_says_it(tmp_path):
    form = solve_form()
    form.set(problem=str(tmp_path / "nosuch.mtx"))
    assert form.values is None
    assert form.errors["problem"] == f"no such matrix file: '{tmp_path / 'nosuch.mtx'}'"
    A, _b = _system(tmp_path)
    form.set(problem=str(tmp_path / "A.mtx"), b=str(tmp_path / "nob.npy"))
    assert form.values is None and "no such B file" in str(form.errors), form.errors
