"""``checkboxes._longest`` vectorised (round 35): the same run lengths as the row-by-row loop
it replaced (the oracle, kept here), on random masks of every density and shape."""
import numpy as np

from skiff.kernels.ocr.checkboxes import _longest


def _rows(lines):
    best = 0
    for line in lines:
        edges = np.flatnonzero(np.diff(np.concatenate(([0], line.astype(np.int8), [0]))))
        if len(edges):
            best = max(best, int((edges[1::2] - edges[::2]).max()))
    return best


def test_longest_run_equals_the_row_loop():
    rng = np.random.default_rng(35)
    for _ in range(800):  # 800 random masks cover the sizes and densities (3,000 cost 3.7x)
        h, w = rng.integers(1, 40, 2)
        mask = rng.random((h, w)) < rng.random()
        assert _longest(mask) == _rows(mask)
        assert _longest(mask.T) == _rows(mask.T)


def test_longest_run_edges():
    assert _longest(np.zeros((0, 5), bool)) == 0 and _longest(np.zeros((3, 0), bool)) == 0
    assert _longest(np.ones((2, 7), bool)) == 7
    assert _longest(np.array([[1, 1, 0, 1, 1, 1, 0]], np.uint8)) == 3
