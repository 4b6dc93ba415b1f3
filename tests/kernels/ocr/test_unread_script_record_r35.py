"""Round 35: the one-line warning for a script the model set does not read (h2's
``script_mix.unread_ink``) reaches the result's JSON record (``results.jsonl``, ``--json``)
and its notebook view; a page of a script it reads keeps the record's keys as before.
Oracle: the rendered text's script (Cyrillic: no shipped dictionary holds it)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

import skiff

DV = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def _line(text, size=28):
    if not DV.exists():
        pytest.skip(f"{DV} not installed")
    f = ImageFont.truetype(str(DV), size)
    im = Image.new("RGB", (int(f.getlength(text)) + 60, int(size * 2.2)), "white")
    ImageDraw.Draw(im).text((30, size * 0.5), text, font=f, fill="black")
    return im


def test_the_warning_is_in_the_record_and_the_view():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = skiff.ocr(_line("Привет, мир! Цена 120 руб."))
    record = result.to_json()
    assert record["warnings"] == result.warnings and len(record["warnings"]) == 1
    assert "does not read" in record["warnings"][0]
    assert "warning: " in result._repr_html_()


def test_a_page_it_reads_has_no_warnings_key():
    result = skiff.ocr(_line("GRAND OPENING 09:00"))
    assert result.warnings == [] and "warnings" not in result.to_json()
