"""Round 42, as a user: ``job = %train ...`` then ``job.value.model`` in the next cell, the
job still running, said "'NoneType' object has no attribute 'model'". A running job's
``value`` now raises :class:`JobNotDone` saying it is still running and that
``job.wait().value`` waits for it; once the job has ended it is what the job returned (the
oracle: the demo kind's own result, the sum it reports as its last metric)."""

from __future__ import annotations

import pytest

from skiff.jobs import JobNotDone, launch

from .waiting import wait_for


def test_value_of_a_running_job_says_wait_then_is_the_result(tmp_path):
    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2, "hold_until": str(gate)})
    try:
        wait_for(lambda: any("holding until" in m for _, _, m in job.refresh().logs),
                 30, "the hold at step 2")
        with pytest.raises(JobNotDone) as err:
            job.value.model  # noqa: B018 - what a user types
        said = str(err.value)
        assert job.id in said and "still running" in said and "job.wait().value" in said
        assert "NoneType" not in said
    finally:
        gate.touch()
    value = job.wait(30).value
    assert job.status == "done" and isinstance(value, dict)
    assert value == job.result  # the object it returned, the summary written of it


def test_value_of_a_failed_job_is_none_not_an_error(tmp_path):
    job = launch("demo", {"steps": 3, "sleep": 0.0, "fail_at": 1}).wait(30)
    assert job.status == "failed" and job.value is None
