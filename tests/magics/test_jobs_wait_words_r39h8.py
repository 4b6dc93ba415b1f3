"""Round 39 (h8): ``%jobs wait`` without a job said "jobs show needs a job ID" (the action
it runs inside), and ``%jobs wait A B`` waited for A alone, B dropped unsaid. Both are said
as the terminal says them (``python -m skiff jobs wait ...``'s own message, the oracle),
once, as a UsageError, and nothing is waited for."""

from __future__ import annotations

import contextlib
import io

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import USAGE, main
from skiff.jobs import launch


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "skiff")
    return sh


def terminal_says(*words: str) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["jobs", *words]) == USAGE
    text = err.getvalue().strip()
    assert text.startswith("skiff jobs: ") and "\n" not in text, text
    return text.removeprefix("skiff jobs: ")


def test_wait_without_a_job_names_wait(shell, runs_dir):
    said = terminal_says("wait", "--timeout", "1")
    assert said.startswith("jobs wait needs a job ID"), said
    with pytest.raises(UsageError) as err:
        shell.run_line_magic("jobs", "wait --timeout 1")
    assert str(err.value) == said


def test_wait_for_two_jobs_is_refused_not_half_done(shell, runs_dir):
    """``%jobs wait a b`` waited for a alone; round 39 refused it; round 44 waits for both
    (tests/magics/test_wait_several_r44h8.py), and one id unknown refuses the whole wait."""
    a = launch("demo", {"steps": 1, "sleep": 0.0}).wait(60)
    b = launch("demo", {"steps": 400, "hold_at": 1, "hold_until": str(runs_dir / "gate")})
    try:
        said = terminal_says("wait", a.id, b.id, "nosuch")
        assert "no job 'nosuch'" in said, said
        with pytest.raises(UsageError) as err:
            shell.run_line_magic("jobs", f"wait {a.id} {b.id} nosuch --timeout 30")
        assert str(err.value) == said
        assert not b.refresh().final
    finally:
        b.cancel()
        (runs_dir / "gate").touch()
        b.wait(60)
