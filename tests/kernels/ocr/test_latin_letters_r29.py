"""Round 29: a Greek or Cyrillic letter the recognizer reads inside a Latin word ("Tiρ 2.00",
"3vμ") is put back as its Latin runner-up (:mod:`skiff.kernels.ocr.script_mix`).

The oracle is the rendered text: the recognizer's own class probabilities for a rendered
line, with one frame's Latin letter made to lose to a like-shaped Greek one as blur and noise
do, must decode back to what was drawn; a unit's and a Greek word's letters, read surely,
stay."""

from __future__ import annotations

import numpy as np
import pytest

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def _line(text, size=32):
    from PIL import Image, ImageDraw, ImageFont

    try:
        font = ImageFont.truetype(FONT, size)
    except OSError:
        pytest.skip(f"font {FONT} missing (install fonts-dejavu-core)")
    left, top, right, bottom = font.getbbox(text)
    img = Image.new("RGB", (right - left + 24, bottom - top + 16), "white")
    ImageDraw.Draw(img).text((12 - left, 8 - top), text, font=font, fill="black")
    return np.asarray(img)[..., ::-1].copy()


def _probs(pipe, text):
    from skiff.kernels.ocr.rec import ctc_decode, rec_input

    probs = np.asarray(pipe.engine("rec")(rec_input([_line(text)], 48, np)))[0]
    assert ctc_decode(probs[None], pipe.alphabet)[0][0] == text  # read as drawn
    return probs


@pytest.mark.parametrize("text, latin, foreign", [("Tip 2.00", "p", "\u03c1"),
                                                  ("Oat milk 1.45", "a", "\u03b1"),
                                                  ("Hot Soup", "u", "\u03bc")])
def test_a_foreign_letter_in_a_latin_word_is_put_back(pipe, text, latin, foreign):
    from skiff.kernels.ocr.rec import ctc_decode
    from skiff.kernels.ocr.script_mix import latin_letters

    a = pipe.alphabet
    probs = _probs(pipe, text).copy()
    best = probs.argmax(1)
    frame = int(np.flatnonzero(best == a.index(latin))[0])
    mass = probs[frame, a.index(latin)]  # the Greek shape wins the frame, Latin runner-up
    probs[frame, a.index(foreign)] = 0.6 * mass
    probs[frame, a.index(latin)] = 0.3 * mass
    misread = ctc_decode(probs[None], a)[0][0]
    assert misread == text.replace(latin, foreign, 1)
    assert latin_letters(misread, probs, a) == text


@pytest.mark.parametrize("text", ["5 \u03bcm", "10\u03bcm", "2\u03c0r"])
def test_units_and_words_of_other_scripts_stay(pipe, text):
    from skiff.kernels.ocr.rec import ctc_decode
    from skiff.kernels.ocr.script_mix import latin_letters

    probs = _probs(pipe, text)
    assert latin_letters(ctc_decode(probs[None], pipe.alphabet)[0][0], probs,
                         pipe.alphabet) == text
