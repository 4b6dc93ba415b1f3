"""Round 48 (h8): the Jobs tab's resume button was on for a done solve (and a done OCR job
that read all its images), and the click was refused ("job ID ended done: nothing to
resume; to solve it again: ..."), where ``jobs show`` offers no resume. The button is now
off where ``jobs resume`` would refuse the job, with that refusal as its tooltip. The
oracle: ``python -m skiff jobs resume ID --dry-run``, taken or refused, and its words."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import run_cli

pytest.importorskip("ipywidgets")


def test_the_resume_button_is_off_where_jobs_resume_refuses(capsys):
    from skiff.widgets.monitor import JobMonitor

    out = run_cli(capsys, "solve", "poisson", "--grid", "8x8", "--json")
    done = json.loads(out.stdout)["job"]["id"]
    refused = run_cli(capsys, "jobs", "resume", done, "--dry-run")
    assert refused.returncode == 2
    mon = JobMonitor(start=False)
    try:
        row = mon.rows[done]
        row.update()
        assert row.resume.layout.display != "none" and row.resume.disabled
        assert f"skiff jobs: {row.resume.tooltip.removeprefix('resume: ')}" == \
            refused.stderr.strip()
    finally:
        mon.close()
