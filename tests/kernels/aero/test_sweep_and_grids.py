"""The sweep's worker processes against the same solves in this process, and its checks. (The
learned grid on a held-out shape against uniform refinement and a grid-converged drag is in
tests/kernels/solve/flow/test_graded_re_r29.py since round 46, whose solves of that shape
start from its flow.)"""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.aero import HELD_OUT_SHAPES, TRAINING_SHAPES, solve_nose, sweep


def test_sweep_checks_its_input():
    with pytest.raises(ValueError, match="clearance must be > 0"):
        sweep(2, clearance=(-0.1, 0.2))
    with pytest.raises(ValueError, match="length range must have lo < hi"):
        sweep(2, length=(4.0, 3.0))
    with pytest.raises(ValueError, match="more than this machine's"):
        sweep(2, np=10_000)
    with pytest.raises(ValueError, match="Reynolds number must be > 0"):
        sweep(2, re=0)
    # a range as the other parameters take (round 22: "must be a number > 0, got (0, 100)")
    with pytest.raises(ValueError, match="re is one Reynolds number for the whole sweep"):
        sweep(2, re=(100, 1000))


def test_the_surrogate_fits_the_samples_of_a_sweep_only():
    from skiff.kernels.aero import Surrogate

    with pytest.raises(TypeError, match="takes the Samples of a sweep"):
        Surrogate.fit([{"length": 3, "cd": 1.0}])


@pytest.mark.slow
def test_sweep_processes_match_solves_here():
    """Two shapes on two worker processes give the drag the same solves give here."""
    box = dict(length=(2.0, 3.0), bluntness=(0.3, 0.6), clearance=(0.25, 0.3))
    s = sweep(2, **box, re=50.0, adapt="graded", resolution=16, np=2, seed=3)
    assert len(s) == 2 and s.workers == 2 and not s.failed, s.failed
    for row, cd in zip(s.params, s.cd):
        here = solve_nose(*row, re=50.0, adapt="graded", resolution=16, keep=False)
        assert cd == pytest.approx(here.cd, rel=1e-9)
    assert s.wall_seconds > 0 and np.all(s.seconds > 0)
    bad = sweep(1, **box, re=50.0, adapt="graded", resolution=8, np=1, seed=3)
    assert len(bad) == 0 and "too coarse to hold the body" in bad.failed[0]["error"]


def test_held_out_shapes_are_not_training_shapes():
    assert not set(HELD_OUT_SHAPES) & set(TRAINING_SHAPES)
