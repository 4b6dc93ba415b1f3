"""Round 27, as a user: ``%train ... --name nb1``, the kernel restarted (the job cancelled),
``%jobs resume nb1``; then ``jobs cancel nb1`` cancelled nothing: the resumed run had no name,
so nb1 was still the old, finished job, and the command showed it as 'cancelled' with exit 0
while the new run went on. Now the resumed run keeps the name, and a cancel of a job that had
already ended says so. The oracle: the run folders themselves (which job each one is, and how
each one ended, from its own events)."""

from __future__ import annotations

from skiff.cli import main
from skiff.jobs import Job, jobs_action, submit
from tests.jobs.waiting import wait_for


def _long_named_train():
    job, _ = submit("train", "mlp --steps 100000 --checkpoint-every 50 --name nb1")
    wait_for(lambda: job.refresh().done >= 60, 120, "a checkpoint of the first run")
    job.cancel()
    assert job.wait(60).status == "cancelled"
    return job


def test_a_resumed_run_keeps_its_name_and_cancel_by_name_stops_it(capsys):
    first = _long_named_train()
    again = jobs_action("resume", "nb1", front="magic")
    try:
        assert again.id != first.id and again.meta["name"] == "nb1"
        assert Job.load("nb1").id == again.id  # the name is the newest run's
        wait_for(lambda: again.refresh().status == "running", 60, "the resumed run")
        assert main(["jobs", "cancel", "nb1"]) == 0
        out = capsys.readouterr()
        assert again.id in out.out and "cancel asked" in out.out
        assert again.wait(60).status == "cancelled"
        assert Job.load(first.id).state.ended < again.state.ended
    finally:
        again.cancel()


def test_cancel_of_a_job_that_had_ended_says_so(capsys):
    job, _ = submit("train", "mlp --steps 2 --name short")
    assert job.wait(120).status == "done"
    assert main(["jobs", "cancel", "short"]) == 0
    out = capsys.readouterr()
    assert f"job {job.id} had already ended (done): nothing to cancel" in out.err
    assert "cancel asked" not in out.out
    assert Job.load(job.id).status == "done"  # nothing written as a cancel
    assert not (job.run_dir / "cancel").exists()


def test_the_magic_says_it_too(capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    job, _ = submit("train", "mlp --steps 2 --name short")
    assert job.wait(120).status == "done"
    shown = shell.run_line_magic("jobs", "cancel short")
    assert shown.id == job.id and shown.status == "done"
    assert f"job {job.id} had already ended (done): nothing to cancel" in capsys.readouterr().out
