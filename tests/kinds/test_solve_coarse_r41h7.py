"""Round 41 (h7): the solve kind's ``--coarse`` (a coarse level across the ranks of a matrix
file's row split, ``kernels/solve/parallel/coarse.py``) and ``--overlap`` up to 4: in the
config, and one line before any run folder where no row split reads them."""

from __future__ import annotations

import pytest
import scipy.sparse as sp

from skiff.jobs import submit
from skiff.jobs.launch import dry_run


def _laplacian(n=6):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return sp.csr_matrix(sp.kronsum(T, T))


def test_coarse_and_overlap_2_reach_the_config(tmp_path):
    sp.save_npz(tmp_path / "A.npz", _laplacian())
    cfg = dry_run("solve", f"{tmp_path / 'A.npz'} --np 2 --precond ilu --overlap 2 "
                           f"--coarse aggregates")["config"]
    assert (cfg["precond"], cfg["overlap"], cfg["coarse"]) == ("ilu", 2, "aggregates")
    assert "coarse" not in dry_run("solve", f"{tmp_path / 'A.npz'} --np 2")["config"]


@pytest.mark.parametrize("words, needle", [
    ("{A} --coarse aggregates", "--coarse shapes the split of a matrix file's rows over MPI "
                                "ranks"),
    ("{A} --np 2 --precond jacobi --coarse ranks", "--coarse ranks adds a coarse level across "
                                                   "the ranks to a block preconditioner"),
    ("{A} --np 2 --coarse multigrid", "multigrid"),
])
def test_coarse_where_no_split_reads_it_is_one_line(words, needle, runs_dir, tmp_path):
    sp.save_npz(tmp_path / "A.npz", _laplacian())
    with pytest.raises((ValueError, SystemExit)) as err:
        submit("solve", words.format(A=tmp_path / "A.npz"))
    assert needle in str(err.value) and "\n" not in str(err.value).strip(), str(err.value)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
