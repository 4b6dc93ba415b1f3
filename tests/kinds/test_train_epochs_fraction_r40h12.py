"""Round 40 (h12): ``--epochs`` takes a fraction of passes, as transformers'
``num_train_epochs`` (a float: 0.5, 2.5) and the Trainer's own ``epochs=`` do. The line took
whole numbers only: ``python -m skiff train mlp --epochs 1.5`` exited 2 ("expected a positive
integer"). The check: the run's steps are ceil(1.5 x the steps of its first epoch), read
from the validation at that epoch's end (transformers' max_steps), and its epochs say 1.5;
ocr-rec, whose loop trains whole passes, refuses a fraction before any run, naming what to
give instead."""

from __future__ import annotations

import math

import pytest

from skiff.jobs.launch import dry_run


def test_a_fraction_of_epochs_trains_that_share_of_the_steps(tmp_path, monkeypatch):
    # the line's config run by the job's own entry in this process (round 41, h5: the
    # subprocess of `python -m skiff train` cost an interpreter and a job for the same run)
    from skiff.kernels.backend.report import NullReporter
    from skiff.kernels.train.entry import run

    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path))
    config = dry_run("train", "mlp --epochs 1.5 --val-split 0.2", front="cli")["config"]
    result = run(config, NullReporter()).to_json()
    per_epoch = result["val_history"][0]["step"]  # the first epoch's end
    assert per_epoch > 2
    assert result["steps"] == math.ceil(1.5 * per_epoch)
    assert result["epochs"] == pytest.approx(1.5, abs=1e-3)
    assert [v["step"] for v in result["val_history"]] == [per_epoch, result["steps"]]


def test_the_fraction_reaches_the_config_and_whole_numbers_stay_ints():
    assert dry_run("train", "mlp --epochs 0.5", front="cli")["config"]["epochs"] == 0.5
    whole = dry_run("train", "mlp --epochs 2", front="cli")["config"]["epochs"]
    assert whole == 2 and isinstance(whole, int)


def test_ocr_rec_refuses_a_fraction_of_its_whole_passes():
    with pytest.raises(ValueError, match=r"whole passes: --epochs 0.5 .*--epochs 1"):
        dry_run("train", "ocr-rec --data labels.txt --epochs 0.5", front="cli")


def test_resuming_a_finished_run_of_2_5_epochs_trains_as_many_again():
    # `skiff jobs resume` of a finished run trains as much again (round 35): 2.5 epochs
    # again is 5 in all; int(2.5) made it 4, 1.5 epochs more, not 2.5.
    from pathlib import Path
    from types import SimpleNamespace

    from skiff.kinds.train import COMMAND, KIND, to_config

    config = to_config({**COMMAND.defaults(), "model": "mlp", "epochs": 2.5})
    job = SimpleNamespace(id="j", status="done", result={"steps": 40, "stopped": None},
                          config=config, run_dir=Path("/nowhere"))
    again = KIND.resume_config(job)
    assert again["epochs"] == 5 and again["resume"] is True
