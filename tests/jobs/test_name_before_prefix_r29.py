"""Round 29, as a user naming jobs: ``--name 2026`` then ``jobs show 2026`` was "job id '2026'
is ambiguous" (every id starts with the year), and ``--name a83e`` then ``jobs show a83e``
showed another job, the one whose id ends in a83e. A job's exact name now comes before a
prefix or suffix of some id. The oracle: the ids ``launch`` returned for each job. (Round
43: the jobs named are 2-step demo jobs, not trainings, and the seven of the ambiguous
prefix are demo jobs too: ~3 CPU s less; a name goes through ``launch(name=)`` either way.)"""

from __future__ import annotations

import pytest

from skiff.cli import main
from skiff.jobs import Job, launch
from skiff.jobs.store import find_run_dir


def _done(name: str | None = None) -> Job:
    job = launch("demo", {"steps": 2, "sleep": 0.0}, name=name)
    assert job.wait(120).status == "done"
    return job


def test_a_name_comes_before_a_prefix_or_suffix(runs_dir, capsys):
    first = _done()
    year = first.id[:4]
    named_year = _done(year)
    tail = first.id.rsplit("-", 1)[1]  # a unique suffix of the first job's id...
    assert find_run_dir(tail).name == first.id
    named_tail = _done(tail)  # ...and another job's name
    assert find_run_dir(year).name == named_year.id
    assert find_run_dir(tail).name == named_tail.id
    assert find_run_dir(first.id).name == first.id  # the whole id: always that job
    capsys.readouterr()
    assert main(["jobs", "show", year, "--json"]) == 0
    assert f'"id": "{named_year.id}"' in capsys.readouterr().out


def test_an_ambiguous_prefix_says_how_many(runs_dir):
    jobs = [_done() for _ in range(7)]
    with pytest.raises(KeyError, match=r"is ambiguous: .* and 2 more \(give more of the id\)"):
        find_run_dir(jobs[0].id[:4])
