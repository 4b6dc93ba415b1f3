"""symbol_shapes' templates without fontTools (round 44, h2): a face lacks a symbol whose
drawing is its ".notdef" glyph's. Oracle: fontTools' cmap of each face (the round-43 code),
the templates bit for bit; with fontTools unimportable the same templates come back (the
cmaps cost 0.18 CPU s of each process that reached a symbol)."""

import os
import sys

import numpy as np
import pytest

from skiff.kernels.ocr import symbol_shapes as S

fontTools = pytest.importorskip("fontTools.ttLib")


def _by_cmap():
    from PIL import Image, ImageDraw, ImageFont

    out = {}
    for path in S.FACES:
        if not os.path.exists(path):
            continue
        cmap = fontTools.TTFont(path, fontNumber=0, lazy=True)["cmap"].getBestCmap()
        face = ImageFont.truetype(path, 64)
        for sym in S.SYMBOLS + S.LIGHT:
            if ord(sym) not in cmap:
                continue
            im = Image.new("L", (192, 192), 255)
            ImageDraw.Draw(im).text((64, 32), sym, font=face, fill=0)
            glyph = S._cut(np.asarray(im) < 128)
            if glyph is not None:
                out.setdefault(sym, []).append((S._vector(glyph), glyph.shape[1] / glyph.shape[0]))
    return out


def test_templates_are_the_cmaps_without_fonttools(monkeypatch):
    want = _by_cmap()
    if not want:
        pytest.skip("no face of symbol_shapes.FACES installed")
    monkeypatch.setitem(sys.modules, "fontTools", None)  # any import of it fails
    monkeypatch.setitem(sys.modules, "fontTools.ttLib", None)
    got = S._templates.__wrapped__()
    assert got.keys() == want.keys()
    for sym in want:
        assert len(got[sym]) == len(want[sym]), sym
        for (gv, ga), (wv, wa) in zip(got[sym], want[sym]):
            assert ga == wa and np.array_equal(gv, wv), sym
