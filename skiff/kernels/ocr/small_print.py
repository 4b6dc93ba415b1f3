"""A recognizer adapted to small degraded print, shipped as a delta: the trained initializers
of a fine-tune of the ``ch`` recognizer (its later layers), float16, with the SHA-256 of the
recognizer it was trained from, laid onto the installed file at load.

:func:`small_print_model` builds the adapted model from the delta the first time it is asked
for (~1 s) and keeps it in skiff's cache folder, named by the digests of both files (as
:mod:`.quantize`'s int8 twin), so nothing is downloaded and nothing trains at run time; a
recognizer whose bytes differ from the delta's base (another set, a user's ``rec_model``)
gets None. :mod:`.reading` reads a small image's unsure CJK lines with it as a second
opinion when ``reading.SMALL_PRINT`` is set and a delta is at :data:`DELTA`.

Round 35 (docs/ocr.md "Round 35, small degraded print"): a delta trained on rendered small
degraded lines in faces the unseen-font set does not use read that set 0.8671 -> 0.8692 as a
second opinion but one hard-tier image and one unseen label worse, so none ships and
``SMALL_PRINT`` is off; the scripts that render, train and measure are in
``/work/round35/h1/`` (``gen_train.py``, ``cache_train.py``, ``finalize.py``, ``reg35.py``).
Round 36: a neck-only delta trained in fourteen other CJK faces and pulled halfway back to
the base read the set's faces no worse alone, but whole labels 0.8671 -> 0.8662; none ships
(``/work/round36/h1/``: ``gen36.py``, ``wise.py``, ``eval36.py``).
Round 37: a last-stage + neck delta trained on crops the pipeline cut itself, pulled halfway
back (the weight chosen on held-out faces) read the set 0.8671 -> 0.8725 with no label worse
but one hard-tier image worse; none ships (``/work/round37/h1/``: ``pages37.py``,
``wisepick.py``, ``finalize37.py``).
Round 38: that delta ships (``small_print_r35.npz``, 2.8 MB) and ``reading.SMALL_PRINT`` is on,
its readings kept by two more rules (:data:`.reading.SMALL_PRINT_FLUENT_DROP`; a reading it
agrees with keeps its score): the set 0.8671 -> 0.8720 with no label worse and no hard-tier
image worse (docs/ocr.md "Round 38, small degraded print").
Round 42: that delta trained 60 steps more on pipeline-cut and loose crops in 24 other installed
faces (``freeze_head``), pulled halfway back: seeds 31/131's Chinese and mixed labels 0.787 ->
0.807 but five labels worse; not shipped (docs/ocr.md "Round 42 (h1)", ``/work/round42/h1w/``).
Round 43: 60 steps more on 213 new pipeline-cut crops, pulled 0.75 of the way (chosen on
held-out crops of the training faces): the set's Chinese and mixed labels 0.822 -> 0.845, but
10 labels and 6 hard-tier images worse; not shipped (docs/ocr.md "Round 43 (h1)").
Round 48: ``small_print_r48.npz`` replaces ``small_print_r35.npz`` (the same base and
tensors, float16: round 47's fine-tune on pipeline-cut crops, 300 steps more, pulled halfway
back; ``/work/round48/h1/dC_0.5.npz``), shipped with the line vote across the denoised
copies (:meth:`.reading.LineReading._vote_lines`): the set 0.8682 -> 0.8729, the hard
degraded tier 0.8986 -> 0.8992, dev 0.7459 -> 0.7549 (docs/ocr.md "Round 48 (h18)").
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

import numpy as np

from skiff.kernels.backend.cache import cache_dir

__all__ = ["DELTA", "small_print_model", "delta_info", "apply_delta"]

DELTA = Path(__file__).with_name("small_print_r48.npz")
_LOCK = threading.Lock()
_BASE_KEY = "__base_sha256__"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def delta_info(delta: str | Path | None = None) -> dict:
    """The delta's trained initializers (name -> shape), the base digest and its bytes."""
    delta = DELTA if delta is None else delta
    with np.load(delta) as z:
        base = str(z[_BASE_KEY]) if _BASE_KEY in z.files else None
        shapes = {k: z[k].shape for k in z.files if k != _BASE_KEY}
    return {"base_sha256": base, "tensors": shapes, "bytes": os.path.getsize(delta),
            "weights": int(sum(int(np.prod(s)) for s in shapes.values()))}


def apply_delta(src: str | Path, dst: str | Path, delta: str | Path | None = None) -> Path:
    """Write ``src`` with the delta's initializers put in (float32), to ``dst``. Raises
    ValueError when a delta tensor is missing from ``src`` or has another shape."""
    delta = DELTA if delta is None else delta
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(src))
    with np.load(delta) as z:
        new = {k: z[k] for k in z.files if k != _BASE_KEY}
    done = set()
    for init in model.graph.initializer:
        if init.name in new:
            old = numpy_helper.to_array(init)
            if old.shape != new[init.name].shape:
                raise ValueError(f"delta tensor {init.name!r} is {new[init.name].shape}, the "
                                 f"model's {old.shape}")
            init.CopyFrom(numpy_helper.from_array(new[init.name].astype(old.dtype), init.name))
            done.add(init.name)
    if done != set(new):
        raise ValueError(f"delta tensors not in {src}: {sorted(set(new) - done)[:3]}")
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dst.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        onnx.save(model, tmp)
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dst


def small_print_model(src: str | Path, delta: str | Path | None = None) -> Path | None:
    """The adapted recognizer for recognizer file ``src``, built into the cache on first use
    (``delta``: default :data:`DELTA`); None where there is no delta or ``src`` is not the
    recognizer it was trained from."""
    src, delta = Path(src), Path(DELTA if delta is None else delta)
    if not delta.is_file() or not src.is_file():
        return None
    with np.load(delta) as z:  # the base's digest alone (delta_info decompresses every
        want = str(z[_BASE_KEY]) if _BASE_KEY in z.files else None  # tensor: 0.025 CPU s)
    base = _sha256(src)
    if want != base:
        return None
    target = cache_dir() / "ocr" / f"{src.stem}-small-print-{base[:8]}{_sha256(delta)[:8]}.onnx"
    with _LOCK:
        if not target.is_file():
            apply_delta(src, target, delta)
    return target
