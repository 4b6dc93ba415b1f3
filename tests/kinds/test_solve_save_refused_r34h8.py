"""Round 34 (h8): two ``--save`` mistakes that solved, then failed the job with no solution
kept, are refused before any job, each in one line with the fix:

- ``solve A.mtx --save x.vtk``: a matrix's solution is a vector (the job failed on "VTK
  export needs a 2D or 3D grid field"); the oracle is the kernel's ``Solution.save`` raising
  on the same vector, and taking ``.npz``.
- ``--save sub/dir/x.npz`` in a folder that is not there (``FileNotFoundError`` in the job),
  on a grid, a matrix and a flow (round 35: the folder is made at launch; a file in the
  way is refused)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

from skiff.jobs.launch import dry_run
from skiff.kernels.solve import solve


def _matrix(n: int = 8):
    T = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    return sp.kronsum(T, T).tocsr()


def test_a_matrix_solution_is_not_a_vtk_field(runs_dir, tmp_path):
    A = _matrix()
    b = np.ones(A.shape[0])
    sol = solve(A, b, rtol=1e-10)
    with pytest.raises(ValueError, match="grid field"):   # the kernel's own refusal
        sol.save(str(tmp_path / "x.vtk"))
    sol.save(str(tmp_path / "x.npz"))                      # and what it takes
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    for words, ns in ((f"{tmp_path / 'A.mtx'}", None), ("A b", {"A": A, "b": b})):
        with pytest.raises(ValueError, match=r"\.vtk writes a grid field.*--save "
                                             r".*x\.npz$"):
            dry_run("solve", f"{words} --save {tmp_path / 'x.vtk'}", user_ns=ns,
                    front="magic" if ns else "cli")
        config = dry_run("solve", f"{words} --save {tmp_path / 'y.npz'}", user_ns=ns,
                         front="magic" if ns else "cli")["config"]
        assert str(config["save"]).endswith("y.npz")
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


@pytest.mark.parametrize("words", ["poisson --grid 16x16 --save {d}/x.npz",
                                   "poisson --grid 16x16 --save {d}/x.vtk",
                                   "cylinder --save {d}/c.vtu"])
def test_save_into_a_folder_that_is_not_there(runs_dir, tmp_path, words):
    """Round 35: a missing folder is made when the job starts (one rule for every output
    path: tests/kinds/test_output_folders_r35h8.py); a dry run takes it and makes nothing."""
    missing = tmp_path / "sub" / "dir"
    assert dry_run("solve", words.format(d=missing))["config"]["save"]
    assert not (tmp_path / "sub").exists()
    (tmp_path / "sub").write_text("a file where the folder would be")
    with pytest.raises(ValueError, match=r"sub is a file, not a folder"):
        dry_run("solve", words.format(d=missing))
