"""A user's own crop files as the OCR pipeline will read them: a vertical line (a crop much
taller than wide) is turned as ``rec.crop_box`` turns a tall detected box, not refused."""

from __future__ import annotations

import numpy as np

from skiff.kernels.ocr.rec import crop_box
from skiff.kernels.ocr_train.finetune import _load
from skiff.kernels.ocr_train.labels import Dictionary, read_labels


def _column(text, font, size=28):
    """``text`` printed top to bottom, one character under the other (a vertical line)."""
    from PIL import Image, ImageDraw, ImageFont

    f = ImageFont.truetype(font, size)
    im = Image.new("RGB", (size + 8, (size + 6) * len(text) + 8), (245, 245, 240))
    d = ImageDraw.Draw(im)
    for k, c in enumerate(text):
        left, top, _, _ = f.getbbox(c)
        d.text((4 - left, 4 + k * (size + 6) - top), c, font=f, fill=(15, 15, 15))
    return np.asarray(im)


def test_a_vertical_crop_trains_turned_as_the_pipeline_reads_it(tmp_path, fonts):
    from PIL import Image

    column = _column("AB-1234", fonts["latin"])
    lone = _column("1", fonts["latin"])[:, 6:-6]  # a lone tall digit: read as it stands
    Image.fromarray(column).save(tmp_path / "col 1.png")
    Image.fromarray(lone).save(tmp_path / "one.png")
    (tmp_path / "rec_gt_train.txt").write_bytes(
        "\ufeffcol 1.png\tAB-1234\r\none.png\t1\r\n".encode())
    labels = read_labels(tmp_path, Dictionary(list("0123456789AB-"), space=True))
    assert not labels.errors
    crops, texts, errors = _load(labels.rows, "rec_gt_train.txt")
    assert errors == [] and texts == ["AB-1234", "1"]
    h, w = column.shape[:2]
    box = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    expected = crop_box(column, box)  # the pipeline's own cut of the whole column
    assert expected.shape[1] > expected.shape[0]
    np.testing.assert_array_equal(crops[0], expected)
    np.testing.assert_array_equal(crops[1], lone)
