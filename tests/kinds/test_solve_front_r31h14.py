"""Round 31 (h14): users' findings in the solve front.

1. ``%solve train-nose --t-end 60 --dt 0.01`` was refused as a cylinder-only option although
   the nose job reads both keys (``nose_job.solve_nose_job``): the oracle is the job's own
   check ``_march_times``, which takes the same values and refuses the same bad ones.
"""

from __future__ import annotations

import pytest

from skiff.jobs.launch import dry_run
from skiff.kernels.solve.flow.nose_job import _march_times


def test_train_nose_takes_its_time_window(runs_dir):
    config = dry_run("solve", "train-nose --t-end 60 --dt 0.01", front="magic")["config"]
    assert config["t_end"] == 60.0 and config["dt"] == 0.01
    assert _march_times(config["t_end"], config["dt"]) == {"t_end": 60.0, "dt": 0.01}
    # unset: the job's defaults, not a number the front made up (the config as before)
    config = dry_run("solve", "train-nose", front="magic")["config"]
    assert "t_end" not in config and "dt" not in config


def test_a_window_too_short_is_refused_before_the_job(runs_dir):
    with pytest.raises(ValueError) as job:
        _march_times(0.05, 0.02)
    with pytest.raises(ValueError, match="fewer than 4 time steps") as front:
        dry_run("solve", "train-nose --t-end 0.05 --dt 0.02", front="magic")
    assert str(job.value) in str(front.value)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


# 2. a matrix that is not square says its shape; a NaN in B is refused before any job

def test_a_rectangular_matrix_says_its_shape(runs_dir):
    import numpy as np

    A = np.arange(12.0).reshape(3, 4)
    with pytest.raises(TypeError, match=r"3x4 ndarray \(not square: 3 equations, 4 unknowns"):
        dry_run("solve", "A b", front="magic", user_ns={"A": A, "b": np.ones(3)})


@pytest.mark.parametrize("where", [0, 7, 15])
def test_a_nan_in_b_is_refused_naming_the_first(runs_dir, where):
    import numpy as np
    import scipy.sparse as sp

    A = sp.diags([-np.ones(15), 2 * np.ones(16), -np.ones(15)], [-1, 0, 1]).tocsr()
    b = np.ones(16)
    b[where] = np.nan
    b[-1] = np.inf if where != 15 else b[-1]
    oracle = int(np.flatnonzero(~np.isfinite(b))[0])      # numpy's own first non-finite
    with pytest.raises(ValueError, match=rf"the first is b\[{oracle}\] = nan"):
        dry_run("solve", "A b", front="magic", user_ns={"A": A, "b": b})
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_a_nan_in_a_b_file_is_refused(runs_dir, tmp_path, monkeypatch):
    import numpy as np
    import scipy.io
    import scipy.sparse as sp

    monkeypatch.chdir(tmp_path)
    A = sp.diags([-np.ones(9), 2 * np.ones(10), -np.ones(9)], [-1, 0, 1]).tocsr()
    scipy.io.mmwrite("A.mtx", A)
    b = np.ones(10)
    b[4] = np.nan
    np.savetxt("b.txt", b)
    with pytest.raises(ValueError, match=r"the first is b\[4\] = nan"):
        dry_run("solve", "A.mtx b.txt", front="magic")
