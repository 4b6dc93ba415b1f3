"""Round 44 (h22): a number's sign read "−" (U+2212) by the recognizer itself (issue 14:
"Temp −5 °C" in Liberation Sans at 28 px and "Latency −25 µs" in DejaVu Sans at 28 read
with "−", the same lines at 18 px with "-"). Round 40 decided a sign is written "-" (what a
user types and ``float()`` parses; RapidOCR writes "-" for all of these); a minus between
two numbers of a line of arithmetic stays "−". The lines are drawn with U+2212."""

from __future__ import annotations

import pytest

from skiff.kernels.ocr.marks import en_dashes

from .test_micro_signs_r44h22 import DEJAVU, SANS, crop  # the same drawn line


@pytest.mark.parametrize("path", [SANS, DEJAVU])
@pytest.mark.parametrize("drawn", [
    "Temp −5 °C", "Latency −25 µs", "Balance −2,454.50", "x = −3", "(−9%)", "温度 −5 °C"])
def test_a_sign_read_as_a_minus_is_written_hyphen_minus(path, drawn):
    assert en_dashes(drawn, crop(drawn, path, 28)) == drawn.replace("\u2212", "-")


@pytest.mark.parametrize("path", [SANS, DEJAVU])
@pytest.mark.parametrize("drawn", ["3) 15 − 7 = 8", "12−5=7", "a − b"])
def test_an_operator_minus_stays(path, drawn):
    assert en_dashes(drawn, crop(drawn, path, 28)) == drawn
