"""A huge page of small text reads: detection keeps the scale the text needs and runs in
tiles of bounded size (blank ones skipped), and lines cut by the tiles' edges come back
whole. Before, the page was shrunk to a 4 MP detection input and its text vanished."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr.synth import char_accuracy


@pytest.mark.slow
def test_huge_page_of_small_text_reads_in_tiles(pipe, fonts, tmp_path):
    import cv2

    from skiff.kernels.ocr.synth import render_page

    blocks = {  # (top, left): lines, each block crossing several tile edges
        (300, 400): ["Shipping manifest for container 4471 bound for Rotterdam",
                     "Gross weight 18,240 kg including pallets and wrapping"],
        (3950, 2900): ["Inspection passed on 12 March with no remarks recorded"],
        (7400, 5600): ["Seal number 00923-B checked at the gate by the night shift"],
    }
    side = 8000
    page = np.full((side, side), 255, np.uint8)
    for (top, left), lines in blocks.items():
        patch = cv2.cvtColor(render_page(lines, size=15, seed=2), cv2.COLOR_RGB2GRAY)
        page[top:top + patch.shape[0], left:left + patch.shape[1]] = patch
    path = tmp_path / "huge.png"
    cv2.imwrite(str(path), page)
    del page

    r = pipe(str(path))
    assert r.error is None
    truth = [line for lines in blocks.values() for line in lines]
    assert len(r.lines) == len(truth), r.text  # one box a line: cut lines were joined
    assert char_accuracy(r.text, "\n".join(truth)) >= 0.97, r.text
    # the page was not shrunk until its text vanished (to 4 MP: 3-px text); a large page's
    # print is detected at DetParams.large_target px
    from skiff.kernels.ocr.det import DetParams

    seen = r.timings["det_scale"] * r.timings["text_height"]
    assert seen >= DetParams().large_target - 0.01, r.timings
