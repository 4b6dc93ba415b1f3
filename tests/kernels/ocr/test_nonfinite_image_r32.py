"""A float image array with NaN or inf pixels (a failed normalisation, a division by zero):
all non-finite is refused in one line naming it; a few non-finite pixels do not change how
the finite ones are scaled (round 32: one inf made a 0-1 image read as all black, and an
all-NaN image gave an empty result with no error)."""

import numpy as np
import pytest

from skiff.kernels.ocr.images import ImageError, _array_rgb


def test_all_nan_refused():
    with pytest.raises(ImageError, match="no finite pixel"):
        _array_rgb(np.full((20, 30), np.nan, np.float32))


def test_one_inf_keeps_a_unit_range_scaled():
    rng = np.random.default_rng(0)
    a = rng.random((20, 30)).astype(np.float32)
    want = _array_rgb(a.copy())  # the same image without its bad pixels
    a[3, 4], a[5, 6] = np.inf, np.nan
    got = _array_rgb(a)
    mask = np.ones(a.shape, bool)
    mask[3, 4] = mask[5, 6] = False
    assert np.array_equal(got[mask], want[mask])
    assert got[3, 4].tolist() == [255, 255, 255] and got[5, 6].tolist() == [0, 0, 0]
    # the independent reference: numpy's own rounding of the 0-1 values to 0-255
    ref = np.clip(a[mask] * 255.0, 0, 255).astype(np.uint8)
    assert np.array_equal(got[mask][:, 0], ref)
