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
    # unset: the job's defaults (None), not a number the front made up
    config = dry_run("solve", "train-nose", front="magic")["config"]
    assert config["t_end"] is None and config["dt"] is None


def test_a_window_too_short_is_refused_before_the_job(runs_dir):
    with pytest.raises(ValueError) as job:
        _march_times(0.05, 0.02)
    with pytest.raises(ValueError, match="fewer than 4 time steps") as front:
        dry_run("solve", "train-nose --t-end 0.05 --dt 0.02", front="magic")
    assert str(job.value) in str(front.value)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
