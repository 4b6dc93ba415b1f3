"""Round 42 (h7): the solve kind's ``--coarse amg`` (each rank's first AMG level gathered and
solved by an AMG V-cycle, ``kernels/solve/parallel/coarse.py``) reaches the config and the
row solver; the one-rank refusal names it."""

from __future__ import annotations

import pytest
import scipy.sparse as sp

from skiff.jobs import submit
from skiff.jobs.launch import dry_run


def _laplacian(n=6):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return sp.csr_matrix(sp.kronsum(T, T))


def test_coarse_amg_reaches_the_config(tmp_path):
    sp.save_npz(tmp_path / "A.npz", _laplacian())
    cfg = dry_run("solve", f"{tmp_path / 'A.npz'} --np 2 --precond ilu --coarse amg")["config"]
    assert (cfg["precond"], cfg["coarse"]) == ("ilu", "amg")


def test_coarse_amg_on_one_rank_is_one_line(runs_dir, tmp_path):
    sp.save_npz(tmp_path / "A.npz", _laplacian())
    with pytest.raises((ValueError, SystemExit)) as err:
        submit("solve", f"{tmp_path / 'A.npz'} --coarse amg")
    msg = str(err.value)
    assert "--coarse shapes the split of a matrix file's rows" in msg and "\n" not in msg.strip()
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
