"""Round 45 (h3's request): a receipt's "name ..... price" rows at half size (round 44's
``p4.png``) were boxed whole by the first detection pass (each row one box, prices inside);
its scores sent the page to a smoothed second pass that split every row into name and price
but, read in tiles, found no region for one row's price. ``_better`` took that pass for its
count alone (8 boxes against 6) and the price was lost. A pass with more boxes now wins only
where its boxes cover each of the old ones (``COVER`` of its area); boxes here are the
shapes of that trace (rows 20 px tall, names at x 20-110, prices at x 180-214)."""

import numpy as np

from skiff.kernels.ocr.detecting import COVER, _better, _covers


def _box(x0, y0, x1, y1, score=0.6):
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32), score


def _rows(split, drop_price_of=None):
    out = [_box(60, 10, 160, 34)]  # the header
    for k in range(5):
        y = 50 + 30 * k
        if k not in split:
            out.append(_box(20, y, 214, y + 20))  # name, leader and price as one line
            continue
        out.append(_box(20, y, 110, y + 20))
        if k != drop_price_of:
            out.append(_box(180, y, 214, y + 20))
    return out


def test_more_boxes_that_lose_a_rows_price_do_not_win():
    old = _rows(split={3, 4})                    # 3 rows whole, 2 split: 8 boxes
    new = _rows(split={0, 1, 2, 3, 4}, drop_price_of=1)  # all split, one price lost: 10
    assert len(new) > len(old)
    assert not _covers(new, old)
    assert not _better(new, old)


def test_more_boxes_that_cover_the_old_ones_still_win():
    old = _rows(split={3, 4})
    new = _rows(split={0, 1, 2, 3, 4})           # every row split, nothing lost
    assert _covers(new, old) and _better(new, old)
    assert 0.5 < COVER < 1.0
