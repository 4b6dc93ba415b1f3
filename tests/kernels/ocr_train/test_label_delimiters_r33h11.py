"""Round 33 (h11): ICDAR's word-recognition ``gt.txt`` (``word_1.png, "Tiredness"``), a
set users fine-tune on, was refused line by line ("no tab between image and text"): every
row lost. Read now where the image exists (one warning); a row that a space separates
(``w0.png AB 12``) stays an error (the first space may be the path's), now saying so.
Oracle: the texts the crops were rendered with."""

from __future__ import annotations

import random

from skiff.kernels.ocr_train.labels import Dictionary, read_labels


def _crops(folder, fonts, texts):
    from PIL import Image

    from skiff.kernels.ocr_train.data import render_line

    rng = random.Random(7)
    for k, text in enumerate(texts):
        Image.fromarray(render_line(text, fonts["latin"], 28, rng)).save(folder / f"w{k}.png")


def test_space_and_icdar_separated_rows(tmp_path, fonts):
    texts = ["AB 12", 'say "hi", 7', "TOTAL 4.50"]
    _crops(tmp_path, fonts, texts)
    (tmp_path / "gt.txt").write_text(
        'w0.png, "AB 12"\nw1.png, "say \\"hi\\", 7"\nw2.png\tTOTAL 4.50\n'
        "w0.png AB 12\nnope.png, \"AB\"\n", encoding="utf-8")
    chars = Dictionary(sorted(set("".join(texts) + "AB")), space=True)
    got = read_labels(tmp_path / "gt.txt", chars)
    assert [(r.image.rsplit("/", 1)[-1], r.text) for r in got.rows] == \
        [(f"w{k}.png", t) for k, t in enumerate(texts)]
    assert got.errors == [
        "gt.txt line 4: no tab between image and text: 'w0.png AB 12' (a space separates the "
        "image from the text: a row is 'image<TAB>text', as PaddleOCR reads it)",
        "gt.txt line 5: no tab between image and text: 'nope.png, \"AB\"'"]
    assert any("2 row(s) in ICDAR's form" in w and "line 1, 2)" in w
               for w in got.warnings), got.warnings
