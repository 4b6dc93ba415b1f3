"""How a crop's direction is settled, and which crops are read both ways."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from skiff.kernels.ocr import OcrPipeline
from skiff.kernels.ocr import pipeline as P
from skiff.kernels.ocr import reading as R


class _Cls:
    """A direction model that answers p(upright) per crop, in order."""

    def __init__(self, p_up):
        self.p_up = list(p_up)

    def __call__(self, batch):
        n = len(batch)
        p, self.p_up = np.array(self.p_up[:n], np.float32), self.p_up[n:]
        return np.stack([p, 1 - p], 1)


@pytest.fixture
def pipe():
    p = OcrPipeline(device="cpu", threads=1)
    p.read_again = []

    def recognize(crops, owners, items, fallback=True, rival=None):  # turned: all worse
        p.read_again.append([o for o in owners])
        return [("x", 0.1)] * len(crops)

    p.recognize = recognize
    return p


def _crops(n):
    return [np.full((20, 80, 3), 200, np.uint8) for _ in range(n)]


def _items(n):
    return [SimpleNamespace(timings={}) for _ in range(n)]


def test_page_settles_its_crops_and_model_settles_sure_upright_ones(pipe):
    # page 0: three sure crops agree -> settled by the page; page 1: two crops, one 0.95
    # upright (sure enough), one 0.6 (not)
    pipe._engines["cls"] = _Cls([0.99, 0.97, 0.995, 0.95, 0.6])
    owners = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    flags, settled = pipe.directions(_crops(5), owners, _items(2))
    assert not flags.any()
    assert settled.tolist() == [R.BY_PAGE] * 3 + [R.BY_MODEL, R.UNSETTLED]


def test_small_pages_go_to_the_direction_model_together(pipe):
    """Pages of at most a step's crops (a folder of one-line images, crops read with
    ``use_det=False``) are read by the direction model in one call, not one each; a larger
    page keeps its own steps, widest crops first."""
    calls = []
    pipe._cls_probs = lambda crops: (calls.append(len(crops)),
                                     np.tile([[0.99, 0.01]], (len(crops), 1)))[1]
    big = R.PAGE_STEP + 1
    owners = [(p, 0) for p in range(4)] + [(4, b) for b in range(big)]
    flags, settled = pipe.directions(_crops(4 + big), owners, _items(5))
    assert calls[0] == 4 and sum(calls) <= 4 + big and len(calls) <= 3
    assert not flags.any() and (settled[:4] == R.BY_MODEL).all()


def test_poor_reading_is_checked_unless_its_page_settled_it(pipe):
    owners = [(0, 0), (0, 1), (1, 0), (1, 1)]
    settled = np.array([R.BY_PAGE, R.BY_PAGE, R.BY_MODEL, R.UNSETTLED], np.int8)
    texts = [("poor", 0.5), ("sure", 0.99), ("poor", 0.5), ("sure", 0.99)]
    flags = np.zeros(4, bool)
    pipe.read_both_ways(_crops(4), owners, _items(2), flags, settled, list(texts))
    # the page-settled poor crop is not read again; the model-settled poor one and the
    # unsettled one are
    assert pipe.read_again == [[(1, 0), (1, 1)]]
    assert not flags.any()


class _SlowEngine:
    """Stands in for OnnxEngine: making the recognizer waits until ``release`` is set."""

    release = None
    made: list = []

    def __init__(self, path, device, **kw):
        if str(path) == "rec":
            assert self.release.wait(10)
        self.path = path
        _SlowEngine.made.append(str(path))


def test_engines_are_made_apart_and_preloaded(monkeypatch):
    import threading

    monkeypatch.setattr(P, "OnnxEngine", _SlowEngine)
    monkeypatch.setattr(OcrPipeline, "_model_file", lambda self, which: which)
    _SlowEngine.release, _SlowEngine.made = threading.Event(), []
    p = OcrPipeline(device="cpu", threads=1)
    making_rec = threading.Thread(target=p.engine, args=("rec",))
    making_rec.start()
    got = []
    wants_det = threading.Thread(target=lambda: got.append(p.engine("det")))
    wants_det.start()
    wants_det.join(5)
    # the detector is made while the recognizer is still being made (one lock each)
    assert not wants_det.is_alive() and got[0].path == "det"
    assert making_rec.is_alive()
    _SlowEngine.release.set()
    making_rec.join(5)
    assert _SlowEngine.made == ["det", "rec"]

    q = OcrPipeline(device="cpu", threads=1)
    assert list(q.run([])) == []  # a run makes its engines in the background, and waits
    assert sorted(q._engines) == ["cls", "det", "rec"]
    assert q.preload() is None  # all made: nothing to do


def test_the_direction_model_stops_once_a_page_is_settled(pipe):
    """A page's crops are seen widest first, eight at a time; once eight are sure and none
    is sure of the other way, the page settles the rest unseen (a 40-line page: 8 crops
    through the model, not 40). A sure turned crop among them keeps the model reading."""
    crops = [np.full((20, 60 + k, 3), 200, np.uint8) for k in range(30)]  # widths 60..89
    owners = [(0, k) for k in range(30)]
    pipe._engines["cls"] = cls = _Cls([0.99] * 30)
    flags, settled = pipe.directions(crops, owners, _items(1))
    assert len(cls.p_up) == 30 - R.PAGE_STEP  # only the first step was read
    assert not flags.any() and (settled == R.BY_PAGE).all()

    # the widest crops come first: the model's eighth answer (a sure turn) is for crop 22
    pipe._engines["cls"] = cls = _Cls([0.99] * 7 + [0.02] + [0.99] * 22)
    flags, settled = pipe.directions(crops, owners, _items(1))
    assert cls.p_up == []  # all read: the page was not unanimous
    # 29 sure upright against one: the page outvotes the lone turn
    assert not flags.any() and (settled == R.BY_PAGE).all()

    # two pages: each is read and settled on its own
    owners2 = [(k % 2, k) for k in range(30)]
    pipe._engines["cls"] = cls = _Cls([0.99] * 30)
    flags, settled = pipe.directions(crops, owners2, _items(2))
    assert len(cls.p_up) == 30 - 2 * R.PAGE_STEP
    assert (settled == R.BY_PAGE).all()


def test_a_pages_lines_do_not_settle_its_columns(pipe):
    """A page's lying boxes settle each other; a standing one (read turned a quarter: a
    margin stamp reading upwards is then upside down) follows the direction model or is
    read both ways, whatever the lines say (round 24: an arXiv stamp read "ar0] 004:.C]")."""
    def box(w, h):
        return (np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32), 0.9)

    items = [SimpleNamespace(timings={}, boxes=[box(200, 20)] * 3 + [box(30, 400)])]
    pipe._engines["cls"] = _Cls([0.99, 0.99, 0.99, 0.02])  # the column: sure it is turned
    flags, settled = pipe.directions(_crops(4), [(0, b) for b in range(4)], items)
    assert flags.tolist() == [False, False, False, True]
    assert settled[:3].tolist() == [R.BY_PAGE] * 3 and settled[3] == R.UNSETTLED
    pipe._engines["cls"] = _Cls([0.99, 0.99, 0.99, 0.6])  # unsure: read both ways
    flags, settled = pipe.directions(_crops(4), [(0, b) for b in range(4)], items)
    assert settled[3] == R.UNSETTLED


def test_a_column_boxed_in_two_overlapping_pieces_is_one_box():
    from skiff.kernels.ocr.det import join_columns, merge_tiled

    def box(x0, y0, x1, y1):
        return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32)

    joined = join_columns([(box(35, 435, 63, 578), 0.8), (box(35, 570, 65, 898), 0.7),
                           (box(150, 60, 700, 90), 0.9)])          # a row: left alone
    assert len(joined) == 2
    column = [b for b, _ in joined if b[:, 1].max() > 800][0]
    assert column[:, 1].min() == 435 and column[:, 1].max() == 898 and column[:, 0].max() == 65
    # columns side by side (vertical CJK), and pieces one above the other that do not
    # overlap, stay apart
    apart = join_columns([(box(290, 18, 346, 252), 0.9), (box(207, 18, 265, 252), 0.9),
                          (box(290, 300, 346, 500), 0.9)])
    assert len(apart) == 3
    # a column cut by a tile's lower edge: its two pieces touch along it
    merged = merge_tiled([(box(35, 100, 63, 512), 0.9, True), (box(36, 500, 64, 900), 0.8, True)])
    assert len(merged) == 1


def test_an_arxiv_stamp_on_a_page_of_print_reads_as_one_line(fonts):
    """A paper's margin stamp turned to read upwards, beside a page of print: the page's
    lines settled it upright (upside down once turned) and the detector boxed it in two
    overlapping pieces (round 24, a user's probe; RapidOCR read it)."""
    from PIL import Image, ImageDraw, ImageFont

    import skiff

    serif = ImageFont.truetype(
        "/usr/share/fonts/truetype/liberation2/LiberationSerif-Regular.ttf", 26)
    page = Image.new("RGB", (1000, 1000), "white")
    draw = ImageDraw.Draw(page)
    body = ["Attention Is Not All You Need Today", "We study how small recognizers behave",
            "documents and find that layout matters", "than model size for most purposes.",
            "Our experiments cover twelve languages", "three scripts, with results in Table 2."]
    for i, line in enumerate(body):
        draw.text((150, 60 + i * 70), line, font=serif, fill="black")
    stamp = "arXiv:2401.01234v1 [cs.CL] 3 Jan 2024"
    label = Image.new("RGB", (700, 40), "white")
    ImageDraw.Draw(label).text((5, 5), stamp, fill=(120, 120, 120), font=ImageFont.truetype(
        "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf", 26))
    page.paste(label.rotate(90, expand=True), (30, 200))
    got = [line.text for line in skiff.ocr(np.asarray(page)).lines]
    assert stamp in got, got
    assert all(line in got for line in body), got
