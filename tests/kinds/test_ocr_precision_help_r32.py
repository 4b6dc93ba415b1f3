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
