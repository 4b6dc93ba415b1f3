"""Round 33 (h8): a stopped ``train ocr-rec --out DIR`` said only ``jobs resume ID``; the
line a training prints names the same command with ``--resume`` as well, and so does this
one now (where ``--out`` or ``--checkpoint-dir`` named the folder of its rec.ckpt). The
oracle: the kernel's config (``config_from``) of that command and of ``jobs resume`` go on
from the same rec.ckpt."""

from __future__ import annotations

from types import SimpleNamespace

from skiff.jobs.going_on import resume_hint
from skiff.kernels.ocr_train.entry import config_from
from skiff.kernels.ocr_train.finetune import CHECKPOINT
from skiff.kinds.train import TrainKind, to_config


def _job(tmp_path, values, command):
    labels = tmp_path / "labels.txt"
    labels.write_text("a.png\t123\n", encoding="utf-8")
    config = to_config({"model": "ocr-rec", "labels": str(labels), **values})
    return SimpleNamespace(id="20261205-000000-train-abcd", kind="train", config=config,
                           status="cancelled", result=None, run_dir=tmp_path / "run",
                           meta={"command": command})


def test_a_named_folder_says_the_same_command_with_resume(tmp_path):
    out = tmp_path / "rec"
    out.mkdir()
    (out / CHECKPOINT).write_bytes(b"state")
    job = _job(tmp_path, {"out": str(out)}, f"python -m skiff train ocr-rec --out {out}")
    hint = resume_hint(job)
    assert hint.endswith("jobs resume 20261205-000000-train-abcd, or the same command with "
                         "--resume")
    again = config_from(to_config({**job.config, "resume": True}), run_dir=tmp_path / "new")
    resumed = config_from(TrainKind().resume_config(job), run_dir=tmp_path / "new")
    assert again.resume and resumed.resume
    assert again.out == resumed.checkpoint_dir == str(out)  # the same rec.ckpt
    job.config = {**job.config, "resume": True}
    assert resume_hint(job).endswith(", or the same command again")


def test_no_named_folder_no_command_line(tmp_path):
    job = _job(tmp_path, {}, "python -m skiff train ocr-rec --data labels.txt")
    (tmp_path / "run" / "model").mkdir(parents=True)
    (tmp_path / "run" / "model" / CHECKPOINT).write_bytes(b"state")
    hint = resume_hint(job)  # a new job has a new run folder: --resume alone finds nothing
    assert hint.endswith("jobs resume 20261205-000000-train-abcd")
    job.meta = {"command": "python -m skiff jobs resume 20261205-000000-train-0000"}
    job.config = {**job.config, "out": str(tmp_path / "run" / "model")}
    assert resume_hint(job).endswith("train-abcd")  # a resume's own command: no "same"


def test_a_refused_resume_gets_no_hint(tmp_path):
    out = tmp_path / "rec"
    out.mkdir()
    (out / CHECKPOINT).write_bytes(b"state")
    job = _job(tmp_path, {"out": str(out), "resume": True},
               f"python -m skiff train ocr-rec --out {out} --resume")
    job.status = "failed"
    assert resume_hint(job) is not None   # a failure inside the run: the hint stays
    job.error = (f"ValueError: cannot resume from {out / CHECKPOINT}: the stopped run added "
                 "'№' to the dictionary (--add-chars): give --add-chars again to go on")
    assert resume_hint(job) is None
