"""Round 36: a run folder that can no longer be written while a job runs (a full disk; a
folder made read-only) failed the job with "PermissionError: [Errno 1] Operation not
permitted" or "OSError: [Errno 28] No space left on device", no file named: ``os.write`` on
an open descriptor carries none. The events writer now names its file. The oracle: the
errno the disk gave, and the path of the events file the job writes."""

from __future__ import annotations

import errno
import os
import types

import pytest

from skiff.jobs import events, launch
from skiff.jobs.events import EventWriter
from tests.jobs.waiting import wait_for


def _full_disk(monkeypatch, after=0):
    """``os`` as the events module sees it, whose ``write`` fails once ``after`` more writes
    have gone through."""
    left = [after]

    def write(fd, data):
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        left[0] -= 1
        return os.write(fd, data)

    fake = types.SimpleNamespace(**{name: getattr(os, name) for name in dir(os)
                                    if not name.startswith("__")})
    fake.write = write
    monkeypatch.setattr(events, "os", fake)


def test_a_failed_write_names_the_events_file(tmp_path, monkeypatch):
    path = tmp_path / "events.jsonl"
    writer = EventWriter(path)
    writer.write("log", message="before")
    _full_disk(monkeypatch)
    with pytest.raises(OSError) as info:
        writer.write("log", message="after")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(path)
    assert f"No space left on device: '{path}'" in str(info.value)


def test_a_thread_job_on_a_full_disk_says_which_file(runs_dir, monkeypatch):
    job = launch("demo", {"steps": 400, "sleep": 0.01}, runner="thread")
    wait_for(lambda: job.refresh().status == "running", 30, "the demo job to run")
    _full_disk(monkeypatch)
    job.wait(60)
    assert job.status == "failed"
    assert f"No space left on device: '{job.run_dir / 'events.jsonl'}'" in job.error
