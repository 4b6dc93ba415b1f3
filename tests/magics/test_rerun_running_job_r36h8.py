"""Round 36: a ``%train ... -o j`` cell run again while its job still ran started a second
job and rebound ``j`` without a word: the first went on, out of reach, sharing the CPU. The
cell now says so and how to stop it; the oracle is the run folders (the first job is still
running when the line is printed, and ``%jobs cancel ID`` as printed stops it)."""

from __future__ import annotations

import re

import pytest

from skiff.jobs import Job


@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    before = set(ip.user_ns)
    yield ip
    for name in set(ip.user_ns) - before:
        ip.user_ns.pop(name, None)


def test_a_rerun_names_the_job_still_running(shell, runs_dir, capsys):
    jobs = [shell.run_line_magic("train", "mlp --steps 100000 -o j")]
    capsys.readouterr()
    try:
        jobs.append(shell.run_line_magic("train", "mlp --steps 3 -o j"))
        first, second = jobs
        out = capsys.readouterr().out
        assert shell.user_ns["j"] is second
        m = re.search(r"j held job (\S+), still (\w+): it goes on beside (\S+) "
                      r"\(%jobs cancel (\S+) stops it\)", out)
        assert m, out
        assert m.group(1) == m.group(4) == first.id and m.group(3) == second.id
        assert m.group(2) in ("queued", "running")
        shell.run_line_magic("jobs", f"cancel {m.group(4)}")   # the line's own fix
        first.wait(120)
        assert Job.load(first.id).refresh().status == "cancelled"
        assert second.wait(120).status == "done"   # the new one ran on its own
    finally:
        for job in jobs:
            if not job.refresh().final:
                job.cancel()
                job.wait(120)


def test_an_ended_job_is_replaced_quietly(shell, runs_dir, capsys):
    shell.run_line_magic("train", "mlp --steps 2 -o k --wait")
    capsys.readouterr()
    shell.run_line_magic("train", "mlp --steps 2 -o k --wait")
    assert "held job" not in capsys.readouterr().out
