"""``--help`` of ``%ocr`` / ``python -m skiff ocr`` says what each ``--precision`` value does:
``hybrid`` (round 32: the recognizer's int8 twin on clean images) was a choice the help did
not explain."""

import re

from skiff.kernels.ocr.quantize import PRECISIONS
from skiff.kinds.ocr import COMMAND


def test_help_explains_every_precision():
    text = re.sub(r"\s+", " ", COMMAND.usage())
    start = text.rindex("--precision")  # the option's own line, not the usage
    said = text[start:start + 600]
    for value in PRECISIONS:
        assert f"{value} (" in said or f"{value}, " in said, (value, said)
    assert "recognizer" in said  # hybrid reads lines with another model: the help says which


def test_help_says_rec_model_takes_a_fine_tunes_folder():
    # `--rec-model DIR` reads the folder `train ocr-rec -o DIR` wrote (round 31): the help
    # named only F.onnx (round 32)
    text = re.sub(r"\s+", " ", COMMAND.usage())
    said = text[text.rindex("--rec-model"):][:200]
    assert "DIR" in said and "ocr-rec" in said, said
