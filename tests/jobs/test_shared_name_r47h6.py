"""Round 47 (h6): a ``--name`` two jobs share. ``jobs rm NAME`` removed the newest of them
and said nothing of the other (and show, logs, cancel, wait, resume, trust, attach and
predict took the newest as silently). Now every verb, in both fronts, refuses such a name in
one line that lists the jobs (id and status, newest first) and how to choose (an id, or
``rm NAME --all`` for every one); a run resumed (each later job a resume of another of that
name, as ``jobs resume`` names it) is still the newest for the verbs that look at one job,
and ``rm`` refuses it too. The oracle: the ids ``launch`` returned and the run folders on
disk."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import main
from skiff.jobs import launch

USAGE = 2


def _done(name: str, **kw):
    job = launch("demo", {"steps": 1, "sleep": 0.0}, name=name, **kw)
    assert job.wait(120).status == "done"
    return job


@pytest.fixture
def shell(monkeypatch):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    return shell


def _refused(capsys, argv) -> str:
    assert main(["jobs", *argv]) == USAGE, argv
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_a_shared_name_is_refused_by_every_verb_and_rm_all_removes_both(runs_dir, shell,
                                                                        capsys):
    old, new = _done("twin"), _done("twin")
    capsys.readouterr()
    said = _refused(capsys, ["rm", "twin"])
    assert said.startswith("skiff jobs: the name 'twin' means 2 jobs"), said
    assert f"{new.id} (done), {old.id} (done)" in said and "--all" in said, said
    assert old.run_dir.is_dir() and new.run_dir.is_dir()  # nothing removed
    for verb in ("show", "logs", "cancel", "wait", "resume", "trust", "attach"):
        line = _refused(capsys, [verb, "twin"])
        assert "means 2 jobs" in line and old.id in line and new.id in line, (verb, line)
        assert "--all" not in line, (verb, line)
    for verb in ("show", "rm", "cancel"):
        with pytest.raises(UsageError, match=f"means 2 jobs .*{new.id} .*{old.id}"):
            shell.run_line_magic("jobs", f"{verb} twin")
    assert main(["predict", "twin", "1,2"]) == USAGE
    assert "the name 'twin' means 2 jobs" in capsys.readouterr().err
    assert main(["jobs", "show", old.id, "--json"]) == 0  # an id: that job
    assert f'"id": "{old.id}"' in capsys.readouterr().out
    assert main(["jobs", "rm", "twin", "--all", "--dry-run", "--json"]) == 0
    assert '"would_remove": ["' in capsys.readouterr().out
    assert old.run_dir.is_dir() and new.run_dir.is_dir()
    shell.run_line_magic("jobs", "rm twin --all")
    assert not old.run_dir.exists() and not new.run_dir.exists()


def test_a_run_resumed_is_its_newest_but_rm_still_asks(runs_dir, capsys):
    first = _done("run1")
    again = _done("run1", label=f"resume {first.id}")  # as jobs resume names it
    assert main(["jobs", "show", "run1", "--json"]) == 0
    assert f'"id": "{again.id}"' in capsys.readouterr().out
    said = _refused(capsys, ["rm", "run1"])
    assert "means 2 jobs, one run resumed" in said and "--all" in said, said
    assert first.run_dir.is_dir() and again.run_dir.is_dir()
