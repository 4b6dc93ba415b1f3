"""A 4-D array is a batch of images (N, H, W, C) or (N, C, H, W), as numpy and torch users
hold them; one image with a batch axis came back with no text (round 21)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr import ocr
from skiff.kernels.ocr.images import ImageError, iter_pages


def test_a_batch_array_reads_each_image(sample):
    a = np.asarray(sample.image)
    one = ocr(a).text
    assert one == sample.text
    nhwc = np.stack([a, a[:, ::-1].copy()])           # the second mirrored: other text
    got = ocr(nhwc)
    assert len(got) == 2 and got[0].text == one and got[1].text != one
    nchw = (nhwc.astype(np.float32) / 255).transpose(0, 3, 1, 2)
    assert [r.text for r in ocr(nchw)] == [r.text for r in got]
    assert ocr(a[None])[0].text == one


def test_a_batch_where_one_image_goes_says_so():
    with pytest.raises(ImageError, match="a batch of images: pass it to ocr"):
        list(iter_pages(np.zeros((2, 8, 8, 3), np.uint8)))
