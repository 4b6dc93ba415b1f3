"""Large pages are not loaded far ahead (``pipeline.AHEAD_MB``): the pixels in flight stay
under the bound, an image larger than it is still read (alone), and the texts are those of
a run without the bound (the oracle: the same pages read with the bound lifted, and the
rendered words)."""

from __future__ import annotations

import threading

import pytest
from PIL import Image, ImageDraw

from skiff.kernels.ocr import pipeline as P
from skiff.kernels.ocr.images import PixelBudget
from skiff.kernels.ocr.synth import fonts

MiB = 2**20


def test_budget_waits_at_ahead_but_reads_a_large_image_alone():
    budget = PixelBudget(100, ahead_bytes=10)
    budget.wait_for(60)  # none in flight: a large image is read alone
    budget.held = 6
    blocked = []
    budget.on_block = lambda: blocked.append(1)
    done = threading.Event()

    def later():
        budget.wait_for(5)  # 6 + 5 > 10: waits until room
        done.set()

    t = threading.Thread(target=later, daemon=True)
    t.start()
    assert not done.wait(0.2) and blocked == [1]
    with budget._cond:
        budget.held = 4
        budget._cond.notify_all()
    assert done.wait(5)
    t.join(5)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pages")
    from PIL import ImageFont

    font = ImageFont.truetype(str(fonts()["latin"]), 30)
    paths = []
    for k in range(9):
        im = Image.new("RGB", (1200, 900 if k != 4 else 2600), "white")  # page 4: 8.9 MiB
        ImageDraw.Draw(im).text((60, 80), f"Invoice {4100 + k} paid", fill="black", font=font)
        paths.append(str(folder / f"p{k}.png"))
        im.save(paths[-1])
    return paths


def test_pixels_in_flight_stay_under_the_bound(pages, monkeypatch):
    free = P.OcrPipeline("ch", device="cpu", threads=1)
    unbounded = [r.text for r in free.run(pages)]
    assert free.budget.peak > 20 * MiB  # without the bound, pages were held ahead
    monkeypatch.setattr(P, "AHEAD_MB", 7.0)
    bounded = P.OcrPipeline("ch", device="cpu", threads=1)
    texts = [r.text for r in bounded.run(pages)]
    assert texts == unbounded
    assert [f"Invoice {4100 + k} paid" in t for k, t in enumerate(texts)] == [True] * 9
    # 3.1 MiB pages: two at most under 7 MiB, the 8.9-MiB page alone
    assert 8.9 * MiB <= bounded.budget.peak <= 9 * MiB
    assert bounded.budget.held == 0
