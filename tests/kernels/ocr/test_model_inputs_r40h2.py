"""The models' CPU inputs (round 40, h2): the same bits as the plain float32 arithmetic of
the models' normalization ((v * 2/255 - 1), channels first, grey 127.5 padding), written in
one pass: det_input, rec_input and cls_input made four float32 copies of each batch (the
cast, the scale, the shift, the transposed copy), ~3x the batch's size at once."""

import tracemalloc

import numpy as np
import pytest

from skiff.kernels.ocr import det, rec


def _expected(hwc: np.ndarray) -> np.ndarray:
    """The oracle: each value normalized in float32, (H, W, C) -> (C, H, W)."""
    x = np.asarray(hwc, np.float32)
    return (x * np.float32(2.0 / 255.0) - np.float32(1.0)).transpose(2, 0, 1)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(
        np.ascontiguousarray(a, np.float32).view(np.uint32),
        np.ascontiguousarray(b, np.float32).view(np.uint32))


def _crops(rng, dtype=np.uint8):
    out = [rng.integers(0, 256, (int(rng.integers(12, 70)), int(rng.integers(30, 700)), 3))
           for _ in range(5)]
    return [c.astype(dtype) + (0.25 if dtype != np.uint8 else 0) for c in out]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_rec_input_bits(dtype):
    rng = np.random.default_rng(3)
    crops = _crops(rng, dtype)
    x = rec.rec_input(crops, 48, bucket="step")
    assert x.dtype == np.float32 and x.flags.c_contiguous
    resized = [rec._resize_h(c, 48, 4096) for c in crops]
    width = rec.input_width(max(r.shape[1] for r in resized), "step")
    pad = np.float32(127.5) * np.float32(2.0 / 255.0) - np.float32(1.0)
    assert x.shape == (len(crops), 3, 48, width)
    for k, r in enumerate(resized):
        assert _same_bits(x[k, :, :, : r.shape[1]], _expected(r))
        rest = x[k, :, :, r.shape[1]:]
        assert rest.size == 0 or np.array_equal(rest.view(np.uint32),
                                                np.full(rest.shape, pad).view(np.uint32))


def test_cls_input_bits():
    rng = np.random.default_rng(4)
    crops = _crops(rng)
    x = rec.cls_input(crops)
    assert x.shape == (len(crops), 3, *rec.CLS_SHAPE) and x.flags.c_contiguous
    for k, c in enumerate(crops):
        r = rec._resize_h(c, *rec.CLS_SHAPE)
        assert _same_bits(x[k, :, :, : r.shape[1]], _expected(r))
        assert np.all(x[k, :, :, r.shape[1]:] == x[0, 0, 0, -1])  # one grey padding


def test_det_input_bits():
    import cv2

    rng = np.random.default_rng(5)
    images = [rng.integers(0, 256, (200, 700, 3), np.uint8),
              rng.integers(0, 256, (90, 333, 3), np.uint8)]
    x, sizes = det.det_input(images, [1.0, 1.5])
    assert x.dtype == np.float32 and x.flags.c_contiguous and x.shape[:2] == (2, 3)
    H, W = x.shape[2:]
    for k, (img, (hh, ww)) in enumerate(zip(images, sizes, strict=True)):
        r = cv2.resize(img, (ww, hh), interpolation=cv2.INTER_AREA if hh < img.shape[0]
                       else cv2.INTER_LINEAR)
        r = cv2.copyMakeBorder(r, 0, H - hh, 0, W - ww, cv2.BORDER_REPLICATE)
        assert _same_bits(x[k], _expected(r))


def _peak(fn) -> tuple[int, object]:
    tracemalloc.start()
    try:
        out = fn()
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


def test_inputs_made_in_one_copy():
    """The peak memory of making a batch is about the batch itself (and for the detector
    its uint8 pixels, resized and padded: 1.97x), not four float32 copies (3.96x for the
    detector, 4.24x and 4.05x for the recognizer and the direction model)."""
    rng = np.random.default_rng(6)
    images = [rng.integers(0, 256, (480, 960, 3), np.uint8)]
    peak, (x, _) = _peak(lambda: det.det_input(images, [1.0]))
    assert peak < 2.3 * x.nbytes, (peak, x.nbytes)
    crops = [rng.integers(0, 256, (48, 1000, 3), np.uint8) for _ in range(4)]
    peak, x = _peak(lambda: rec.rec_input(crops, 48, bucket="step"))
    assert peak < 1.7 * x.nbytes, (peak, x.nbytes)
    crops = [rng.integers(0, 256, (30, 100, 3), np.uint8) for _ in range(4)]
    peak, x = _peak(lambda: rec.cls_input(crops))
    assert peak < 1.7 * x.nbytes, (peak, x.nbytes)
