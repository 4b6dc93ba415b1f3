"""Round 36: ``jobs logs ID -f`` of a job whose run folder was removed while it ran ended
with status 1 and not a word: the job's end (failed, "its run folder ... was removed while it
ran") is known to the follower but written in no log line. The follower
(``render.follow_logs``, what ``jobs logs -f`` and ``%jobs logs -f`` run) now prints it. The
oracle: the error of the runner that ran it (``job.error``), and the folder gone."""

from __future__ import annotations

import shutil
import threading

from skiff.jobs import Job, launch
from skiff.jobs.render import follow_logs
from tests.jobs.waiting import wait_for


def test_the_follower_says_why_the_job_ended(runs_dir):
    job = launch("demo", {"steps": 2000, "sleep": 0.01}, runner="thread")
    wait_for(lambda: job.refresh().status == "running", 30, "the demo job to run")

    def remove():
        def removed():  # the job may write a file again while rmtree empties the folder
            shutil.rmtree(job.run_dir, ignore_errors=True)
            return not job.run_dir.exists()

        wait_for(removed, 10, "the run folder removed")

    remover = threading.Thread(target=remove, daemon=True)
    lines = []

    def stop():  # asked after each read: the follower has the job; now remove its folder
        if remover.ident is None:
            remover.start()
        return False

    followed = follow_logs(Job.load(job.id), lines.append, poll_s=0.05, stop=stop)
    remover.join(10)
    assert not job.run_dir.exists() and followed.status == "failed"
    assert lines[-1].startswith(f"{job.id} failed: its run folder {job.run_dir} was removed "
                                "while it ran"), lines[-3:]
    assert job.wait(30).status == "failed"   # what the runner that ran it says
    assert job.error.startswith(lines[-1].split(": ", 1)[1].split(" - ")[0])
