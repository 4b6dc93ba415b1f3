"""Round 27, as a user: a run folder removed while its job ran (``rm -rf skiff-runs/...`` in
another terminal) made the job's thread die on its next write, with a traceback on stderr
and no final event, and ``python -m skiff train`` (or ``job.wait()``, or a notebook's view)
then waited forever, showing 'running 1% ... ETA 4 min'. A full disk did the same at the
job's last write. Now the job ends failed in the process that ran it, saying why. The
oracle: the job's own outcome (its all-reduce value, the step it was held at) and the
folder's state on disk."""

from __future__ import annotations

import errno
import shutil

from skiff.jobs import launch
from skiff.jobs.events import EventWriter

from .waiting import wait_for


def _held(tmp_path, hold_at=3):
    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 6, "sleep": 0.0, "hold_at": hold_at,
                          "hold_until": str(gate)})
    wait_for(lambda: any("holding until" in (e.get("message") or "") for e in job.events()),
             30, "the hold")
    return job, gate


def test_a_run_folder_removed_while_its_job_runs_ends_it_failed_with_why(tmp_path):
    job, gate = _held(tmp_path)
    wait_for(lambda: job.refresh().done == 2, 30, "the steps before the hold, as a view reads")
    shutil.rmtree(job.run_dir)
    gate.touch()  # its next write (step 3's metric) finds no folder
    job.wait(30)  # bounded: it waited forever
    assert job.status == "failed"
    assert f"its run folder {job.run_dir} was removed while it ran" in job.error
    assert job.state.done == 2  # what was read before stays: the view is not reset
    assert not (job.run_dir / "config.json").exists()  # nothing written back as a run


def test_a_full_disk_at_the_end_ends_the_job_failed_with_what_it_did(tmp_path, monkeypatch):
    job, gate = _held(tmp_path)
    real = EventWriter.write

    def full(self, type, **fields):
        if type == "status" and fields.get("status") == "done":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, type, **fields)

    monkeypatch.setattr(EventWriter, "write", full)
    gate.touch()
    job.wait(30)
    assert job.status == "failed" and "No space left on device" in job.error
    assert "it returned (job.value holds it)" in job.error
    assert job.value == {"steps": 6, "ranks": 1, "allreduce": 6.0}  # what it computed
    monkeypatch.setattr(EventWriter, "write", real)
    assert (job.run_dir / "config.json").is_file()  # the folder is intact: just not its end


def test_the_terminal_command_exits_failed_and_says_why(tmp_path, capsys):
    """``python -m skiff KIND`` follows the job to its end: it returns 1 with the reason
    (run here on a thread, bounded: it never returned)."""
    import threading

    from skiff.cli import FAILED, _follow_and_report
    from skiff.kinds import get

    job, gate = _held(tmp_path)
    codes = []
    follower = threading.Thread(target=lambda: codes.append(
        _follow_and_report(get("demo"), "demo", job, {}, {})), daemon=True)
    follower.start()
    shutil.rmtree(job.run_dir)
    gate.touch()
    follower.join(60)
    assert codes == [FAILED]
    out = capsys.readouterr().out
    assert "was removed while it ran" in out
    assert f"run folder: {job.run_dir} (removed)" in out


def test_a_process_job_whose_folder_is_removed_ends_failed_where_it_was_launched(tmp_path):
    """On MPI ranks (``--runner process``): the ranks die at their next write, mpiexec
    exits, and its watcher could write no end: ``job.wait()`` (and the terminal command
    following it) waited forever. Now the launching process shows it failed, with why."""
    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 6, "sleep": 0.0, "hold_at": 3, "hold_until": str(gate)},
                 runner="process")
    wait_for(lambda: job.refresh().done == 2, 60, "the steps before the hold")
    shutil.rmtree(job.run_dir)
    gate.touch()
    job.wait(60)
    assert job.status == "failed"
    assert f"its run folder {job.run_dir} was removed while it ran" in job.error
    assert "mpiexec exited" in job.error


def test_a_job_followed_from_another_process_ends_there_too(tmp_path):
    """``jobs wait ID`` (or a second notebook's view) follows a job run elsewhere: its run
    folder removed, it waited forever while the job's process lived."""
    from skiff.jobs import Job

    job, gate = _held(tmp_path)
    try:
        elsewhere = Job(job.run_dir)  # as another process builds it (not this one's live job)
        elsewhere._reattach()
        assert not elsewhere.done
        shutil.rmtree(job.run_dir)
        elsewhere.wait(30)
        assert elsewhere.status == "failed"
        assert "was removed while it ran" in elsewhere.error
    finally:
        gate.touch()
        job.wait(30)
