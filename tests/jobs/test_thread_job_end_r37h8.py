"""Round 37: how a thread job ends when its end is hard to say.

- A job whose final event raised something other than ``OSError`` (a broken writer) raised
  out of its thread: its events file had no end, so every follower in another process (a
  terminal's ``jobs logs -f``, the Lab sidebar) saw it "running" for ever. It is failed,
  the cause said, in the file too.
- A cancel that came after the kind's last look at ``should_stop()`` (a solve that had
  converged) made a whole result "cancelled", with a resume to offer that had nothing left
  to do. A kind never told to stop is "done" (its log says the cancel came late); one told
  to stop that returned what it had is "cancelled", as before.

The oracle: a fresh reader of the run folder (what another process sees), and the kind's
own value."""

from __future__ import annotations

import threading

from skiff.jobs import events, launch
from skiff.jobs.job import Job
from skiff.jobs.reporter import LATE_CANCEL


def test_a_broken_final_write_fails_the_job_for_every_reader(runs_dir, monkeypatch):
    real = events.EventWriter.write

    def write(self, type, **fields):
        if type == "status" and fields.get("status") == "done" and self.rank == 0:
            raise RuntimeError("broken writer")   # the reporter's writer, at the end only
        return real(self, type, **fields)

    monkeypatch.setattr(events.EventWriter, "write", write)
    job = launch("late", fn=lambda config, reporter: {"answer": 42}, runner="thread")
    job.wait(30)
    assert job.status == "failed"
    assert "its end could not be written (RuntimeError: broken writer)" in job.error
    other = Job.load(job.run_dir)        # as a terminal's jobs show ID reads it
    assert other.status == "failed" and "RuntimeError: broken writer" in other.error
    assert other.result == {"answer": 42}  # what it returned was written before


def test_a_writer_broken_for_every_event_still_ends_the_job_here(runs_dir, monkeypatch):
    real = events.EventWriter.write
    broken = threading.Event()

    def write(self, type, **fields):
        if broken.is_set():
            raise RuntimeError("broken writer")
        return real(self, type, **fields)

    def kind(config, reporter):
        broken.set()
        return {"answer": 42}

    monkeypatch.setattr(events.EventWriter, "write", write)
    job = launch("late", fn=kind, runner="thread")
    job.wait(30)
    assert job.status == "failed" and "RuntimeError: broken writer" in job.error


def _held_kind(looks: bool):
    """A kind that waits for ``go``; with ``looks`` it then asks whether to stop and returns
    what it did, else it returns its whole value without asking."""
    started, go = threading.Event(), threading.Event()

    def kind(config, reporter):
        started.set()
        go.wait(30)
        if looks and reporter.should_stop():
            return {"steps": 1, "stopped": "cancelled"}
        return {"steps": 2}

    return kind, started, go


def _cancelled_while_held(looks: bool) -> Job:
    kind, started, go = _held_kind(looks)
    job = launch("late", fn=kind, runner="thread")
    assert started.wait(30)
    job.cancel()
    go.set()
    job.wait(30)
    return job


def test_a_cancel_after_the_last_look_leaves_a_whole_result_done(runs_dir):
    job = _cancelled_while_held(looks=False)
    assert job.status == "done" and job.error is None
    assert job.result == {"steps": 2}
    other = Job.load(job.run_dir)
    assert other.status == "done"
    assert any(LATE_CANCEL in message for _t, _level, message in other.state.logs)


def test_a_kind_told_to_stop_is_cancelled_with_what_it_did(runs_dir):
    job = _cancelled_while_held(looks=True)
    assert job.status == "cancelled"
    assert job.result == {"steps": 1, "stopped": "cancelled"}
    assert not any(LATE_CANCEL in message for _t, _level, message in job.refresh().logs)
