"""Round 43 (h7): the solve kind's ``--schwarz`` (the overlap's form over the ranks,
``kernels/solve/parallel/rows.py``) reaches the config, the row solver and its summary; what
has no overlap, one rank, or CG with the unsymmetric form is refused in one line."""

from __future__ import annotations

import pytest
import scipy.sparse as sp

from skiff.jobs import submit
from skiff.jobs.launch import dry_run
from skiff.kernels.solve.parallel.rows_job import RowJobSolver, check_row_split


def _laplacian(n=6):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return sp.csr_matrix(sp.kronsum(T, T))


def test_schwarz_weighted_reaches_the_config_and_the_solver_line(tmp_path):
    sp.save_npz(tmp_path / "A.npz", _laplacian())
    cfg = dry_run("solve", f"{tmp_path / 'A.npz'} --np 2 --precond ilu --overlap 1 "
                           f"--schwarz weighted")["config"]
    assert (cfg["overlap"], cfg["schwarz"]) == (1, "weighted")
    s = RowJobSolver(_laplacian(), method="cg", precond="ilu", overlap=1, coarse="none",
                     schwarz=cfg["schwarz"])
    assert s.rows.schwarz == "weighted" and "overlap-1 weighted schwarz ilu" in s.describe()


@pytest.mark.parametrize("args, needle", [
    (dict(method="cg", precond="ilu", overlap=0, schwarz="weighted"), "there is no overlap"),
    (dict(method="cg", precond="ilu", overlap=1, schwarz="restrict"), "not symmetric"),
])
def test_schwarz_refusals(args, needle):
    with pytest.raises(ValueError, match=needle) as err:
        check_row_split(ranks=2, **args)
    assert "\n" not in str(err.value)
    check_row_split(ranks=2, method="bicgstab", precond="ilu", overlap=1, schwarz="restrict")


def test_schwarz_on_one_rank_is_one_line(runs_dir, tmp_path):
    sp.save_npz(tmp_path / "A.npz", _laplacian())
    with pytest.raises((ValueError, SystemExit)) as err:
        submit("solve", f"{tmp_path / 'A.npz'} --schwarz weighted")
    msg = str(err.value)
    assert "--schwarz shapes the split of a matrix file's rows" in msg and "\n" not in msg.strip()
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
