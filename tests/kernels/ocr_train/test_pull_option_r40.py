"""``--pull SHARE`` (WiSE-FT's share of the way from the base to the tuned weights) from the
grammar to the fine-tune's config, refused outside [0, 1] and for other models, and said in
the terminal's summary when the kept weights were pulled."""

from __future__ import annotations

import pytest

from skiff.kernels.ocr_train.entry import config_from
from skiff.kinds import KINDS
from skiff.kinds.train import _ocr_rec_summary, to_config


@pytest.fixture()
def labels(tmp_path):
    f = tmp_path / "labels.txt"
    f.write_text("a.png\t12\n")
    return str(f)


def test_pull_reaches_the_fine_tune(labels):
    cfg = to_config({"model": "ocr-rec", "labels": labels, "pull": 0.5})
    assert cfg["pull"] == 0.5 and config_from(cfg).pull == 0.5
    assert "pull" not in to_config({"model": "ocr-rec", "labels": labels})
    assert config_from(to_config({"model": "ocr-rec", "labels": labels})).pull is None


def test_pull_parsed_from_the_command_line(labels):
    terminal = KINDS["train"].command.parser("python -m skiff train", cli=True)
    values = vars(terminal.parse_args(["ocr-rec", "--data", labels, "--pull", "0.7"]))
    assert to_config(values)["pull"] == 0.7


@pytest.mark.parametrize("share", [1.5, -0.1])
def test_pull_outside_zero_one_is_refused(labels, share):
    with pytest.raises(ValueError, match=r"--pull must be in \[0, 1\]"):
        to_config({"model": "ocr-rec", "labels": labels, "pull": share})


def test_pull_for_another_model_is_refused(tmp_path):
    with pytest.raises(ValueError, match="--pull is for train ocr-rec"):
        to_config({"model": "mlp", "data": str(tmp_path), "pull": 0.5})


def test_the_summary_says_a_pull():
    result = {"steps": 3, "final_loss": 0.1, "train_rows": 10, "val_rows": 2,
              "val_before": 0.5, "val_after": 0.9, "general_before": 0.99,
              "general_after": 0.985, "onnx": "/x/rec.onnx", "pull": 0.7,
              "pull_measure": "held-out 1.000, general 0.998"}
    text = "\n".join(_ocr_rec_summary(result))
    assert "weights kept 0.7 of the way from the base to the tuned ones" in text
    assert "held-out 1.000, general 0.998" in text
    assert "weights kept" not in "\n".join(_ocr_rec_summary({**result, "pull": 1.0}))
