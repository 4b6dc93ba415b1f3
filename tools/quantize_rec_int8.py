"""Build the int8 twin of an OCR recognizer (opt-in; docs/ocr-int8-rec.md has its figures).

    python tools/quantize_rec_int8.py DST.onnx [--src REC.onnx] [--all-convs] [--pages N]
    python tools/quantize_rec_int8.py --cache      # where precision="hybrid" finds it

Renders pages (clean, documents, the hard tiers; fixed seed), runs a float32 pipeline over
them recording every recognizer batch it makes, and writes the recognizer with its
convolutions and classifier int8 (static QDQ, weights per output channel, moving-average
ranges over those batches; the squeeze-excite, stem and neck convolutions float32 unless
--all-convs). Then it prints how many rendered lines the int8 file reads as float32 does.
Use the file with ``skiff.ocr(..., rec_model=DST)`` or ``--rec-model DST``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from importlib.resources import files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dst", nargs="?", help="where to write the int8 recognizer (.onnx)")
    ap.add_argument("--cache", action="store_true",
                    help="write it where precision='hybrid' looks for it (skiff's cache)")
    ap.add_argument("--src", help="the float32 recognizer (default: the default set's)")
    ap.add_argument("--all-convs", action="store_true",
                    help="quantize every convolution (faster, reads less like float32)")
    ap.add_argument("--pages", type=int, default=6, help="pages per category rendered")
    args = ap.parse_args(argv)
    from skiff.kernels.ocr import quantize_rec as qr

    src = args.src or str(files("rapidocr") / "models" / "PP-OCRv6_rec_small.onnx")
    if args.cache:
        args.dst = str(qr.int8_rec_path(src))
        qr.int8_rec_path(src).parent.mkdir(parents=True, exist_ok=True)
    elif not args.dst:
        ap.error("give DST or --cache")
    logging.disable(logging.WARNING)  # the quantizer's per-tensor notes
    t = time.perf_counter()
    batches = qr.pipeline_batches(qr.calibration_pages(args.pages), rec=args.src)
    print(f"{len(batches)} recognizer batches recorded ({time.perf_counter() - t:.0f} s)")
    qr.build_int8_recognizer(src, args.dst, batches, keep=[] if args.all_convs else None)
    check = qr.calibration_lines(60, seed=7)
    share = qr.reading_agreement(src, args.dst, check)
    print(f"wrote {args.dst} ({time.perf_counter() - t:.0f} s); rendered lines read as "
          f"float32 does: {share:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
