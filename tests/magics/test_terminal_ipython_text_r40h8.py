"""Round 40: IPython in a terminal (or any front end that shows no HTML) printed
``<IPython.core.display.HTML object>`` for every job a magic started, waited for or showed
(``%solve ... -o s``, ``%jobs show ID``, ``s`` in a cell): the job was displayed as an HTML
object alone. It is now displayed with its text beside its HTML: what ``python -m skiff
jobs show ID`` prints (the oracle: the terminal's own output), in ``%jobs`` words."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from skiff.cli import main


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    yield ip
    for name in ("s40", "held40"):
        ip.user_ns.pop(name, None)


def _shown(shell, cell: str) -> list[dict]:
    with capture_output() as captured:
        result = shell.run_cell(cell)
    assert result.error_in_exec is None and result.error_before_exec is None
    return [out.data for out in captured.outputs]


def test_a_finished_job_shows_the_terminals_text(shell, runs_dir, capsys):
    shown = _shown(shell, "%solve poisson --grid 16x16 --wait -o s40")
    job = shell.user_ns["s40"]
    assert job.status == "done"
    capsys.readouterr()
    assert main(["jobs", "show", job.id]) == 0
    terminal = capsys.readouterr().out.rstrip("\n")
    assert "converged in" in terminal  # the kind's summary, not the repr alone
    texts = [data.get("text/plain") for data in shown]
    assert texts and all(t == terminal for t in texts), texts
    assert all("<div" in data.get("text/html", "") for data in shown)  # the HTML stays
    # the variable alone in a cell, and %jobs show: the same text
    for cell in ("s40", f"%jobs show {job.id}"):
        assert [d.get("text/plain") for d in _shown(shell, cell)] == [terminal]
    # removed (%jobs rm), then its variable shown: said, not its command alone
    shell.run_line_magic("jobs", "rm s40")
    assert not job.run_dir.exists()
    (text,) = [d.get("text/plain") for d in _shown(shell, "s40")]
    assert text.endswith(f"its run folder {job.run_dir} is gone (removed or moved): its "
                         "result and log went with it")


def test_a_running_job_says_how_to_follow_it_in_the_notebooks_words(shell, runs_dir,
                                                                     tmp_path):
    from skiff.jobs import launch

    release = tmp_path / "release"
    job = launch("demo", {"steps": 3, "hold_at": 2, "hold_until": str(release)})
    shell.user_ns["held40"] = job
    try:
        import time

        deadline = time.time() + 60
        while job.refresh().done < 1 and time.time() < deadline:
            time.sleep(0.05)
        (text,) = [d.get("text/plain") for d in _shown(shell, "held40")]
        assert text.startswith(f"<Job {job.id} demo running")
        assert f"%jobs show {job.id} -f follows it live" in text
        assert "jobs attach" not in text  # the terminal's command, not a magic
    finally:
        release.touch()
        job.wait(timeout=60)
    assert job.status == "done"
