"""Job lists as people read them: newest first, filtered, with a header, names and the
command that started each job; rm and prune remove finished runs only."""

from __future__ import annotations

import json
import time

import pytest

from skiff.cli import main
from skiff.jobs import Job, jobs_action, launch, submit
from skiff.jobs.render import JobTable


def _demo(root, steps=1, sleep=0.0, **kw):
    return launch("demo", {"steps": steps, "sleep": sleep}, root=root, **kw)


def test_newest_first_with_a_limit_that_says_what_it_hides(tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path))
    ids = []
    for _ in range(4):
        ids.append(_demo(tmp_path).wait(10).id)
        time.sleep(0.01)
    listed = jobs_action("list", limit=3)
    assert [j.id for j in listed] == ids[::-1][:3] and listed.hidden == 1
    text = repr(JobTable(listed))
    assert text.splitlines()[0].split()[:4] == ["ID", "NAME", "KIND", "STATUS"]
    assert "1 older job not shown" in text and "1 older job not shown" in \
        JobTable(listed)._repr_html_()
    assert [j.id for j in jobs_action("list", all=True)] == ids[::-1]


def test_filters_by_kind_and_status(tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path))
    ok = _demo(tmp_path).wait(10)
    bad = launch("demo", {"steps": 2, "sleep": 0.0, "fail_at": 1}, root=tmp_path).wait(10)
    assert [j.id for j in jobs_action("list", status="failed")] == [bad.id]
    assert [j.id for j in jobs_action("list", status="done")] == [ok.id]
    assert jobs_action("list", kind="solve") == []


def test_name_and_command_are_kept_and_shown(tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path))
    job, _ = submit("solve", "poisson --grid 16x16 --name tiny-poisson")
    job.wait(30)
    assert job.summary()["name"] == "tiny-poisson"
    assert job.summary()["command"] == "%solve poisson --grid 16x16 --name tiny-poisson"
    assert Job.load("tiny-poisson").id == job.id  # a name finds the job
    row = repr(JobTable(jobs_action("list"))).splitlines()[1]
    assert "tiny-poisson" in row and "%solve poisson --grid 16x16" in row


def test_rm_removes_finished_jobs_and_refuses_a_running_one(tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path))
    done = _demo(tmp_path).wait(10)
    running = _demo(tmp_path, steps=200, sleep=0.05)
    try:
        with pytest.raises(ValueError, match="is still (queued|running): cancel it first"):
            jobs_action("rm", running.id, more_ids=(done.id,))
        assert done.run_dir.exists()  # nothing removed when one is refused
        assert jobs_action("rm", done.id) == [done.id] and not done.run_dir.exists()
    finally:
        running.cancel(grace=1.0)
        running.wait(15)


def test_prune_needs_a_rule_and_keeps_the_newest(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path))
    jobs = [_demo(tmp_path).wait(10) for _ in range(3)]
    assert main(["jobs", "prune"]) == 2
    assert "--older-than" in capsys.readouterr().err
    assert main(["jobs", "prune", "--older-than", "1h"]) == 0  # all are younger
    assert "no job removed" in capsys.readouterr().out
    assert main(["jobs", "prune", "--keep", "1", "--json"]) == 0
    removed = json.loads(capsys.readouterr().out)["removed"]
    assert sorted(removed) == sorted(j.id for j in jobs[:2])
    assert [j.id for j in jobs_action("list")] == [jobs[2].id]


def test_a_mistyped_kind_is_said(runs_dir):
    """A mistyped --kind listed "no jobs yet"."""
    import pytest

    from skiff.jobs import jobs_action

    with pytest.raises(ValueError, match="unknown kind 'ocrr' \\(did you mean 'ocr'\\?\\)"):
        jobs_action("list", kind="ocrr")
    with pytest.raises(ValueError, match="unknown kind 'trian'"):
        jobs_action("prune", kind="trian", keep=1)
    assert jobs_action("list", kind="train") == []


def test_an_empty_listing_says_where_it_looked(runs_dir):
    """"no jobs yet" alone puzzled a user whose terminal sat in another folder than the
    notebook (each folder has its own skiff-runs)."""
    from skiff.jobs import jobs_action
    from skiff.jobs.render import JobTable

    empty = JobTable(jobs_action("list"))
    assert repr(empty) == f"no jobs yet in {runs_dir} (SKIFF_RUNS=DIR looks in another folder)"
    assert str(runs_dir) in empty._repr_html_()
    launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    none = JobTable(jobs_action("list", kind="solve", status="failed"))
    assert repr(none) == f"no failed solve job among the 1 in {runs_dir}"


def test_a_kind_of_the_users_own_can_be_listed(runs_dir):
    """``skiff.launch("sweep", fn=...)`` jobs could not be filtered: --kind sweep was an
    unknown kind."""
    mine = launch("sweep", fn=lambda c, r: None).wait(10)
    launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    assert [j.id for j in jobs_action("list", kind="sweep")] == [mine.id]
    with pytest.raises(ValueError, match="unknown kind 'swep' \\(did you mean 'sweep'\\?\\)"):
        jobs_action("list", kind="swep")
