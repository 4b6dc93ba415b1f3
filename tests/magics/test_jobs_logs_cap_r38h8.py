"""Round 38 (h8): ``%jobs logs ID`` put the whole log in the cell (a job of 100,000 log lines:
6 MB of text in the output, saved with the notebook). A cell now shows the last
``NOTEBOOK_LOG_LINES`` lines after a line saying how many there are and how to see them all;
``-o NAME`` keeps every line, ``-n N`` shows what it asks for. The oracle: the terminal's
``jobs logs ID`` text (``render.logs_text``), every line."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

import skiff.magics.jobs as jobs_magic
from skiff.jobs import submit
from skiff.jobs.render import logs_text


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_a_long_log_shows_its_tail_in_a_cell(shell, runs_dir, capsys, monkeypatch):
    job, _ = submit("train", "mlp --steps 40 --checkpoint-every 5")
    assert job.wait(120).status == "done", job.error
    whole = logs_text(job).splitlines()
    assert len(whole) > 8   # a line a checkpoint, and more
    monkeypatch.setattr(jobs_magic, "NOTEBOOK_LOG_LINES", 4)
    capsys.readouterr()
    shown = shell.run_line_magic("jobs", f"logs {job.id} -o all_r38")
    said = capsys.readouterr().out
    assert str(shown).splitlines() == whole[-4:]
    assert f"(the last 4 of {len(whole)} lines; -o NAME keeps them all" in said
    assert str(shell.user_ns["all_r38"]).splitlines() == whole   # nothing lost
    asked = shell.run_line_magic("jobs", f"logs {job.id} -n 6")   # asked for: as asked
    assert str(asked).splitlines() == whole[-6:] and capsys.readouterr().out == ""
    monkeypatch.setattr(jobs_magic, "NOTEBOOK_LOG_LINES", len(whole))
    assert str(shell.run_line_magic("jobs", f"logs {job.id}")).splitlines() == whole
    assert capsys.readouterr().out == ""
