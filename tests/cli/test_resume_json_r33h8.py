"""Round 33 (h8): a stopped job that can go on said how only in the text summary: with
``--json`` (``train ... --json``, Ctrl-C; ``jobs show ID --json``) nothing named the resume,
and a script had no command to run. The document has ``resume`` (the command) and stderr the
line; the oracle is ``jobs resume --dry-run`` on that job: it takes it, and once its
checkpoints are gone it refuses and ``resume`` is absent."""

from __future__ import annotations

import io
import json
import shutil
import time

from skiff.cli import _follow_and_report, main
from skiff.jobs import launch, resume_command
from skiff.kinds.train import KIND
from skiff.kinds.train import to_config as train_config


def _cancelled_training():
    """A thread training cancelled once its first checkpoint is on disk (a condition, not a
    time: bounded by the job ending on its own)."""
    config = train_config({**KIND.command.defaults(), "model": "mlp", "steps": 600,
                           "checkpoint_every": 5})
    job = launch("train", config, runner="thread")
    deadline = time.monotonic() + 120  # a bound on the loop, asserted on nothing
    while not job.refresh().final and time.monotonic() < deadline:
        if list((job.run_dir / "checkpoints").glob("step-*.npz")):
            job.cancel()
            break
        time.sleep(0.02)
    job.wait(timeout=120)
    return job


def test_json_names_the_resume_of_a_stopped_job(runs_dir, capsys):
    job = _cancelled_training()
    assert job.status == "cancelled"
    capsys.readouterr()
    assert main(["jobs", "resume", job.id, "--dry-run", "--json"]) == 0  # the oracle
    assert json.loads(capsys.readouterr().out)["resumes"] == job.id

    out = io.StringIO()
    _follow_and_report(KIND, "train", job, {"json": True}, {}, out)
    doc = json.loads(out.getvalue())
    assert doc["resume"] == resume_command(job.id)
    assert f"skiff: to go on from where it stopped: {resume_command(job.id)}" in \
        capsys.readouterr().err
    assert main(["jobs", "show", job.id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["resume"] == resume_command(job.id)

    shutil.rmtree(job.run_dir / "checkpoints")  # nothing to go on from: no command named
    assert main(["jobs", "resume", job.id, "--dry-run"]) != 0
    capsys.readouterr()
    out = io.StringIO()
    _follow_and_report(KIND, "train", job, {"json": True}, {}, out)
    assert "resume" not in json.loads(out.getvalue())
    assert "jobs resume" not in capsys.readouterr().err
    assert main(["jobs", "show", job.id, "--json"]) == 0
    assert "resume" not in json.loads(capsys.readouterr().out)
