"""Round 31 (h14): users' findings in the train front.

3. ``%%train mlp`` said "got MODEL/DATA 'mlp' None on the line": it now says what to write
   instead, and the line it names is one the kind itself takes (the oracle: the same dry run
   with that line, no cell).
"""

from __future__ import annotations

import pytest

from skiff.jobs.launch import dry_run

CELL = "import numpy as np\nmodel = None\ndataset = None\n"


@pytest.mark.parametrize("line, use", [("mlp", "%train mlp DATA"),
                                       ("mlp blobs", "%train mlp blobs")])
def test_a_model_on_a_train_cell_line_says_what_to_write(runs_dir, line, use):
    with pytest.raises(ValueError) as err:
        dry_run("train", line, cell=CELL, front="magic")
    text = str(err.value)
    assert "None" not in text and use in text and "%%train cell that sets model" in text
    if "DATA" not in use:  # the line it names is taken as it stands
        assert dry_run("train", use.removeprefix("%train "), front="magic")["kind"] == "train"


# 4. a stopped training whose checkpoints are outside its run folder: the summary names the
#    job (it said "jobs resume ID with this job's id"); the oracle is the resume the line
#    names, run, going on from the checkpoint the summary names.

def _cancelled_training(where):
    import time

    from skiff.jobs import launch
    from skiff.kinds.train import KIND
    from skiff.kinds.train import to_config as train_config

    config = train_config({**KIND.command.defaults(), "model": "mlp", "steps": 600,
                           "checkpoint_every": 5, "checkpoint_dir": where})
    job = launch("train", config, runner="thread")
    deadline = time.monotonic() + 120  # a bound on the loop, asserted on nothing
    while not job.refresh().final and time.monotonic() < deadline:
        if list(__import__("pathlib").Path(config["checkpoint_dir"]).glob("step-*.npz")):
            job.cancel()
            break
        time.sleep(0.02)
    job.wait(timeout=120)
    return job


def test_a_checkpoint_dir_elsewhere_names_the_job(runs_dir, tmp_path, monkeypatch, capsys):
    import json
    import re
    import shlex

    from skiff.cli import main
    from skiff.jobs import resume_command
    from skiff.kinds.train import KIND

    monkeypatch.chdir(tmp_path)
    job = _cancelled_training("ck dir")            # relative, with a space
    assert job.config["checkpoint_dir"] == str(tmp_path / "ck dir")   # stored absolute
    assert job.status == "cancelled"
    line = next(x for x in KIND.summary_of(job, job.result) if x.startswith("to continue:"))
    assert resume_command(job.id, "cli") in line and "this job's id" not in line
    words = shlex.split(line.removeprefix("to continue: ").split(" (")[0])
    step = int(re.search(r"step-0*(\d+)", job.result["checkpoint"]).group(1))
    monkeypatch.chdir(runs_dir.parent)             # resumed from another folder
    capsys.readouterr()
    assert main([*words[3:], "--json"]) == 0
    again = json.loads(capsys.readouterr().out)["result"]
    assert again["resumed"]["from_step"] == step

    # its checkpoints removed: the line says so instead of a resume that is refused
    for f in (tmp_path / "ck dir").iterdir():
        f.unlink()
    line = next(x for x in KIND.summary_of(job, job.result) if x.startswith("to continue:"))
    assert "are gone" in line and shlex.quote(str(tmp_path / "ck dir")) in line
