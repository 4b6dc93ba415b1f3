"""Round 27: a stopped training's summary says how to go on as the fronts type it,
``python -m skiff jobs resume ID`` (``%jobs resume ID`` in a notebook), not "the same command
with --resume --checkpoint-dir ...". The oracle is the resume itself: the line's command,
run, goes on from the checkpoint the summary names (``result.resumed.from_step``), and its
id is the job ``jobs show`` finds for the run folder that holds that checkpoint."""

import json
import re
import shlex
import time

from skiff.cli import main
from skiff.jobs import Job, launch, resume_command
from skiff.kinds.train import KIND
from skiff.kinds.train import to_config as train_config


def _cancelled_training(runs_dir):
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


def test_a_cancelled_trainings_summary_says_jobs_resume_id_and_that_goes_on(runs_dir, capsys):
    job = _cancelled_training(runs_dir)
    result = job.result
    assert job.status == "cancelled" and result["stopped"] == "cancelled"
    lines = KIND.summary(result)
    line = next(x for x in lines if x.startswith("to continue:"))
    assert "--checkpoint-dir" not in line
    # the two fronts' own lines for resuming this job (skiff.jobs.resume_command)
    assert resume_command(job.id, "cli") in line and resume_command(job.id, "magic") in line
    words = shlex.split(line.removeprefix("to continue: ").split(" (")[0])
    assert words[:4] == ["python", "-m", "skiff", "jobs"]
    assert Job.load(words[-1]).run_dir == job.run_dir  # the id names this job
    step = int(re.search(r"step-0*(\d+)", result["checkpoint"]).group(1))
    capsys.readouterr()
    assert main([*words[3:], "--json"]) == 0
    again = json.loads(capsys.readouterr().out)["result"]
    assert again["resumed"]["from_step"] == step and again["steps"] == 600


def test_a_checkpoint_dir_elsewhere_still_says_both_ways(tmp_path):
    where = tmp_path / "ck"
    lines = KIND.summary({"steps": 3, "stopped": "cancelled",
                          "checkpoint": str(where / "step-00000003.npz")})
    line = next(x for x in lines if x.startswith("to continue:"))
    assert "jobs resume ID" in line and f"--checkpoint-dir {where}" in line


def test_a_notebook_objects_training_is_continued_from_the_notebook(runs_dir):
    """``jobs resume`` refuses a job that trained a notebook object: the line says the
    notebook's way, as the refusal does."""
    run = runs_dir / "20260101-000000-train-abcd"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(
        {"id": run.name, "kind": "train", "config": {"model": "<notebook Net>"}}))
    lines = KIND.summary({"steps": 3, "stopped": "cancelled",
                          "checkpoint": str(run / "checkpoints" / "step-00000003.npz")})
    line = next(x for x in lines if x.startswith("to continue:"))
    assert "%train" in line and "jobs resume" not in line
