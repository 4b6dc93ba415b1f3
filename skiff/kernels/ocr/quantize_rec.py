"""Int8 recognition, opt-in: the recognizer's convolutions quantized, and how far it reads as
float32 does.

Recognition is about 65% of OCR's CPU time on a page. onnxruntime runs a statically
quantized graph's convolutions as ``QLinearConv`` (int8 weights per output channel, uint8
activations) on the CPU's integer dot-product instructions. On the PP-OCRv6 recognizer a
batch then costs 1.64x less CPU time (a whole run 1.45x), but the texts are not the float32
ones: 8-13% of line crops read otherwise, and the degraded tier reads 0.81-0.85 against
float32's 0.896 (``docs/ocr-int8-rec.md`` has the recipes measured and their figures). So it
is not the default: :func:`build_int8_recognizer` writes the int8 file, a user passes it as the
recognizer (``--rec-model``) and :func:`reading_agreement` says how many lines of theirs read
alike.

    python tools/quantize_rec_int8.py DST.onnx          # the shipped recognizer, calibrated

Conv nodes and the CTC head's classifier MatMul are quantized (:func:`float_matmuls`: the
attention blocks' small MatMuls stay float32, int8 there saved no time measured; the
classifier in int8 read the same texts and saves ~5% of the recognizer, round 36).
``keep_float`` names the convolutions left float32 by default, found from
the graph's shape, not by node names: the squeeze-excite convolutions (fed by a global mean,
tiny, where a uint8 input of a few values cost most), the stem (convolutions before the
first depthwise one) and the neck (after the last pooling): 8% of lines differ instead of
13%, at 1.64x instead of 1.72x.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from .quantize import REC_RECIPE, int8_rec_path, int8_recognizer  # noqa: F401 (its names)

__all__ = ["REC_RECIPE", "keep_float", "float_matmuls", "build_int8_recognizer", "int8_rec_path",
           "int8_recognizer", "calibration_lines",
           "calibration_pages", "pipeline_batches", "greedy_texts", "reading_agreement"]

_POOLS = ("ReduceMean", "GlobalAveragePool")


def keep_float(model) -> list[str]:
    """The Conv nodes of recognizer ``model`` (an ``onnx.ModelProto``) to leave float32:
    squeeze-excite pairs (a Conv fed by a global mean, and the Conv after it through one
    activation), the stem (Convs before the first grouped one) and the neck (Convs after
    the last AveragePool/MaxPool). Graph order is assumed topological (ONNX requires it)."""
    nodes = list(model.graph.node)
    prod = {o: n for n in nodes for o in n.output}
    convs = [n for n in nodes if n.op_type == "Conv"]

    def group(n):
        return next((a.i for a in n.attribute if a.name == "group"), 1)

    keep: set[str] = set()
    for n in convs:
        src = prod.get(n.input[0])
        if src is None:
            continue
        if src.op_type in _POOLS:
            keep.add(n.name)  # squeeze
        elif src.op_type in ("Relu", "HardSigmoid", "Sigmoid") and src.input:
            before = prod.get(src.input[0])
            if before is not None and before.op_type == "Conv" and before.name in keep:
                keep.add(n.name)  # excite
    for n in convs:  # stem
        if group(n) > 1:
            break
        keep.add(n.name)
    last_pool = max((i for i, n in enumerate(nodes)
                     if n.op_type in ("AveragePool", "MaxPool")), default=-1)
    keep.update(n.name for i, n in enumerate(nodes) if n.op_type == "Conv" and i > last_pool
                and last_pool >= 0)
    return [n.name for n in convs if n.name in keep]


def float_matmuls(model) -> list[str]:
    """The MatMul nodes of recognizer ``model`` to leave float32: every one but the CTC
    head's classifier, the last MatMul whose weight is a constant (on PP-OCRv6 a 120 x
    18,710 product at every timestep, ~9% of the recognizer's multiply-adds; int8 there
    read the same lines, round 36). The attention blocks' MatMuls are small and stay
    float32."""
    consts = {i.name for i in model.graph.initializer}
    matmuls = [n for n in model.graph.node if n.op_type == "MatMul"]
    head = next((n.name for n in reversed(matmuls) if n.input[1] in consts), None)
    return [n.name for n in matmuls if n.name != head]


def build_int8_recognizer(src: str | Path, dst: str | Path, inputs: list[np.ndarray], *,
                          keep: list[str] | None = None, reduce_range: bool = False) -> None:
    """Write the int8 QDQ twin of recognizer ``src`` to ``dst``: its Conv nodes but ``keep``
    (default :func:`keep_float`) and its classifier MatMul (:func:`float_matmuls`) with
    int8 weights per output channel and uint8 activations, the ranges the mean over
    ``inputs`` (``(N, 3, H, W)`` float32 batches as the pipeline feeds the recognizer) of
    each tensor's extremes."""
    from .quantize import quantize_qdq

    if not inputs:
        raise ValueError("no calibration inputs: give the recognizer batches it will see "
                         "(calibration_lines() renders some)")
    batches = [np.ascontiguousarray(x, np.float32) for x in inputs]

    def left_float(model):
        return (keep_float(model) if keep is None else list(keep)) + float_matmuls(model)

    quantize_qdq(src, dst, batches, reduce_range=reduce_range, op_types=["Conv", "MatMul"],
                 keep=left_float)


def calibration_lines(count: int = 48, *, seed: int = 20261205, height: int = 48,
                      batch: int = 6) -> list[np.ndarray]:
    """Recognizer batches of ``count`` rendered text lines (the clean set's texts, English,
    Chinese and mixed, each drawn alone at 18-34 px and cut to its ink with a margin, fixed
    seed): ``(batch, 3, height, W)`` float32 in [-1, 1], BGR, grey padding, as the pipeline
    feeds a crop.
    For tests and the tool's check; the build calibrates on the pipeline's own crops."""
    import random

    from .synth import render_page, render_sample

    rng = random.Random(seed)
    crops = []
    index = 0
    while len(crops) < count:
        for text in render_sample("clean", index, seed=seed).lines:
            page = render_page([text], size=rng.randint(18, 34), seed=seed + index)
            ink = page.min(axis=2) < 128
            rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
            if len(rows) == 0:
                continue
            pad = max(3, (rows[-1] - rows[0]) // 4)
            crops.append(page[max(0, rows[0] - pad):rows[-1] + pad + 1,
                              max(0, cols[0] - pad):cols[-1] + pad + 1])
        index += 1
    return _batches([c[..., ::-1] for c in crops[:count]], height, batch)  # BGR, as the pipeline


def calibration_pages(per_category: int = 6, *, seed: int = 20261205) -> list[np.ndarray]:
    """RGB pages whose line crops the recipe calibrates on: the clean set and documents,
    and the hard tiers where their fonts are installed (degraded crops: calibrated on clean
    crops alone, the degraded tier read 3 points worse, ``docs/ocr-int8-rec.md``). Fixed
    seed, apart from the seeds the tiers are measured on."""
    from .synth import make_document_set, make_test_set
    from .synth_hard import make_hard_set

    samples = list(make_test_set(per_category, seed=seed))
    samples += make_document_set(per_category, seed=seed)
    try:
        samples += make_hard_set(per_category, seed=seed)
    except Exception:  # the hard set's fonts missing: the clean pages alone
        pass
    return [s.image for s in samples]


def pipeline_batches(images, rec: str | Path | None = None) -> list[np.ndarray]:
    """The recognizer batches a float32 pipeline (the default set, recognizer ``rec`` if
    given) makes for ``images``: every crop and pass as the pipeline feeds them. ``images``
    may be a callable giving them, called once the recognizer has loaded (a file that is no
    model fails before any page is rendered)."""
    from .models import get_model_set
    from .pipeline import OcrPipeline

    models = get_model_set("ch")
    if rec is not None:
        models = models.custom(rec=str(rec))
    pipe = OcrPipeline(models, device="cpu", precision="fp32", threads=1)
    engine = pipe.engine("rec")
    seen: list[np.ndarray] = []
    run = engine.session.run

    def record(outputs, feeds, *args, **kwargs):
        seen.append(np.array(next(iter(feeds.values())), np.float32))
        return run(outputs, feeds, *args, **kwargs)

    engine.session.run = record
    if callable(images):
        images = images()
    for _ in pipe.run(images):  # a generator: read to its end
        pass
    return seen


def _batches(crops, height: int, batch: int) -> list[np.ndarray]:
    from PIL import Image

    out = []
    for k in range(0, len(crops), batch):
        group = crops[k:k + batch]
        widths = [max(height, round(c.shape[1] * height / c.shape[0])) for c in group]
        width = min(3200, int(np.ceil(max(widths) / 32) * 32))
        x = np.zeros((len(group), 3, height, width), np.float32)
        for i, (c, w) in enumerate(zip(group, widths)):
            w = min(w, width)
            im = np.asarray(Image.fromarray(np.ascontiguousarray(c)).resize((w, height),
                                                                            Image.BILINEAR))
            x[i, :, :, :w] = (im.astype(np.float32).transpose(2, 0, 1) / 255 - 0.5) / 0.5
        out.append(x)
    return out


def greedy_texts(probs: np.ndarray) -> list[tuple[int, ...]]:
    """CTC's greedy reading of ``(N, T, classes)`` posteriors: per line, the class ids of
    the best path with repeats merged and blanks (class 0) dropped."""
    best = probs.argmax(-1)
    out = []
    for row in best:
        keep = np.r_[True, row[1:] != row[:-1]] & (row != 0)
        out.append(tuple(int(c) for c in row[keep]))
    return out


def reading_agreement(float_path: str | Path, int8_path: str | Path,
                      batches: list[np.ndarray], *, threads: int = 1) -> float:
    """The share of lines in ``batches`` that int8 recognizer ``int8_path`` reads exactly as
    ``float_path`` does (greedy CTC readings, class ids)."""
    import onnxruntime as ort

    def session(path):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    f, q = session(float_path), session(int8_path)
    name = f.get_inputs()[0].name
    same = total = 0
    for x in batches:
        a = greedy_texts(f.run(None, {name: x})[0])
        b = greedy_texts(q.run(None, {name: x})[0])
        same += sum(u == v for u, v in zip(a, b))
        total += len(a)
    return same / max(total, 1)


def main(argv=None) -> int:
    """``python -m skiff.kernels.ocr.quantize_rec SRC DST``: the int8 twin of recognizer SRC
    (calibrated on :func:`calibration_pages`) written to DST (what
    :func:`.quantize.int8_recognizer` runs)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m skiff.kernels.ocr.quantize_rec SRC.onnx DST.onnx",
              file=sys.stderr)
        return 2
    import logging

    logging.disable(logging.WARNING)  # the quantizer's per-tensor notes
    src, dst = args
    rec = None if Path(src).name == "PP-OCRv6_rec_small.onnx" else src
    # the pages are rendered once the recognizer has loaded: a file that is no model fails
    # in a second, not after ~1.6 CPU s of rendering
    build_int8_recognizer(src, dst, pipeline_batches(lambda: calibration_pages(6), rec=rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
