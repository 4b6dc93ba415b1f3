"""Small noisy images read again from denoised copies: the noise estimate that decides it, and
the copies (:meth:`.reading.LineReading._read_denoised` reads them).

The pipeline looks these up on the module (``denoise.NOISY``), so a test can change them in
one place."""

from __future__ import annotations

import numpy as np

from .images import grey_of

# a small image this noisy (estimated sigma of its pixel noise, after JPEG) whose reading is
# unsure is read again denoised (_read_denoised); rendered and scanned pages measure 0-1.5
NOISY = 2.5
# how much of its difference from a wider blur a smoothed noisy image gets back
# (denoised_twins): 0.8 and 1.5 read seven degraded seeds +0.8 and +1.1 points
SHARPEN = 1.5
# noise that JPEG has smoothed (grain_sigma) this strong also qualifies an image whose
# reading kept lines: rendered, scanned and photographed pages measure under 2.1, degraded
# ones 2.5-6.6 (noise_sigma reads such pages 0-1.5)
GRAIN = 2.2
# the largest side of an image read again denoised; over params.limit / 2 (a page rather
# than a label) only when the characters it kept score under PAGE_SCORE on average
SIDE = 1920
PAGE_SCORE = 0.8
# grey print on a grey ground (a grey sign, a tinted card, a dim photo): an image whose
# lightest levels stay under GREY_GROUND and whose print lies within LOW_RANGE of them (99th
# and 1st percentiles of its grey, smoothed 1 px) is also read again stretched to the full
# range (grey_levels). White paper's 99th percentile measures 212-255 under the degraded
# tier's noise (90 images, three seeds) and 221-255 on photographed, crumpled and shadowed
# labels; h1's grey-on-grey labels 157-201, their range 28-49. Without the ground test the
# stretched copy read one small blurred label on white paper as confident noise ("614W").
LOW_RANGE = 100
GREY_GROUND = 205


def grain_sigma(bgr: np.ndarray) -> float:
    """The noise an image holds between 0.8 and 2.5 px (grey levels, sigma): the median
    absolute deviation of a band-pass (a Gaussian of 0.8 px less one of 2.5 px over it).
    Sensor noise under strong JPEG comes out in 8 x 8 blocks, smooth within a pixel's
    neighbourhood, so :func:`noise_sigma` reads it 0-1.5 while the page is plainly grainy
    (a 1400-px page at 14-16 px print, noise sigma 18-30 before JPEG quality 10-30)."""
    import cv2

    g = cv2.GaussianBlur(grey_of(bgr).astype(np.float32), (0, 0), 0.8)
    r = g - cv2.GaussianBlur(g, (0, 0), 2.5)
    return 1.4826 * float(np.median(np.abs(r - np.median(r))))


def noise_sigma(bgr: np.ndarray) -> float:
    """A robust estimate of the pixel noise of an image (grey levels, sigma): the median
    absolute deviation of its difference from a 3 x 3 median filter, scaled to a Gaussian's
    sigma. Text edges are a small part of the pixels, so flat paper sets the figure."""
    import cv2

    grey = grey_of(bgr)
    r = grey.astype(np.float32) - cv2.medianBlur(grey, 3).astype(np.float32)
    return 1.4826 * float(np.median(np.abs(r - np.median(r))))


def grey_levels(bgr: np.ndarray) -> tuple[float, float]:
    """The 1st and 99th percentiles of an image's grey, smoothed by a Gaussian of 1 px first
    so that noise does not widen them: its print and its paper (near 30 and 230 for dark
    print on white; the 1st percentile is paper too where print is under 1% of the image)."""
    import cv2

    g = cv2.GaussianBlur(grey_of(bgr), (0, 0), 1.0)
    lo, hi = np.percentile(g, (1, 99))
    return float(lo), float(hi)


def is_grey_on_grey(bgr: np.ndarray) -> bool:
    """Faint print on a ground that is not white: ``grey_levels`` under ``GREY_GROUND`` and
    within ``LOW_RANGE`` of each other."""
    lo, hi = grey_levels(bgr)
    return hi < GREY_GROUND and hi - lo < LOW_RANGE


def stretched(bgr: np.ndarray) -> np.ndarray:
    """The image's levels from its 1st to its 99th percentile (all channels together, so
    colours keep their order) stretched over 0-255."""
    lo, hi = np.percentile(bgr, (1, 99))
    out = (bgr.astype(np.float32) - lo) * (255.0 / max(float(hi - lo), 1.0))
    return np.clip(out, 0, 255).astype(np.uint8)


def denoised_twins(bgr: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """The denoised copies a small noisy image is read from again
    (:meth:`OcrPipeline._read_denoised`): smoothed by a Gaussian of 1 px, by a bilateral
    filter (edges kept), and the smoothed copy sharpened again (unsharp mask: 1.5 times its
    difference from a 2-px Gaussian of itself), for print that was blurred before the noise
    came (a photo's lens, a resampled scan). The third read the degraded tier +1.0 points
    over the four seeds it was chosen on and +1.2 over three it was not (0.831 -> 0.843);
    the clean, photo, segment and vertical tiers, the probes and text-free images the
    same."""
    import cv2

    smooth = cv2.GaussianBlur(bgr, (0, 0), 1.0)
    wide = cv2.GaussianBlur(smooth, (0, 0), 2.0)
    sharp = cv2.addWeighted(smooth, 1.0 + SHARPEN, wide, -SHARPEN, 0)  # saturates to uint8
    twins = [("gauss", smooth), ("bilateral", cv2.bilateralFilter(bgr, 7, 50, 5)),
             ("sharpened", sharp)]
    if is_grey_on_grey(bgr):
        # a fourth copy for faint print on a grey ground: the original stretched to the full
        # range (round 29: h1's 14 grey-on-grey labels, contrast 45-60 under noise 10-20 and
        # JPEG 40, 0.580 -> 0.668; stretching the three smoothed copies instead read 0.540,
        # adding all three stretched 0.615 in twice the time)
        twins.append(("stretched", stretched(bgr)))
    return twins
