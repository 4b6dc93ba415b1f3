"""One image on its way through :class:`.pipeline.OcrPipeline`: its pixels, boxes and timings."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Item:
    """An input image (or a page of one) between loading and its result: ``index`` in the
    run, ``label`` as results name it, ``bgr`` pixels (None with ``error`` set when it
    could not be read), the ``boxes`` found, per-stage ``timings``, and the ``ink`` box
    detection reads inside."""

    index: int
    label: str
    bgr: np.ndarray | None = None
    error: str | None = None
    load_s: float = 0.0
    boxes: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    ink: tuple | None = None  # (y0, y1, x0, x1): detection reads only inside this box
    # (scale, boxes): glyph-sized regions the detector saw faintly at that scale
    # (det.db_boxes' ``faint``), looked at again enlarged (DetectionPasses._faint_glyphs)
    faint: tuple | None = None
    sigma: float | None = None  # denoise.noise_sigma of bgr, once measured (noise())

    def noise(self) -> float:
        """:func:`.denoise.noise_sigma` of the pixels, measured once."""
        if self.sigma is None:
            from .denoise import noise_sigma

            self.sigma = noise_sigma(self.bgr)
        return self.sigma
