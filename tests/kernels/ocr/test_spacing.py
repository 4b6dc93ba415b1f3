"""Letter-spaced words closed up from their glyphs' gaps (``spacing.letter_spaces``): signs
and headings set in wide capitals read as a reader sees them, other spaced readings not."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr.spacing import letter_spaces


def _tracked(text, face, size, track, word=None, ink=0, ground=255, xs=None):
    """``text`` drawn a glyph at a time, each advanced by its own width plus ``track`` em;
    a space advances ``word`` em more (default: the font's space plus ``track``)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(face, size)
    if xs is None:
        xs, x = [], 8.0
        for ch in text:
            xs.append(x)
            x += font.getlength(ch) + track * size
            if ch == " " and word is not None:
                x += word * size - font.getlength(" ")
    img = Image.new("L", (int(xs[-1] + 2 * size) + 8, size + 16), ground)
    d = ImageDraw.Draw(img)
    for ch, x in zip(text, xs, strict=True):
        d.text((x, 6), ch, font=font, fill=ink)
    return np.asarray(img)


def _spaced(text):
    return " ".join(text.replace(" ", ""))


@pytest.mark.parametrize("which", ["latin", "serif"])
@pytest.mark.parametrize("size", [18, 36])
@pytest.mark.parametrize("track", [0.35, 0.9])
def test_letter_spaced_words_close_up(fonts, which, size, track):
    face = fonts[which]
    for text in ("OPEN DAILY", "SALE", "MENU", "GRAND HOTEL PARIS", "Welcome"):
        crop = _tracked(text, face, size, track)
        assert letter_spaces(_spaced(text), crop) == text, (which, size, track, text)
        # the recognizer's spaces here and there ("OPEN D AILY") go as the glyphs stand
        words = text.split()
        some = " ".join([*words[:-1], words[-1][0] + " " + words[-1][1:]])
        assert letter_spaces(some, crop) == text, (which, size, track, some)
    # light print on a dark ground, and a colour crop
    crop = _tracked("NEW MENU", face, size, track, ink=235, ground=30)
    assert letter_spaces("N E W M E N U", np.dstack([crop] * 3)) == "NEW MENU"


def test_other_spaced_readings_stay(fonts):
    face = fonts["latin"]
    crop = _tracked("OPEN DAILY", face, 30, 0.9)
    assert letter_spaces("O P E N D A I L", crop) == "O P E N D A I L"  # a glyph more drawn
    assert letter_spaces("O P E N D A I L Y E", crop) == "O P E N D A I L Y E"  # one fewer
    # ordinary print: glyphs close together, the recognizer's own spaces stay
    for size in (14, 24, 40):
        for text in ("Hello World", "A quick brown fox", "MAIN STREET"):
            crop = _tracked(text, face, size, 0)
            assert letter_spaces(_spaced(text), crop) == _spaced(text), (size, text)
            assert letter_spaces(text, crop) == text, (size, text)
    crop = _tracked("ABC", face, 30, 0.9)
    assert letter_spaces("A B C", crop) == "A B C"  # too few to tell
    crop = _tracked("3141", face, 30, 0.9)
    assert letter_spaces("3 1 4 1", crop) == "3 1 4 1"  # digits: cell_spaces' business
    crop = _tracked("中文字体", fonts["cjk"], 30, 0.9)
    assert letter_spaces("中 文 字 体", crop) == "中 文 字 体"  # CJK stands apart anyway
    # letters laid out freely (a diagram's labels): gaps of every width, no rhythm
    xs, x = [], 8
    for gap in (0, 10, 25, 45, 18, 70):
        x += gap + (16 if xs else 0)
        xs.append(x)
    crop = _tracked("ABCDEF", face, 24, 0, xs=xs)
    assert letter_spaces("A B C D E F", crop) == "A B C D E F"


def test_pipeline_reads_a_letter_spaced_sign(pipe, fonts):
    """Read whole: the recognizer gives one letter a word, the line comes back closed up."""
    from PIL import Image

    grey = _tracked("OPEN DAILY", fonts["latin"], 28, 0.9, word=2.2)
    page = np.full((grey.shape[0] + 80, grey.shape[1] + 60), 255, np.uint8)
    page[40:40 + grey.shape[0], 30:30 + grey.shape[1]] = grey
    result = pipe(Image.fromarray(page).convert("RGB"))
    assert result.text == "OPEN DAILY", result.text


def test_no_space_is_added(fonts):
    """A word in a monospaced font: narrow letters stand as far apart as tracked ones, and
    a gap after a wide letter looks like a word's; a reading without spaces stays whole."""
    mono = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
    for size in (14, 18, 24):
        for text in ("Croissant", "Espresso", "illicit", "Wiring"):
            crop = _tracked(text, mono, size, 0)
            assert letter_spaces(text, crop) == text, (size, text)
    crop = _tracked("OPEN DAILY", fonts["latin"], 30, 0.9)
    assert letter_spaces("OPENDAILY", crop) == "OPENDAILY"
    assert letter_spaces("OPEN D AILY", crop) == "OPEN DAILY"


def test_full_width_ascii_forms_are_ascii_on_a_line_without_cjk():
    """The Chinese dictionary holds "#" and "＃" alike; a form's "##" came back "＃＃" (round
    24, a user's probe). Beside CJK characters the forms stay as printed."""
    from skiff.kernels.ocr.rec import half_width

    assert half_width("＃＃") == "##"
    assert half_width("PIN：１２３４") == "PIN:1234"
    assert half_width("ＡＢＣ　１２") == "ABC 12"
    assert half_width("价格：１２元") == "价格：１２元"
    assert half_width("カタカナ　ＡＢＣ") == "カタカナ　ＡＢＣ"
    assert half_width("plain text") == "plain text" and half_width("") == ""


def test_a_dotted_leader_alone_is_no_line_and_one_trailing_a_cell_goes():
    """A receipt's leaders boxed apart came back as a row "………………………" between two items,
    and "Paid (GBP) .." kept two of its dots (round 24, a user's probe); an ellipsis is
    text."""
    from skiff.kernels.ocr.rec import is_leader_line, strip_leader

    assert is_leader_line("………………………") and is_leader_line("........")
    assert is_leader_line("· · · ·") and is_leader_line("..")
    assert not is_leader_line(".") and not is_leader_line("Wait...")
    assert not is_leader_line("12.50") and not is_leader_line("U.S.A.")
    assert strip_leader("Paid (GBP) ..") == "Paid (GBP)"
    assert strip_leader("Total ........") == "Total" and strip_leader("Total ………") == "Total"
    assert strip_leader("Service 10% .") == "Service 10%"
    for kept in ("Wait ...", "他说 ……", "etc.", "Ok.", "incl. 4.50", "Wait ... and see"):
        assert strip_leader(kept) == kept


def test_a_receipt_with_dotted_leaders_reads_its_rows_without_them(pipe, fonts):
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(
        "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf", 20)
    rows = [("Cappuccino", "28.00"), ("Service 10%", "6.65"), ("Coupon", "(5.00)"),
            ("Total", "68.15"), ("Paid (GBP)", "7.45")]
    page = Image.new("RGB", (460, 40 + 34 * len(rows)), "white")
    draw = ImageDraw.Draw(page)
    for i, (name, price) in enumerate(rows):
        y = 20 + 34 * i
        draw.text((20, y), name, font=font, fill="black")
        x = 20 + draw.textlength(name + " ", font=font)
        while x < 330:
            draw.text((x, y), ".", font=font, fill="black")
            x += 9
        draw.text((440 - draw.textlength(price, font=font), y), price, font=font, fill="black")
    got = pipe(np.asarray(page))
    assert [[line.text for line in row] for row in got.rows] == [list(r) for r in rows], \
        got.text
