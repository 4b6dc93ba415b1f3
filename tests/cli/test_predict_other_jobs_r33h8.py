"""Round 33 (h8): ``predict JOB ...`` of a job that is no mlp or cnn training said "has no
table.json: predict needs a job that trained mlp on a table file", for an OCR job, a solve,
or an ``ocr-rec`` fine-tune (whose model ``ocr --rec-model`` reads). The line now says what
the job is, what predict takes (images too), and for a fine-tune how to use its model. The
oracle: ``ocr IMAGES --rec-model DIR --dry-run`` takes the folder the line names."""

from __future__ import annotations

import json
import re

from PIL import Image

from skiff.cli import main


def _run(root, name, kind, config):
    run = root / name
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"id": name, "kind": kind,
                                                 "config": config}))
    return run


def test_an_ocr_or_solve_job_says_what_predict_takes(runs_dir, tmp_path, capsys):
    for kind in ("ocr", "solve"):
        run = _run(runs_dir, f"20261205-000000-{kind}-abcd", kind, {"inputs": ["a.png"]})
        assert main(["predict", str(run), str(tmp_path / "x.csv")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1
        assert f"is a{'n' if kind == 'ocr' else ''} {kind} job, not a training" in err
        assert "cnn on a folder of class folders" in err and "table.json" not in err


def test_an_ocr_rec_fine_tune_names_its_model(runs_dir, tmp_path, capsys):
    out = tmp_path / "rec"
    run = _run(runs_dir, "20261205-000000-train-beef", "train",
               {"model": "ocr-rec", "out": str(out)})
    page = tmp_path / "p.png"
    Image.new("L", (40, 20), 255).save(page)
    assert main(["predict", run.name, str(page)]) == 2
    err = capsys.readouterr().err
    assert "exported no model" in err and f"jobs resume {run.name} goes on" in err
    out.mkdir()
    (out / "rec.onnx").write_bytes(b"onnx")
    assert main(["predict", run.name, str(page)]) == 2
    err = capsys.readouterr().err
    folder = re.search(r"--rec-model (\S+?);", err).group(1)
    assert folder == str(out)
    assert main(["ocr", str(page), "--rec-model", folder, "--dry-run"]) == 0  # the oracle


def test_a_gpt_training_names_generate(runs_dir, tmp_path, capsys):
    run = _run(runs_dir, "20261205-000000-train-cafe", "train", {"model": "gpt-mini"})
    assert main(["predict", run.name, str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert f'trained gpt-mini: continue a text with it by generate {run.name} "TEXT"' in err
    from skiff.kinds import KINDS  # the oracle: generate's grammar takes those words

    assert KINDS["generate"].command.parse([run.name, "TEXT"], cli=True)
