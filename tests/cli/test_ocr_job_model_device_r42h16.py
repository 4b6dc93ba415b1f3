"""Round 42 (h16), found by h9: ``%ocr crops/ --no-det --rec-model JOB_ID`` (a fine-tune's id
as ``jobs ls`` shows it) said "no such file" while its run folder's path worked; and an OCR
job launched with ``--device auto`` logged "OCR of N images ... on cpu (as asked)". Oracles:
the run folder :func:`skiff.jobs.store.find_run_dir` gives for the id (the model file the
folder's path gives, as round 31 made it); the device the user typed (auto is not "as
asked"; an explicit ``--device cpu`` is)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from skiff.jobs import Job
from skiff.jobs.launch import dry_run, submit
from skiff.kernels.ocr.models import get_model_set, model_file


@pytest.fixture
def page(runs_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    blank = np.full((48, 240), 255, np.uint8)
    blank[20:28, :] -= rng.integers(0, 6, (8, 240), dtype=np.uint8)  # paper, no print
    Image.fromarray(blank).save("blank.png")
    return "blank.png"


def _fine_tune(with_model: bool = True) -> Job:
    """A train ocr-rec job's run folder, as the fine-tune leaves it (model/rec.onnx)."""
    job = Job.create("train", {"model": "ocr-rec"}, target="skiff.kinds.train:run",
                     runner="thread", name="my-rec")
    if with_model:
        (job.run_dir / "model").mkdir()
        shipped = get_model_set("ch").path("rec")
        (job.run_dir / "model" / "rec.onnx").write_bytes(shipped.read_bytes()[:64])
    return job


def test_rec_model_takes_a_fine_tunes_job_id(page):
    job = _fine_tune()
    by_path = dry_run("ocr", f"{page} --no-det --rec-model {job.run_dir}")["config"]
    for given in (job.id, "my-rec"):  # its id, and its --name
        doc = dry_run("ocr", f"{page} --no-det --rec-model {given}")
        assert doc["config"]["rec_model"] == by_path["rec_model"] \
            == str(model_file(job.run_dir, "rec")), given
        assert given in doc["command"]  # the job's command stays as typed


def test_a_job_without_a_model_or_no_job_is_one_clear_line(page):
    job = _fine_tune(with_model=False)
    with pytest.raises(ValueError, match=rf"--rec-model: the train ocr-rec job {job.id} "
                                         r".* wrote no rec\.onnx"):
        dry_run("ocr", f"{page} --no-det --rec-model {job.id}")
    with pytest.raises(ValueError, match=r"no such file, got 'nojob'.*job's id"):
        dry_run("ocr", f"{page} --no-det --rec-model nojob")


def _device_line(job: Job) -> str:
    job.wait(timeout=120, raise_on_error=True)
    line = next((ln for ln in str(job.logs).splitlines() if "OCR of" in ln), None)
    assert line is not None, str(job.logs)
    return line


def test_device_auto_is_not_said_as_asked(page):
    from skiff.kernels.backend import gpu_available

    auto, _ = submit("ocr", f"{page} --no-det --no-cls --device auto --runner thread")
    said = _device_line(auto)
    assert "(as asked)" not in said and "(auto" in said, said
    if not gpu_available():
        assert " on cpu (auto: no GPU" in said, said
    cpu, _ = submit("ocr", f"{page} --no-det --no-cls --device cpu --runner thread")
    assert " on cpu (as asked)" in _device_line(cpu)
