"""Round 34 (h2's finding, for reading.py): the direction model reads a long crop's first
48 x 192 window alone where that window is at least ``CLS_ONE_VIEW`` sure either way, and
its other windows only otherwise. Oracle: the three-window average (the function before the
change, kept here) gives the same turns and settlings on the same crops, and the model is
asked for fewer views."""

import numpy as np
import pytest

pytest.importorskip("onnxruntime")


def _all_windows(self, crops):
    """The old ``_cls_probs``: every window of every crop, averaged."""
    from skiff.kernels.ocr.rec import cls_input

    cls = self.engine("cls")
    views, whose = [], []
    for k, c in enumerate(crops):
        h, w = c.shape[:2]
        win = 4 * max(h, 1)
        starts = [0] if w <= 1.25 * win else \
            np.linspace(0, w - win, min(3, -(-w // win))).astype(int).tolist()
        for s in starts:
            views.append(c if len(starts) == 1 else c[:, s:s + win])
            whose.append(k)
    seen = np.zeros((len(views), 2), np.float32)
    for start in range(0, len(views), self.cls_batch):
        part = views[start:start + self.cls_batch]
        seen[start:start + len(part)] = cls(cls_input(part, self.xp))
    probs = np.zeros((len(crops), 2), np.float32)
    np.add.at(probs, np.array(whose), seen)
    return probs / np.bincount(whose, minlength=len(crops))[:, None]


def test_sure_first_window_is_the_reading(monkeypatch):
    from skiff.kernels.ocr import OcrPipeline, reading
    from skiff.kernels.ocr.synth import render_document

    pipe = OcrPipeline("ch", device="cpu", threads=1)
    page = render_document(0, seed=3).image  # 20-40 long English lines
    pipe(page)  # detection and crops made once
    items = [pipe._load(0, 0, page).__next__()]
    pipe.detect(items)
    crops, owners = pipe.crop(items)
    cls = pipe.engine("cls")
    seen = []
    monkeypatch.setattr(type(cls), "__call__",
                        lambda self, batch, _c=type(cls).__call__: seen.append(len(batch))
                        or _c(self, batch))
    new = pipe._cls_probs(crops)
    n_new = sum(seen)
    seen.clear()
    old = _all_windows(pipe, crops)
    n_old = sum(seen)
    assert n_new < 0.8 * n_old  # long clean lines: most first windows are sure
    sure = new.max(1) >= reading.CLS_ONE_VIEW
    # a crop not sure on its first window has the old average
    np.testing.assert_allclose(new[~sure], old[~sure], atol=1e-6)
    # the decisions made from them are the old ones
    monkeypatch.setattr(type(pipe), "_cls_probs", _all_windows)
    f_old, s_old = pipe.directions(crops, owners, items)
    monkeypatch.undo()
    f_new, s_new = pipe.directions(crops, owners, items)
    np.testing.assert_array_equal(f_new, f_old)
    np.testing.assert_array_equal(s_new, s_old)
