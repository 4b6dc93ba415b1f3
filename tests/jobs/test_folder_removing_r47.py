"""Round 47: a job whose folder was being removed while its kind failed ended with
"FileNotFoundError ... logs/traceback.txt" when the removal had not yet reached config.json
(seen under load in test_folder_removed_said_once_r40h8). A missing file of the folder while
the removal goes on is that removal: said as the folder removed, once."""

from __future__ import annotations

import threading
import time

from skiff.jobs import Job


def _job(tmp_path):
    job = Job.__new__(Job)
    job.run_dir = tmp_path / "run"
    (job.run_dir / "logs").mkdir(parents=True)
    (job.run_dir / "config.json").write_text("{}")
    return job


def test_a_removal_under_way_is_the_folder_removed(tmp_path):
    job = _job(tmp_path)
    missing = f"FileNotFoundError: [Errno 2] No such file or directory: '{job.run_dir}/logs/x'"
    remover = threading.Timer(0.2, (job.run_dir / "config.json").unlink)
    remover.start()
    try:
        note = job.lost_note(missing)
    finally:
        remover.join()
    assert note.startswith(f"its run folder {job.run_dir} was removed while it ran"), note
    assert note.count(str(job.run_dir)) == 1, note


def test_a_folder_that_stays_keeps_the_message(tmp_path):
    job = _job(tmp_path)
    missing = f"FileNotFoundError: [Errno 2] No such file or directory: '{job.run_dir}/logs/x'"
    start = time.monotonic()
    assert job.lost_note(missing) == missing
    assert time.monotonic() - start < 30  # it gave up waiting (bounded)
    other = "ValueError: a column is missing"
    assert job.lost_note(other) == other
