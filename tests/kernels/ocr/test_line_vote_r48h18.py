"""The line vote across the denoised copies (round 48, h18): a CJK line of the chosen copy
that both other copies read alike, at its place, takes their text. The readings are the
hard degraded tier's seed 2 label 43 (14 px, drawn "找零" / "现金支付"), measured with round
48's candidate delta (docs/ocr.md "Round 48 (h1)", ``/work/round48/h1/hdegC.jsonl``): the
bilateral copy has the most confident characters and is chosen, but reads "现金支行" where
the two other copies both read "现金支付"; its first line ("我爱") is read "找家" and "我家"
by the others, who disagree, so it stays. And the unseen-face set's seed 31 label 14 (17 px,
"会员价 68 元", round 46's log): the two other copies read "会员价68元", the chosen one
"会员价 68元": characters alike, so no vote (spaces stay the chosen copy's)."""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace

import numpy as np

from skiff.kernels.ocr import denoise, reading
from skiff.kernels.ocr.item import Item
from skiff.kernels.ocr.synth import char_accuracy

TRUTH = ["找零", "现金支付"]
# per copy: (text, score, box middle height, box left edge), as logged
LABELS = {}
LABELS["2/43"] = {"a": [("找家", 0.5469, 69.5, 145.0), ("现金支付", 0.6689, 47.5, 120.0)],
          "bilateral": [("我爱", 0.5703, 71.0, 144.0), ("现金支行", 0.7767, 47.5, 119.6)],
          "c": [("我家", 0.5776, 69.0, 144.0), ("现金支付", 0.6991, 45.5, 119.0)]}
LABELS["31/14"] = {
    "a": [("二维码支付", 0.9943, 127.8, 81.1), ("会员价68元", 0.9951, 98.1, 98.4)],
    "bilateral": [("二维码支付", 0.9933, 128.5, 82.4), ("会员价 68元", 0.937, 98.3, 99.6)],
    "c": [("二维码支付", 0.9582, 128.0, 80.4), ("会员价68元", 0.9961, 97.8, 96.9)]}
FIRST = [("我爱", 0.55), ("现金支行", 0.60)]  # the noisy image's own unsure reading


def _box(y, x, h=14.0, w=60.0):
    quad = np.array([[x, y - h / 2], [x + w, y - h / 2], [x + w, y + h / 2], [x, y + h / 2]])
    return quad, 0.9


def _fake_read_twins(copies, column, pipe, twins):
    crops, owners, texts = [], [], []
    for j, tw in enumerate(twins):
        lines = copies[tw.timings["name"]]
        tw.boxes = [_box(y, x, *((60.0, 14.0) if column else ())) for _, _, y, x in lines]
        for b, (text, score, _, _) in enumerate(lines):
            crops.append(np.zeros((14, 60, 3), np.uint8))
            owners.append((j, b))
            texts.append((text, score))
    return crops, owners, texts, [False] * len(texts), reading.lines_by_image(owners)


class _Reading(reading.LineReading):
    min_score = 0.5
    params = SimpleNamespace(limit=960)


def _read(monkeypatch, key="2/43", column=False):
    copies = LABELS[key]
    monkeypatch.setattr(reading, "read_twins", partial(_fake_read_twins, copies, column))
    monkeypatch.setattr(denoise, "noise_sigma", lambda bgr: 5.93)  # as logged: noisy
    monkeypatch.setattr(denoise, "denoised_twins",
                        lambda bgr: [(name, bgr.copy()) for name in copies])
    real_item = reading.Item

    def named_item(index, label, image, timings):  # the twin knows its copy's name
        return real_item(index, label, image, timings={**timings, "name": NAMES.pop(0)})

    NAMES = list(copies)
    monkeypatch.setattr(reading, "Item", named_item)
    it = Item(0, "label", np.full((100, 240, 3), 200, np.uint8))
    it.boxes = [_box(70.0, 144.0), _box(47.0, 120.0)]
    crops = [np.zeros((14, 60, 3), np.uint8)] * 2
    crops, owners, texts, _ = _Reading()._read_denoised([it], crops, [(0, 0), (0, 1)],
                                                       list(FIRST), [False, False])
    assert it.timings["denoised"] == "bilateral"  # the copy with the most confident chars
    return [texts[k] for k, (pos, _) in enumerate(owners) if pos == 0]


def test_a_line_both_other_copies_read_alike_takes_their_text(monkeypatch):
    got = _read(monkeypatch)
    text = "\n".join(t for t, _ in got)
    # the second line takes the two copies' (right) reading, keeping its own surer score;
    # the first stays: the other copies read it two ways
    assert got == [("我爱", 0.5703), ("现金支付", 0.7767)]
    assert char_accuracy(text, "\n".join(TRUTH)) > char_accuracy("我爱\n现金支行",
                                                                  "\n".join(TRUTH))


def test_no_vote_when_switched_off(monkeypatch):
    monkeypatch.setattr(reading, "LINE_VOTE", False)
    assert _read(monkeypatch) == [("我爱", 0.5703), ("现金支行", 0.7767)]


def test_no_vote_on_spaces_alone(monkeypatch):
    assert _read(monkeypatch, "31/14") == [("二维码支付", 0.9933), ("会员价 68元", 0.937)]


def test_no_vote_on_columns(monkeypatch):
    # the same readings boxed as columns (taller than wide, read turned a quarter): the hard
    # set's vertical tier (seed 2, image 6) lost "处处闻啼鸟" -> "处处闻啼乌" to a vote
    assert _read(monkeypatch, column=True) == [("我爱", 0.5703), ("现金支行", 0.7767)]
