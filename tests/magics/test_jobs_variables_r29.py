"""Round 29, as a notebook user: ``%train ... -o j`` then ``%jobs show j`` said "no job 'j'"
(the variable is the name the user knows the job by), and ``%jobs resume j --wait`` was
"unrecognized arguments: --wait" where every kind's magic takes it. A variable holding a job
now names that job in ``%jobs`` (an id or --name equal to the word still comes first, as
in a terminal), and ``resume --wait`` blocks until the new job ends. The oracle: the jobs'
own ids and the checkpoint files on disk."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import submit


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_a_variable_holding_a_job_names_it(shell, runs_dir):
    shell.run_line_magic("train", "mlp --steps 20 -o j_r29 --wait")
    job = shell.user_ns["j_r29"]
    assert job.status == "done"
    shown = shell.run_line_magic("jobs", "show j_r29")
    assert shown.id == job.id and shown.result["steps"] == 20

    other, _ = submit("train", "mlp --steps 10 --name other_r29")
    assert other.wait(120).status == "done"
    shell.user_ns["other_r29"] = job  # a --name equal to the word: the named job, as the CLI
    assert shell.run_line_magic("jobs", "show other_r29").id == other.id

    shell.run_line_magic("jobs", "resume j_r29 -o k_r29 --wait")
    resumed = shell.user_ns["k_r29"]
    assert resumed.status == "done"  # --wait: ended when the magic returned
    assert resumed.result["resumed"]["from_step"] == 20
    assert (job.run_dir / "checkpoints" / "step-00000040.npz").is_file()

    shell.run_line_magic("jobs", "rm k_r29 j_r29")
    assert not resumed.run_dir.exists() and not job.run_dir.exists()
    assert other.run_dir.is_dir()


def test_wait_outside_resume_names_jobs_wait(shell, runs_dir):
    job, _ = submit("train", "mlp --steps 5")
    shell.user_ns["w_r29"] = job
    with pytest.raises(UsageError, match="%jobs wait w_r29"):
        shell.run_line_magic("jobs", "show w_r29 --wait")
    job.wait(120)


def test_a_variable_that_is_not_a_job_is_a_job_word(shell, runs_dir):
    shell.user_ns["n_r29"] = 42  # not a job: looked up as an id or name, and not found
    with pytest.raises(UsageError, match="no job 'n_r29'"):
        shell.run_line_magic("jobs", "show n_r29")
