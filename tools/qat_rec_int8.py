"""Quantization-aware distillation of an int8 (QDQ) OCR recognizer (docs/ocr-int8-rec.md).

    python tools/qat_rec_int8.py QDQ.onnx DST.onnx --crops a.pkl [b.pkl ...] [--steps 150]

QDQ.onnx is an int8 recognizer as ``tools/quantize_rec_int8.py`` writes it. Its quantized
weights become float parameters seen through fake quantization (the int8 graph's forward,
straight-through gradients; activations keep the calibrated ranges), the float32 recognizer
(``--teacher``, default the shipped one) is the teacher: the loss is the KL divergence of
the student's per-timestep posteriors from the teacher's, on recorded recognizer batches
(pickled lists of ``(N, 3, 48, W)`` float32 arrays, e.g. ``quantize_rec.pipeline_batches``
of rendered pages, degraded ones included). Only the quantized convolutions' weights (and
their int32 biases) are trained. DST.onnx is the same QDQ graph with the trained weights
rounded back to int8 (same scales): onnxruntime runs it as QLinearConv like the input.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from importlib.resources import files

import numpy as np


def _teacher(path: str, batches: list[np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return [sess.run(None, {name: x})[0] for x in batches]


def _logits_name(module) -> str:
    for op, ins, outs, _ in module._nodes:
        if outs[0] == module.output_name and op == "Softmax":
            return ins[0]
    raise ValueError("the recognizer does not end in a Softmax: give --logits")


def load_batches(paths: list[str], max_width: int, weights: list[float]):
    """Every batch of the pickles, cut to ``max_width`` columns, and its sampling weight."""
    out, w = [], []
    for p, wt in zip(paths, weights):
        with open(p, "rb") as fh:
            got = [np.ascontiguousarray(x[:, :, :, :max_width], np.float32)
                   for x in pickle.load(fh)]
        out += got
        w += [wt / len(got)] * len(got)
    w = np.asarray(w)
    return out, w / w.sum()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("qdq", help="the int8 QDQ recognizer to fine-tune")
    ap.add_argument("dst", help="where to write the fine-tuned QDQ recognizer")
    ap.add_argument("--crops", nargs="+", required=True, help="pickled recognizer batches")
    ap.add_argument("--crop-weights", type=float, nargs="*",
                    help="sampling weight of each --crops file (default equal)")
    ap.add_argument("--teacher", default=str(files("rapidocr") / "models" /
                                             "PP-OCRv6_rec_small.onnx"))
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--max-width", type=int, default=320)
    ap.add_argument("--minutes", type=float, default=18.0, help="stop training after this")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--teacher-cache", help="a .pkl keeping the teacher's posteriors between runs")
    args = ap.parse_args(argv)

    from skiff.kernels.train.core.nn.functional import log_softmax
    from skiff.kernels.train.core.optim import AdamW, clip_grad_norm_
    from skiff.kernels.train.core.tensor import Tensor
    from skiff.kernels.train.onnx.qdq import export_qdq, load_qdq

    weights = args.crop_weights or [1.0] * len(args.crops)
    if len(weights) != len(args.crops):
        sys.exit("--crop-weights needs one weight per --crops file")
    batches, prob = load_batches(args.crops, args.max_width, weights)
    t0 = time.time()
    import os

    if args.teacher_cache and os.path.exists(args.teacher_cache):
        with open(args.teacher_cache, "rb") as fh:
            teach = pickle.load(fh)
    else:
        teach = _teacher(args.teacher, batches)
        if args.teacher_cache:
            with open(args.teacher_cache, "wb") as fh:
                pickle.dump(teach, fh)
    print(f"{len(batches)} batches, {sum(len(x) for x in batches)} lines; teacher "
          f"{time.time() - t0:.1f}s", flush=True)
    m = load_qdq(args.qdq)
    logits = _logits_name(m)
    key_of = {v: k for k, v in m.onnx_names.items()}
    params = [getattr(m, key_of[f]) for f in m.qdq_weights]
    for p in m.parameters():
        p.requires_grad = False
    for p in params:
        p.requires_grad = True
    opt = AdamW(params, lr=args.lr, weight_decay=0.0)
    rng = np.random.default_rng(args.seed)
    start, ema = time.time(), None
    for step in range(args.steps):
        if time.time() - start > 60 * args.minutes:
            print(f"time limit at step {step}", flush=True)
            break
        i = int(rng.choice(len(batches), p=prob))
        x, pt = batches[i], teach[i]
        lp = log_softmax(m(Tensor(x), outputs=(logits,))[logits], axis=-1)
        kl_const = float(np.sum(pt * np.log(pt + 1e-12)))
        loss = (-(lp * Tensor(pt)).sum() + kl_const) * (1.0 / (pt.shape[0] * pt.shape[1]))
        opt.zero_grad()
        loss.backward()
        clip_grad_norm_(params, 1.0)
        opt.step()
        v = float(loss.item())
        ema = v if ema is None else 0.9 * ema + 0.1 * v
        if step % 10 == 0 or step == args.steps - 1:
            print(f"step {step} kl {v:.4f} ema {ema:.4f} {time.time() - start:.0f}s",
                  flush=True)
    export_qdq(m, args.dst)
    print("wrote", args.dst, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
