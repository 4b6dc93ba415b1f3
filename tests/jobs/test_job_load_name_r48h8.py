"""Round 48 (h8): ``Job.load(NAME)`` (the Python API, ``skiff.Job.load``) of a ``--name``
two jobs share took the newest and said nothing, where ``jobs show NAME`` (both fronts,
round 47) refuses it in one line that lists them and how to choose. Now it refuses it in
the same words (:class:`SeveralJobs`, a ``KeyError``); a run resumed under its name is
still its newest (``tests/cli/test_resume_name_and_cancel_r27.py``). The oracle: the
terminal's refusal and the ids ``launch`` returned."""

from __future__ import annotations

import pytest

from skiff.jobs import Job, SeveralJobs, launch
from tests.helpers.cli import run_cli


def test_a_name_two_jobs_share_is_refused_as_the_terminal_refuses_it(capsys):
    first, second = (launch("demo", {"steps": 1, "sleep": 0.0}, name="twin").wait(120)
                     for _ in range(2))
    out = run_cli(capsys, "jobs", "show", "twin")
    assert out.returncode == 2
    with pytest.raises(SeveralJobs) as caught:
        Job.load("twin")
    assert out.stderr.strip() == f"skiff jobs: {caught.value}"
    assert caught.value.folders == [second.run_dir, first.run_dir]
    assert isinstance(caught.value, KeyError)  # what `no job 'X'` raises: one except for both
    # an id, or its run folder, is one job still; a name one job has is that job
    assert Job.load(first.id) is first and Job.load(second.run_dir) is second
    alone = launch("demo", {"steps": 1, "sleep": 0.0}, name="alone").wait(120)
    assert Job.load("alone") is alone


def test_a_slurm_job_written_from_python_takes_a_name_as_launch_does(capsys):
    """``launch_slurm(..., name=N)`` was "sbatch_script() got an unexpected keyword argument
    'name'" (``launch(..., name=N)`` takes it); its job is then found by that name."""
    import json

    from skiff.jobs.slurm import launch_slurm

    written = launch_slurm("demo", {"steps": 1}, nodes=1, name="r48queued")
    job = Job.load("r48queued", metrics=False)
    assert str(job.run_dir) == written["run_dir"] and job.status == "queued"
    out = run_cli(capsys, "jobs", "ls", "--json")
    assert [(j["name"], j["status"]) for j in json.loads(out.stdout)] == \
        [("r48queued", "queued")]
