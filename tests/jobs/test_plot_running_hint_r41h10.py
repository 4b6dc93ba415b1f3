"""README's tour line ``job.progress; job.metrics; job.logs; job.plot()`` run right after a
launch: the job has reported nothing yet, and ``job.plot()``'s error said only "no metric with
two points or more (points per metric: none)". A running job's error says it is running and
how to wait for it or follow it; an ended job's error stays as it was (round 41, h10)."""

from __future__ import annotations

import time

import pytest

from skiff.jobs import launch


def test_plot_of_a_job_not_yet_reporting_says_how_to_wait(runs_dir, tmp_path):
    hold = tmp_path / "go"
    # held before its first step: no metric can have been written, whatever the load
    job = launch("demo", {"steps": 1, "sleep": 0.0, "hold_at": 1, "hold_until": str(hold)})
    try:
        deadline = time.monotonic() + 60
        while not any("holding until" in m for _t, _l, m in job.state.logs):
            assert time.monotonic() < deadline and not job.done, job.error
            time.sleep(0.05)
        with pytest.raises(ValueError) as err:
            job.plot()
        text = str(err.value)
        assert "points per metric: none" in text, text
        assert "running" in text and "job.wait()" in text and f"%jobs show {job.id} -f" in text
    finally:
        hold.write_text("")
    assert job.wait(60).status == "done", job.error
    # ended with one step: its one-point metrics cannot be drawn either, and no hint to wait
    with pytest.raises(ValueError) as err:
        job.plot()
    assert "no metric with two points" in str(err.value), str(err.value)
    assert "job.wait()" not in str(err.value), str(err.value)
