"""Round 36: ``%generate j "text"`` / ``%chat j "text"`` with ``j`` the variable ``%train ...
-o j`` stored said "variable 'j' holds a Job: expected a checkpoint folder or a model
loaded with from_pretrained", while its id or ``--name`` (and ``%predict j``, ``%jobs show
j``) worked. A job variable now stands for its run folder. The oracle: the terminal given
the job's id answers the same (here an mlp job, which writes no text: the same refusal,
naming the command that was run)."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import main


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    yield ip
    ip.user_ns.pop("m", None)


@pytest.mark.parametrize("kind", ["generate", "chat"])
def test_a_job_variable_is_its_run_folder(shell, runs_dir, capsys, kind):
    job = shell.run_line_magic("train", "mlp --steps 2 --wait -o m")
    assert job.status == "done"
    with pytest.raises(UsageError) as info:
        shell.run_line_magic(kind, 'm "the "')
    said = str(info.value)
    assert "holds a Job" not in said and str(job.run_dir) in said
    # the command the user ran is the one named (chat was told "generate continues text")
    assert ("chat answers from" if kind == "chat" else "generate continues text from") in said
    capsys.readouterr()
    assert main([kind, job.id, "the "]) == 2
    assert said in capsys.readouterr().err   # the terminal's line for the job's id
