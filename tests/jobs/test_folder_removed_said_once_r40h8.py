"""Round 40: a job whose run folder was removed while it ran ended failed with "its run folder
DIR was removed while it ran (...) - FileNotFoundError: [Errno 2] No such file or directory:
'DIR/events.jsonl'": the folder's path twice, the second time as a file of it not found (the
removal itself); ``%jobs show j`` of that job's variable then said the path a third time.
Each says the folder once now, and keeps what else there was to say. The oracle: the folder
was removed by the test, so nothing in it can have been found."""

from __future__ import annotations

import shutil
import time

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import Job, launch


def _held_demo(tmp_path):
    release = tmp_path / "release"
    job = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2, "hold_until": str(release)})
    deadline = time.time() + 60
    while job.refresh().done < 1 and time.time() < deadline:
        time.sleep(0.05)
    assert job.status == "running"
    return job, release


def _remove(folder):
    """Remove the folder a job still writes in (a file it writes meanwhile: again)."""
    for _ in range(20):
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            return
        time.sleep(0.05)
    raise AssertionError(f"{folder} could not be removed")


def test_the_removed_folder_is_said_once(runs_dir, tmp_path):
    job, release = _held_demo(tmp_path)
    _remove(job.run_dir)
    release.touch()
    job.wait(timeout=60)
    assert job.status == "failed"
    assert job.error.startswith(f"its run folder {job.run_dir} was removed while it ran")
    assert job.error.count(str(job.run_dir)) == 1, job.error
    assert "No such file or directory" not in job.error


def test_what_else_the_message_says_is_kept(runs_dir, tmp_path):
    job = Job.__new__(Job)
    job.run_dir = tmp_path / "gone"
    missing = f"[Errno 2] No such file or directory: '{job.run_dir}/result.json'"
    assert job.lost_note(f"it returned (job.value holds it); its end could not be written "
                         f"(FileNotFoundError: {missing})").endswith(
        "(the job stops: nothing more can be recorded) - it returned (job.value holds it)")
    other = "PermissionError: [Errno 13] Permission denied: '/elsewhere'"
    assert job.lost_note(other).endswith(f" - {other}")


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    yield ip
    ip.user_ns.pop("removed40", None)


def test_jobs_show_of_its_variable_says_the_folder_once(shell, runs_dir, tmp_path):
    job, release = _held_demo(tmp_path)
    shell.user_ns["removed40"] = job
    _remove(job.run_dir)
    release.touch()
    job.wait(timeout=60)
    with pytest.raises(UsageError) as err:
        shell.run_line_magic("jobs", "show removed40")
    message = str(err.value)
    assert message.startswith(f"removed40 holds job {job.id}, whose run folder "
                              f"{job.run_dir} was removed while it ran (it ended failed)")
    assert message.endswith("nothing of it is left for %jobs show")
    assert message.count(str(job.run_dir)) == 1, message
