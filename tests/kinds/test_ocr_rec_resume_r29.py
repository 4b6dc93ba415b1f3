"""``train ocr-rec`` from a cell or the terminal: --resume / --checkpoint-dir /
--checkpoint-every / --eval-every reach the fine-tuning (they were refused as "not an option"
although the kernel reads them), ``jobs resume`` of a stopped fine-tune looks where it kept
rec.ckpt, and ``--from`` takes a registered set or a fine-tune's folder (the kernel's
``base_model_path`` is the oracle of what resolves)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from skiff.kernels.ocr_train.entry import config_from
from skiff.kernels.ocr_train.finetune import base_model_path
from skiff.kinds.train import TrainKind, to_config


@pytest.fixture
def labels(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_text("a.png\t123\n", encoding="utf-8")
    return path


def test_checkpoint_and_eval_options_reach_the_fine_tune(labels, tmp_path):
    cfg = to_config({"model": "ocr-rec", "labels": str(labels), "out": str(tmp_path / "rec"),
                     "resume": True, "checkpoint_every": 10, "eval_every": 5})
    ft = config_from(cfg)
    assert (ft.resume, ft.checkpoint_every, ft.eval_every) == (True, 10, 5)
    assert ft.out == str(tmp_path / "rec") and ft.checkpoint_dir is None  # rec.ckpt beside it
    cfg = to_config({"model": "ocr-rec", "labels": str(labels), "resume": True,
                     "checkpoint_dir": str(tmp_path / "ck")})
    assert config_from(cfg, run_dir=tmp_path / "run").checkpoint_dir == str(tmp_path / "ck")
    # defaults untouched when not given
    plain = config_from(to_config({"model": "ocr-rec", "labels": str(labels)}))
    assert plain.resume is False and plain.checkpoint_every == 50 and plain.eval_every == 100


def test_resume_without_a_place_and_negative_periods_are_refused(labels):
    with pytest.raises(ValueError, match="--resume needs --out DIR .* or --checkpoint-dir"):
        to_config({"model": "ocr-rec", "labels": str(labels), "resume": True})
    with pytest.raises(ValueError, match="--eval-every must be >= 0"):
        to_config({"model": "ocr-rec", "labels": str(labels), "eval_every": -1})
    with pytest.raises(ValueError, match="--strategy is not an option of train ocr-rec"):
        to_config({"model": "ocr-rec", "labels": str(labels), "strategy": "dp"})


def test_jobs_resume_of_a_fine_tune_looks_in_its_model_folder(labels, tmp_path):
    from skiff.kernels.ocr_train.finetune import CHECKPOINT

    cfg = to_config({"model": "ocr-rec", "labels": str(labels)})
    job = SimpleNamespace(config=cfg, run_dir=tmp_path / "run-1", status="cancelled",
                          result=None, id="run-1")
    with pytest.raises(ValueError, match=f"left no {CHECKPOINT} .* --from .*run-1.model"):
        TrainKind().resume_config(job)  # nothing kept: refused, naming how to go on
    (tmp_path / "run-1" / "model").mkdir(parents=True)
    (tmp_path / "run-1" / "model" / CHECKPOINT).write_bytes(b"state")
    again = TrainKind().resume_config(job)
    ft = config_from(again, run_dir=tmp_path / "run-2")
    assert ft.resume is True
    assert Path(ft.checkpoint_dir) == tmp_path / "run-1" / "model"
    out = to_config({"model": "ocr-rec", "labels": str(labels), "out": str(tmp_path / "rec")})
    job.config = out
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / CHECKPOINT).write_bytes(b"state")
    assert config_from(TrainKind().resume_config(job)).checkpoint_dir == str(tmp_path / "rec")


def _fake_rec(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"onnx")
    return path


def test_from_a_fine_tunes_folder_or_a_registered_set(labels, tmp_path, monkeypatch):
    folder = tmp_path / "rec-out"
    rec = _fake_rec(folder / "rec.onnx")
    cfg = to_config({"model": "ocr-rec", "labels": str(labels), "from_dir": str(folder)})
    assert base_model_path(cfg["base"]) == rec
    with pytest.raises(ValueError, match="a folder without rec.onnx"):
        empty = tmp_path / "empty"
        empty.mkdir()
        to_config({"model": "ocr-rec", "labels": str(labels), "from_dir": str(empty)})
    from skiff.kernels.ocr.models import MODEL_SETS, register_model_set

    monkeypatch.setenv("SKIFF_OCR_MODELS", str(tmp_path / "registry.json"))
    register_model_set("plates", rec=str(MODEL_SETS["ch"].path("rec")))
    cfg = to_config({"model": "ocr-rec", "labels": str(labels), "from_dir": "plates"})
    assert cfg["base"] == "plates"
    assert base_model_path(cfg["base"]) == Path(MODEL_SETS["ch"].path("rec")).resolve()
    with pytest.raises(ValueError, match="unknown recognizer 'plate' \\(did you mean 'plates'"):
        to_config({"model": "ocr-rec", "labels": str(labels), "from_dir": "plate"})
