"""A new user fine-tuning the OCR recognizer from a terminal reads ``train --help``: its
``--from`` said only "checkpoint folder (Hugging Face layout) of a model loaded from one:
ernie", nothing of what ``train ocr-rec --from`` takes (a shipped recognizer, an .onnx file,
a registered set, a fine-tune's folder) nor that it starts from ch-v6 unless told (round 42,
h9). Oracles: the fine-tuner's own table of shipped recognizers and its config's default."""

from __future__ import annotations

import skiff.cli as cli
from skiff.kernels.ocr_train.finetune import BASE_MODELS, FineTuneConfig


def test_train_from_help_says_what_ocr_rec_starts_from():
    parser = cli._job_parser(cli._kinds()["train"], "train")
    said = parser._option_string_actions["--from"].help
    assert "ernie" in said  # what it said before stays
    assert "ocr-rec" in said, said
    for name in BASE_MODELS:
        if name != "ch":  # "ch" is ch-v6's other name
            assert name in said, (name, said)
    assert f"default {FineTuneConfig(data='crops/').base}" in said, said
    assert ".onnx" in said and "--register" in said, said
