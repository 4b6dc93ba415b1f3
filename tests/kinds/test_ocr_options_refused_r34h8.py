"""Round 34 (h8), OCR options that made a job which failed at once, or were read by nothing:

- ``ocr page.png --dict d.txt`` (no ``--rec-model``): the shipped recognizer has its own
  dictionary; the job failed on "rec model has 18710 classes but the dictionary gives 2
  characters". Refused before any job. Oracle: the kernel's pipeline refuses the same pair.
- ``--no-det --det-model F.onnx``: the detector given was used by nothing.
- A job that failed setting up (a ``--rec-model``/``--dict`` pair that does not fit) was
  offered ``jobs resume ID``, which failed the same way and offered it again: no hint now,
  and ``jobs resume`` says why."""

from __future__ import annotations

import pytest

from skiff.jobs import submit
from skiff.jobs.going_on import resume_hint
from skiff.jobs.launch import dry_run
from skiff.kinds import KINDS


@pytest.fixture()
def page(tmp_path):
    from PIL import Image

    path = tmp_path / "page.png"
    Image.new("RGB", (64, 32), "white").save(path)
    return path


def test_dict_without_rec_model_is_refused(runs_dir, tmp_path, page):
    from skiff.kernels.ocr import OcrPipeline

    short = tmp_path / "d.txt"
    short.write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(ValueError, match="classes"):   # the kernel: the pair does not fit
        assert OcrPipeline(device="cpu", dict=str(short)).alphabet is None
    for front in ("cli", "magic"):
        with pytest.raises(ValueError, match=r"--dict .*d\.txt names the characters of a "
                                             r"recognizer of your own \(--rec-model F\.onnx\)"
                                             r"; --lang ch's has its own dictionary"):
            dry_run("ocr", f"{page} --dict {short}", front=front)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_det_model_with_no_det_is_refused(runs_dir, tmp_path, page):
    det = tmp_path / "det.onnx"
    det.write_bytes(b"")
    with pytest.raises(ValueError, match="--det-model .* --no-det reads each image whole"):
        dry_run("ocr", f"{page} --no-det --det-model {det}")
    assert dry_run("ocr", f"{page} --no-det")["config"]["use_det"] is False


def test_a_job_that_failed_setting_up_offers_no_resume(runs_dir, tmp_path, page):
    from skiff.kernels.ocr.models import MODEL_SETS

    rec = MODEL_SETS["ch"].path("rec")
    short = tmp_path / "d.txt"
    short.write_text("a\nb\n", encoding="utf-8")
    from PIL import Image, ImageDraw

    im = Image.new("RGB", (200, 40), "white")
    ImageDraw.Draw(im).text((10, 10), "Hello 2026", fill="black")
    im.save(page)
    job, _ = submit("ocr", f"{page} --device cpu --rec-model {rec} --dict {short}",
                    front="cli")
    job.wait(120)
    assert job.status == "failed" and "classes" in str(job.error)
    assert resume_hint(job) is None
    with pytest.raises(ValueError, match=r"failed before reading an image \(ValueError: rec "
                                         r"model has .* the same options fail the same way"):
        KINDS["ocr"].resume_config(job)
