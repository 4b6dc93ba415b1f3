"""Round 36: ``%jobs show j`` (``resume``, ``logs`` ...) where ``j`` holds a job whose run
folder was removed said "no job 'ID' under RUNS", the id the user never typed, and nothing of
why; ``j`` itself knew. It now names the variable, the folder gone and how the job ended. The
oracle: the run folder is gone (``jobs show ID`` in a terminal: status 2, no such job)."""

from __future__ import annotations

import shutil

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import main


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    yield ip
    ip.user_ns.pop("gone", None)


@pytest.mark.parametrize("action", ["show", "resume", "logs"])
def test_a_variable_whose_folder_is_gone_says_so(shell, runs_dir, capsys, action):
    job = shell.run_line_magic("train", "mlp --steps 2 --wait -o gone")
    assert job.status == "done"
    shutil.rmtree(job.run_dir)
    with pytest.raises(UsageError, match=rf"gone holds job {job.id}, whose run folder "
                                         rf".*{job.id} is gone \(removed or moved\): nothing "
                                         rf"of it is left for %jobs {action}"):
        shell.run_line_magic("jobs", f"{action} gone")
    capsys.readouterr()
    assert main(["jobs", "show", job.id]) == 2
    assert f"no job '{job.id}'" in capsys.readouterr().err
