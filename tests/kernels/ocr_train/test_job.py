"""``%train ocr-rec`` from a cell and ``python -m skiff train ocr-rec --json`` from the
terminal: the grammar's checks, a tiny real run, the exported model read by ``%ocr``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skiff.kinds.train import to_config

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def domain(tmp_path_factory):
    from skiff.kernels.ocr_train.domain import DomainFontsMissing, write_domain_set

    try:
        return write_domain_set(tmp_path_factory.mktemp("dseg"), 10, seed=11)
    except DomainFontsMissing as exc:
        pytest.skip(str(exc))


def test_grammar_checks(domain, tmp_path):
    with pytest.raises(ValueError, match="needs --data"):
        to_config({"model": "ocr-rec"})
    with pytest.raises(ValueError, match="no such file"):
        to_config({"model": "ocr-rec", "labels": str(tmp_path / "nope.txt")})
    with pytest.raises(ValueError, match="--val '.*held.txt': no such file or folder"):
        to_config({"model": "ocr-rec", "labels": str(domain), "val": str(tmp_path / "held.txt")})
    with pytest.raises(ValueError, match="--mix"):
        to_config({"model": "ocr-rec", "labels": str(domain), "mix": 1.5})
    with pytest.raises(ValueError, match="--freeze"):
        to_config({"model": "ocr-rec", "labels": str(domain), "freeze": 1.0})
    from skiff.kernels.ocr_train.entry import config_from

    frozen = to_config({"model": "ocr-rec", "labels": str(domain), "freeze": 0.5})
    assert config_from(frozen).freeze == 0.5  # the flag reaches the fine-tuning
    with pytest.raises(ValueError, match="CPU"):
        to_config({"model": "ocr-rec", "labels": str(domain), "device": "cuda:0"})
    cfg = to_config({"model": "ocr-rec", "labels": str(domain), "base": "ch-v4",
                     "epochs": 2})
    assert cfg["labels"] == str(domain) and cfg["base"] == "ch-v4" and cfg["epochs"] == 2
    # the positional DATA is taken as the labels when --data is not given
    assert to_config({"model": "ocr-rec", "data": str(domain)})["labels"] == str(domain)
    # --from is checked before a job exists: a near name, a missing file; a file made absolute
    with pytest.raises(ValueError, match="unknown recognizer 'ch-v7' \\(did you mean 'ch-v6'"):
        to_config({"model": "ocr-rec", "labels": str(domain), "from_dir": "ch-v7"})
    with pytest.raises(ValueError, match="no such file"):
        to_config({"model": "ocr-rec", "labels": str(domain), "from_dir": "mine.onnx"})
    (tmp_path / "mine.onnx").write_bytes(b"")
    cfg = to_config({"model": "ocr-rec", "labels": str(domain),
                     "from_dir": str(tmp_path / "mine.onnx")})
    assert cfg["base"] == str(tmp_path / "mine.onnx")


def test_magic_then_ocr_with_the_exported_model(domain, runs_dir, tmp_path, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    from skiff.kernels.ocr.models import MODEL_SETS

    registry = tmp_path / "ocr-models.json"
    monkeypatch.setenv("SKIFF_OCR_MODELS", str(registry))
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    job = shell.run_line_magic(
        "train", f"ocr-rec --data {domain} --from ch-v4 --steps 1 --batch-size 2 "
                 "--general-eval 0 --register meters-test --wait -o rec")
    assert job.status == "done", job.error
    assert shell.user_ns["rec"] is job
    onnx_path = job.result["onnx"]
    assert Path(onnx_path).is_file() and onnx_path.startswith(str(job.run_dir))
    assert job.result["steps"] == 1 and job.result["val_rows"] == 1
    assert job.artifact_path("rec.onnx") is not None
    image = domain.parent / sorted(p.name for p in domain.parent.glob("*.png"))[0]
    read = shell.run_line_magic("ocr", f"{image} --lang ch-v4 --rec-model {onnx_path} --wait")
    assert read.status == "done", read.error
    assert read.result["images"] == 1 and read.result["errors"] == 0
    # and by name: the registry holds it, %ocr --lang finds it (also in a later session)
    assert job.result["model_set"] == "meters-test" and "meters-test" in registry.read_text()
    try:
        by_name = shell.run_line_magic("ocr", f"{image} --lang meters-test --wait")
        assert by_name.status == "done", by_name.error
        assert MODEL_SETS["meters-test"].path("rec") == Path(onnx_path)
    finally:
        MODEL_SETS.pop("meters-test", None)


def test_register_model_set_checks(tmp_path, monkeypatch):
    from skiff.kernels.ocr.models import MODEL_SETS, get_model_set, register_model_set

    monkeypatch.setenv("SKIFF_OCR_MODELS", str(tmp_path / "r.json"))
    with pytest.raises(ValueError, match="shipped set"):
        register_model_set("ch", rec=str(MODEL_SETS["ch"].path("rec")))
    with pytest.raises(ValueError, match="missing"):
        register_model_set("x1", rec=str(tmp_path / "none.onnx"))
    with pytest.raises(ValueError, match="letters"):
        register_model_set("a b", rec=str(MODEL_SETS["ch"].path("rec")))
    (tmp_path / "r.json").write_text("{not json", encoding="utf-8")  # a broken registry
    assert get_model_set("ch").name == "ch"  # ... does not stop the shipped sets
    with pytest.raises(ValueError, match="--register"):
        to_config({"model": "ocr-rec", "labels": str(tmp_path / "r.json"), "register": "ch-v4"})


def test_cli_json_names_the_onnx(domain, tmp_path, runs_dir, capsys):
    env = {**os.environ, "SKIFF_RUNS": str(runs_dir), "OPENBLAS_NUM_THREADS": "1",
           "PYTHONPATH": str(ROOT)}
    out = tmp_path / "tuned"
    proc = subprocess.run([sys.executable, "-m", "skiff", "train", "ocr-rec", "--data",
                           str(domain), "--from", "ch-v4", "--steps", "1", "--batch-size", "2",
                           "--general-eval", "0", "--out", str(out), "--json"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["job"]["status"] == "done"
    assert doc["result"]["onnx"] == str(out / "rec.onnx") and (out / "rec.onnx").is_file()
    assert (out / "rec_dict.txt").is_file()
    # the refusal in this process (the terminal's path is the same main(); a second
    # interpreter cost ~2 CPU s for an argument's check, round 42)
    from skiff.cli import main

    assert main(["train", "ocr-rec", "--json"]) == 2
    assert "needs --data" in capsys.readouterr().err
