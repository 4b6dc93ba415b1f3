"""``jobs resume ID`` for an OCR job (round 30): its config goes on from the JSON lines it
wrote (its ``--out``, else its run folder's); a job that read everything, or images held
in notebook variables, is refused with what to do instead."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from skiff.kinds.ocr import KIND


@pytest.fixture(autouse=True)
def _here(tmp_path, monkeypatch):
    (tmp_path / "scans").mkdir()
    monkeypatch.chdir(tmp_path)


def _job(tmp_path, status="cancelled", result=None, **config):
    base = {"inputs": ["scans/"], "model": "ch", "out": None, "pages": None}
    return SimpleNamespace(id="j1", status=status, result=result, run_dir=Path(tmp_path),
                           meta={"command": "python -m skiff ocr scans/"},
                           config={**base, **config})


def test_resume_reads_on_from_the_jobs_own_results(tmp_path):
    config = KIND.resume_config(_job(tmp_path))
    assert config["resume_from"] == str(tmp_path / "results.jsonl")
    assert config["inputs"] == ["scans/"]
    out = KIND.resume_config(_job(tmp_path, out="/data/r.jsonl", resume_from="/old"))
    assert out["resume_from"] == "/data/r.jsonl" and out["out"] == "/data/r.jsonl"
    text = KIND.resume_config(_job(tmp_path, out="/data/r.csv"))
    assert text["resume_from"] == str(tmp_path / "results.jsonl")
    # a finished job with inputs it could not read: those are tried again
    again = KIND.resume_config(_job(tmp_path, status="done", result={"images": 5, "errors": 2}))
    assert again["resume_from"] == str(tmp_path / "results.jsonl")


def test_resume_refuses_what_has_nothing_left(tmp_path):
    with pytest.raises(ValueError, match="nothing to resume; to read them again: python -m"):
        KIND.resume_config(_job(tmp_path, status="done", result={"images": 5, "errors": 0}))
    with pytest.raises(ValueError, match="notebook variables"):
        KIND.resume_config(_job(tmp_path, inputs=["<variable page>"]))


def test_the_summary_says_what_a_resumed_job_kept():
    said = KIND.summary({"images": 43, "errors": 0, "lines": 105, "kept": 16, "seconds": 18.1,
                         "images_per_s": 1.49, "device": "cpu", "model": "ch"})
    assert said[0].startswith("43 images read") and said[1].startswith("16 of them kept")
    assert not any("kept" in line for line in KIND.summary({"images": 3, "lines": 2}))


def test_resume_from_another_folder_says_where(tmp_path, monkeypatch):
    job = _job(tmp_path)
    monkeypatch.chdir(tmp_path / "scans")
    with pytest.raises(ValueError, match="'scans/', a path relative to the folder it was "
                                         "started in"):
        KIND.resume_config(job)
    assert KIND.resume_config(_job(tmp_path, inputs=[str(tmp_path / "scans")]))["inputs"]
