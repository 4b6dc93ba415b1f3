"""`jobs resume ID` of a stopped `train ocr-rec` job re-reads its stored config through the
command line's `to_config` (round 44, h9): `--register SET` (stored as `name`) was dropped, so
the resumed run registered nothing; `--upright no` (stored as False) was dropped, so the
resumed run measured it; `--general-fonts` (stored as a list) raised AttributeError."""

from __future__ import annotations

import types

from skiff.kinds.train import TrainKind, to_config


def test_a_resumed_fine_tune_keeps_register_upright_and_general_fonts(tmp_path):
    font = tmp_path / "face.ttf"
    font.write_bytes(b"not read here")
    (tmp_path / "labels.txt").write_text("a.png\tA1\n", encoding="utf-8")
    (tmp_path / "a.png").write_bytes(b"")
    out = tmp_path / "out"
    config = to_config({"model": "ocr-rec", "data": str(tmp_path / "labels.txt"),
                        "out": str(out), "register": "plates44", "upright": "no",
                        "general_fonts": str(font), "steps": 6})
    assert config["name"] == "plates44" and config["upright"] is False
    out.mkdir()
    (out / "rec.ckpt").write_bytes(b"")  # a stopped run's state
    job = types.SimpleNamespace(config=config, id="j", run_dir=tmp_path / "run",
                                status="cancelled", result=None)
    again = TrainKind().resume_config(job)
    assert again["resume"] is True and again["checkpoint_dir"] == str(out)
    assert again["name"] == "plates44"
    assert again["upright"] is False
    assert again["general_fonts"] == [str(font)]
    assert again["steps"] == 6
