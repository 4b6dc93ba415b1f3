"""Calibration for the int8 detector: the pages it is calibrated on and the detector inputs a
float32 pipeline makes for them (:mod:`.quantize` builds and caches the graph).

    python -m skiff.kernels.ocr.calibrate SRC.onnx DST.onnx

is what :func:`.quantize.int8_detector` runs in a child process: it renders the pages,
records the inputs, and writes the int8 twin of detector ``SRC`` to ``DST``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from .quantize import SEED, build_int8_detector

__all__ = ["calibration_images", "calibration_inputs", "main"]


def calibration_images(per_category: int = 4) -> list[np.ndarray]:
    """BGR pages to calibrate on: the clean set's categories, where their fonts are installed
    the hard tiers, and sparse pages (a few text blocks far apart on a large white sheet, read
    in tiles, mostly paper: without them a near-blank tile of a huge page came out as one
    box). Fixed seed, so every machine builds the same model."""
    from .synth import make_test_set
    from .synth_hard import make_hard_set

    samples = list(make_test_set(per_category, seed=SEED))
    try:
        samples += make_hard_set(per_category, seed=SEED)
    except Exception:  # fonts of the hard set missing: the clean set alone
        pass
    pages = [np.ascontiguousarray(s.image[..., ::-1]) for s in samples]
    rng = np.random.default_rng(SEED)
    clean = [p for p, s in zip(pages, samples) if s.category in ("clean", "small")]
    for k in range(3):
        sheet = np.full((2400, 2400, 3), 255, np.uint8)
        for block in clean[k::3][:3]:
            h, w = min(block.shape[0], 800), min(block.shape[1], 800)
            y, x = (int(v) for v in rng.integers(0, 2400 - 800, 2))
            sheet[y:y + h, x:x + w] = block[:h, :w]
        pages.append(sheet)
    return pages


def calibration_inputs(src: str | Path, images: list[np.ndarray]) -> list[np.ndarray]:
    """The detector inputs the pipeline makes for ``images`` (every pass: first, enlarged,
    smoothed, levelled), recorded while a float32 pipeline with detector ``src`` runs."""
    from .item import Item
    from .models import get_model_set
    from .pipeline import OcrPipeline

    pipe = OcrPipeline(get_model_set("ch").custom(det=str(src)), device="cpu",
                       precision="fp32", threads=1)
    det = pipe.engine("det")
    seen: list[np.ndarray] = []
    run = det.session.run

    def record(outputs, feeds, *args, **kwargs):
        seen.append(np.array(next(iter(feeds.values())), np.float32))
        return run(outputs, feeds, *args, **kwargs)

    det.session.run = record
    for i, bgr in enumerate(images):
        pipe.detect([Item(i, f"<calibration {i}>", bgr)])
    return seen


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m skiff.kernels.ocr.calibrate SRC.onnx DST.onnx", file=sys.stderr)
        return 2
    import logging

    logging.disable(logging.WARNING)  # the quantizer's per-tensor notes
    src, dst = args
    build_int8_detector(src, dst, calibration_inputs(src, calibration_images()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
