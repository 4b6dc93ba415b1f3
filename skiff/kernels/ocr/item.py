"""One image on its way through :class:`.pipeline.OcrPipeline`: its pixels, boxes and timings."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class _Item:
    index: int
    label: str
    bgr: np.ndarray | None = None
    error: str | None = None
    load_s: float = 0.0
    boxes: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    ink: tuple | None = None  # (y0, y1, x0, x1): detection reads only inside this box
