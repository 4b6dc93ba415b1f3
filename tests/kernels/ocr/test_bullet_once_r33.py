"""A round dot just before a line's box is written "• " (round 33, h3: `box_before` returns
"•"); a line whose reading already begins with a bullet must not get a second one. The
oracle: the line's own text, unchanged."""

import numpy as np

from skiff.kernels.ocr import pipeline


class Line:
    def __init__(self, text):
        self.text = text


def test_a_read_bullet_is_not_doubled(monkeypatch):
    box = np.array([[40, 10], [200, 10], [200, 30], [40, 30]], np.float64)
    monkeypatch.setattr(pipeline, "box_before", lambda image, b: ("•", (20, 14, 30, 24)))
    lines = [Line("• Pricing"), Line("Beta opens on 3 March"), Line("● Roadmap")]
    drop = pipeline.checkbox_lines(lines, [box, box + [0, 40], box + [0, 80]],
                                   np.full((120, 220), 255, np.uint8))
    assert [ln.text for ln in lines] == ["• Pricing", "• Beta opens on 3 March", "● Roadmap"]
    assert drop == set()
