"""Round 29: a space the recognizer reads inside a word under blur ("Ret eipt No. 90417" for
"Receipt No. 90417") goes where the crop's ink shows no word gap
(:func:`skiff.kernels.ocr.spacing.spurious_spaces`).

The oracle is the rendered text: the recognizer's own class probabilities for a rendered
line, with one blank frame inside a word made to read an unsure space as blur does, must
come back to what was drawn; the drawn word gaps, sure or made unsure, stay, and so does
an italic's narrow word gap read surely."""

from __future__ import annotations

import numpy as np
import pytest

SANS = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
ITALIC = "/usr/share/fonts/truetype/liberation2/LiberationSerif-BoldItalic.ttf"


def _line(text, font_path=SANS, size=32):
    from PIL import Image, ImageDraw, ImageFont

    try:
        font = ImageFont.truetype(font_path, size)
    except OSError:
        pytest.skip(f"font {font_path} missing (install fonts-dejavu-core, fonts-liberation2)")
    left, top, right, bottom = font.getbbox(text)
    img = Image.new("RGB", (right - left + 24, bottom - top + 16), "white")
    ImageDraw.Draw(img).text((12 - left, 8 - top), text, font=font, fill="black")
    return np.asarray(img)[..., ::-1].copy()


def _read(pipe, text, font_path=SANS, size=32):
    from skiff.kernels.ocr.rec import ctc_decode, rec_input

    crop = _line(text, font_path, size)
    x = rec_input([crop], 48, np)
    probs = np.asarray(pipe.engine("rec")(x))[0]
    assert ctc_decode(probs[None], pipe.alphabet)[0][0] == text  # read as drawn
    return crop, probs, x.shape[-1] / probs.shape[0]


def _unsure_space(probs, alphabet, frame, p=0.9):
    """``probs`` with ``frame`` reading a space at ``p``, the rest of its mass scaled."""
    probs = probs.copy()
    space = alphabet.index(" ")
    probs[frame] *= (1 - p) / max(1e-9, 1 - probs[frame, space])
    probs[frame, space] = p
    return probs


def _frames(probs, alphabet, text, pair):
    """The greedy frames of the two characters ``pair`` of ``text`` (its first match)."""
    best = probs.argmax(1)
    kept = np.flatnonzero((best != 0) & np.r_[True, best[1:] != best[:-1]])
    solid = [k for k in kept if alphabet[best[k]] != " "]
    i = "".join(text.split()).index(pair)
    return solid[i], solid[i + 1]


@pytest.mark.parametrize("text, pair", [("Receipt No. 90417", "ce"),
                                        ("Meeting room open daily", "ti"),
                                        ("Total amount due", "ou")])
def test_a_space_read_inside_a_word_goes(pipe, text, pair):
    from skiff.kernels.ocr.rec import ctc_decode
    from skiff.kernels.ocr.spacing import spurious_spaces

    a = pipe.alphabet
    crop, probs, fw = _read(pipe, text)
    f0, f1 = _frames(probs, a, text, pair)
    blanks = [f for f in range(f0 + 1, f1) if probs[f].argmax() == 0]
    assert blanks, "no blank frame between the two letters"
    probs = _unsure_space(probs, a, blanks[len(blanks) // 2])
    misread = ctc_decode(probs[None], a)[0][0]
    assert misread != text and "".join(misread.split()) == "".join(text.split())
    assert spurious_spaces(misread, probs.argmax(1), probs[:, a.index(" ")], a, crop,
                           fw) == text


@pytest.mark.parametrize("text", ["Meeting room open daily", "Total amount due"])
def test_a_drawn_word_gap_read_unsurely_stays(pipe, text):
    from skiff.kernels.ocr.rec import ctc_decode
    from skiff.kernels.ocr.spacing import spurious_spaces

    a = pipe.alphabet
    crop, probs, fw = _read(pipe, text)
    best = probs.argmax(1)
    frames = np.flatnonzero(best == a.index(" "))
    probs = _unsure_space(probs, a, int(frames[0]))  # the first word gap, unsure
    read = ctc_decode(probs[None], a)[0][0]
    assert read == text
    assert spurious_spaces(read, probs.argmax(1), probs[:, a.index(" ")], a, crop,
                           fw) is None


def test_an_italic_narrow_word_gap_read_surely_stays(pipe):
    from skiff.kernels.ocr.spacing import spurious_spaces

    text = "as it jilt Today"  # "t j": 0.14 of the ink's height, the others 0.32-0.36
    a = pipe.alphabet
    crop, probs, fw = _read(pipe, text, ITALIC, 24)
    assert spurious_spaces(text, probs.argmax(1), probs[:, a.index(" ")], a, crop,
                           fw) is None
