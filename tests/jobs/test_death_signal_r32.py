"""A rank ended by SIGTERM (a user's `kill PID` of what `jobs show` names) is said to be
SIGTERM, as mpiexec reports it: MPICH 5's mpiexec prints only "EXIT STRING: Terminated
(signal 15)" with no pid line, and the job said "killed by signal 9 (SIGKILL) (inferred)"
(round 32)."""

import os
import signal

import pytest

from skiff.jobs import launch
from skiff.jobs.process import _death_message, find_mpiexec
from tests.jobs.waiting import wait_for


def _log(tmp_path, text):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "launcher.log").write_text(text)


def test_exit_string_without_pid_names_its_signal(tmp_path):
    _log(tmp_path, "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Terminated (signal 15)\n"
                   "This typically refers to a problem with your application.\n")
    msg = _death_message(tmp_path, 1, 4242)
    assert "signal 15 (SIGTERM)" in msg and "inferred" not in msg, msg


def test_no_report_at_all_is_still_inferred(tmp_path):
    _log(tmp_path, "")
    assert "signal 9 (SIGKILL) (inferred" in _death_message(tmp_path, 1, 4242)


def test_exit_code_is_not_a_signal(tmp_path):
    _log(tmp_path, "EXIT CODE: 3\n")  # a rank's exit status, not a signal
    assert "inferred" in _death_message(tmp_path, 0, 4242)


@pytest.mark.mpi
def test_sigterm_of_a_rank_is_named(runs_dir):
    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    job = launch("demo", {"steps": 10_000, "sleep": 0.02}, np=2)
    pid_file = job.run_dir / "ranks" / "1.pid"
    wait_for(lambda: pid_file.exists() and job.state.done >= 2, 60, "rank 1 to start")
    os.kill(int(pid_file.read_text()), signal.SIGTERM)
    # a SIGTERM is a cancel for every kind since round 33 (jobs/worker.py): the job stops
    # cancelled and names the signal and the rank
    wait_for(lambda: job.done, 30, "the job to stop after SIGTERM")
    assert job.status == "cancelled", (job.status, job.error)
    assert job.error == "stopped by SIGTERM (rank 1)", job.error
