"""Int8 detection: the DB detector quantized once per machine, calibrated on rendered pages.

The detector is most of OCR's CPU time on a page after recognition, and nearly all of it is
convolution. onnxruntime runs a statically quantized graph (``QLinearConv`` with int8
weights per output channel, uint8 activations) on the CPU's integer dot-product
instructions; on the PP-OCRv6 detector that measured 4x less CPU time than float32 over the
same inputs, with the same texts read (``benchmarks/results/ocr.md``, ``docs/ocr.md``). On
x86 the weights keep to 7 bits (:func:`reduced_range`): without VNNI products are added in
int16, which saturates, and the time saved is smaller (about 1.3x on one thread, none on
two, measured on an AMD EPYC); with VNNI the 7-bit twin reads as float32 where a full-range
one did not. The
probability map the boxes come from is thresholded, so the small error int8 adds does not
move a box's edge by a pixel in the sets measured. Recognition stays float32: quantized the
same way it changed one line in five (spaces, similar characters).

Nothing is downloaded and no file ships: :func:`int8_detector` builds the int8 twin of a
detector from the float32 file the first time it is asked for (in a child process, ~10 s,
~700 MiB held there and given back) and keeps it in skiff's cache folder, named by the
source file's digest, so a changed model is quantized again. The activation ranges come from
running the float32 detector over pages this module renders (clean, small, rotated, noisy and
the hard tiers, fixed seed), through the pipeline's own detection passes, so the inputs
calibrated on are the ones it will see.

    python -m skiff.kernels.ocr.calibrate SRC.onnx DST.onnx    # what the child runs

The calibration pages and the pass that records the detector's inputs are in
:mod:`.calibrate` (it runs a pipeline; this module is what the pipeline imports).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np

from skiff.kernels.backend.cache import cache_dir

__all__ = ["PRECISIONS", "int8_detector", "int8_path", "build_int8_detector", "REC_RECIPE",
           "int8_rec_path", "int8_recognizer",
           "QuantizeError", "reduced_range"]

PRECISIONS = ("auto", "int8", "fp32", "hybrid")
# bump when the recipe changes: cached files of an older recipe are then rebuilt
RECIPE = "det-int8-qdq-v5"
# the recognizer's int8 twin (:mod:`.quantize_rec`, ``precision="hybrid"``)
REC_RECIPE = "rec-int8-qdq-conv-head-v2"  # v2: the classifier MatMul int8 too
SEED = 20261201
_LOCK = threading.Lock()
# what the recognizer's build child runs (``python -m REC_BUILDER SRC TMP``)
REC_BUILDER = "skiff.kernels.ocr.quantize_rec"
# builds running now: (child, the file it writes), ended with this process (_end_builds)
_BUILDS: list[tuple[subprocess.Popen, Path]] = []


class QuantizeError(RuntimeError):
    """The int8 model could not be built (onnxruntime's quantization tools missing or failing,
    the cache folder not writable)."""


def reduced_range(machine: str | None = None) -> bool:
    """Whether int8 weights keep to 7 bits: on every x86 CPU. Without VNNI, onnxruntime's
    uint8 x int8 convolution adds pairs of products in int16 (AVX2's ``vpmaddubsw``), which
    saturates with full-range weights: measured on an AMD EPYC with AVX2 only (2026-12-02),
    the detector's boxes came out taller (IoU 0.75 against float32) and two noisy pages of
    eight read otherwise. With VNNI the sums are exact, but a full-range twin still read
    otherwise than float32 where the 7-bit one does not (an AMD EPYC with AVX-512 VNNI,
    2026-12-03: a small page's spaces, "Thequickbrownfox"; a picture above a caption read
    as a character; four of six displays' decimal points dropped), at the same speed and
    the same degraded tier over six seeds (0.869 full range, 0.866 7-bit). So one recipe
    for x86, and a page reads the same on either kind of CPU. ARM's int8 dot products add
    in int32: full range. ``machine`` is for tests (``platform.machine()`` otherwise)."""
    import platform

    machine = (machine or platform.machine()).lower()
    return machine in ("x86_64", "amd64", "i386", "i686", "x86")


def _cached_twin(src: Path, tag: str, *recipe: bytes) -> Path:
    """``cache/ocr/<stem>-<tag>-<digest>.onnx``: the digest of ``src``'s bytes and the
    ``recipe`` parts, so a changed model or recipe is built again."""
    digest = hashlib.sha256()
    with open(src, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    for part in recipe:
        digest.update(part)
    return cache_dir() / "ocr" / f"{src.stem}-{tag}-{digest.hexdigest()[:16]}.onnx"


def int8_path(src: str | Path) -> Path:
    """The cache file of ``src``'s int8 twin (it may not exist yet): named by the source's
    digest, the recipe and whether the weights keep to 7 bits (:func:`reduced_range`), so
    a cache folder shared by an x86 and an ARM machine keeps one build for each."""
    return _cached_twin(Path(src), "int8", RECIPE.encode(),
                        *([b"7-bit weights"] if reduced_range() else []))


def int8_detector(src: str | Path, *, log=None, timeout: float = 900,
                  retry: bool = True) -> Path:
    """The int8 twin of detector ``src``, built on first use (see the module docstring).

    One build at a time on a machine: a process that finds another building (the ranks of
    one ``%ocr --np N`` job, two notebooks) waits for its file instead of building it too
    (a lock file beside it). ``log`` (a callable taking one line) hears when a build starts.
    Raises QuantizeError when the build fails or takes longer than ``timeout`` seconds; the
    float32 file is never touched, and no partial file is left. A failure is remembered
    beside the file (``.failed``, its reason): with ``retry=False`` (what ``precision="auto"``
    asks) the next process raises that reason at once instead of spending the build's time
    and memory again; ``retry=True`` builds again, and a success clears it."""
    target = int8_path(src)
    if target.is_file():
        return target
    failed = target.with_name(f".{target.name}.failed")
    if not retry and failed.is_file():
        raise QuantizeError(_reason(failed))
    with _LOCK:  # one build per process
        if target.is_file():
            return target
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            lock = open(target.with_name(f".{target.name}.lock"), "a")  # noqa: SIM115
        except OSError as exc:
            raise QuantizeError(f"cache folder {target.parent} not writable: {exc}") from exc
        with lock:
            _hold(lock)  # until another process's build (if any) has ended
            if target.is_file():
                return target
            if not retry and failed.is_file():  # the build waited for has just failed
                raise QuantizeError(_reason(failed))
            try:
                _build(src, target, log, timeout)
            except QuantizeError as exc:
                try:
                    failed.write_text(f"{exc} (delete {failed} to try again)\n")
                except OSError:
                    pass
                raise
            failed.unlink(missing_ok=True)
    return target


def _reason(failed: Path) -> str:
    try:
        return failed.read_text().strip() or "an earlier build failed"
    except OSError:
        return "an earlier build failed"


def _hold(lock) -> None:
    try:
        import fcntl
    except ImportError:  # not POSIX: builds may overlap, each writes its own file
        return
    fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file is closed


def int8_rec_path(src: str | Path) -> Path:
    """The cache file of recognizer ``src``'s int8 twin (it may not exist yet), named by
    the source's digest and :data:`REC_RECIPE`."""
    return _cached_twin(Path(src), "int8rec", REC_RECIPE.encode())


def int8_recognizer(src: str | Path, *, log=None, timeout: float = 1800) -> Path:
    """The int8 twin of recognizer ``src`` for ``precision="hybrid"``, built on first use
    into the cache by ``python -m skiff.kernels.ocr.quantize_rec`` (a float32 pipeline
    over rendered pages records the recognizer's batches, then
    :func:`.quantize_rec.build_int8_recognizer`: about 4-6 minutes on two cores, once a
    machine; ``tools/quantize_rec_int8.py --cache`` builds it ahead). ``log`` hears when
    a build starts. Raises QuantizeError when it fails; no partial file is left."""
    target = int8_rec_path(src)
    if target.is_file():
        return target
    with _LOCK:
        if target.is_file():
            return target
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise QuantizeError(f"cache folder {target.parent} not writable: {exc}") from exc
        if log is not None:
            log(f"skiff: building the int8 recognizer once for this machine ({target.name}, "
                "a few minutes)")
        _clean_stale(target)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            _build_rec(src, tmp, timeout)
            if not tmp.is_file():
                raise QuantizeError("the int8 recognizer could not be built: no file written")
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    return target


def _build_rec(src, tmp: Path, timeout: float) -> None:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
    child = subprocess.Popen([sys.executable, "-m", REC_BUILDER, str(src), str(tmp)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
    _BUILDS.append((child, tmp))
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        child.kill()
        child.communicate()
        raise QuantizeError(f"the int8 recognizer could not be built: no result in "
                            f"{timeout:g} s") from exc
    finally:
        if child.poll() is None:  # interrupted (KeyboardInterrupt): not left building
            child.kill()
            child.wait()
        _forget(child)
    if child.returncode != 0:
        tail = (err or out).strip().splitlines()[-1:] or ["no output"]
        raise QuantizeError(f"the int8 recognizer could not be built: {tail[0]}")


def _forget(child) -> None:
    _BUILDS[:] = [(c, t) for c, t in _BUILDS if c is not child]


@atexit.register
def _end_builds() -> None:
    """A script that ends while a build runs (the build in a job's thread, not waited for):
    its child is ended and its partial file removed (round 42: the child went on for
    minutes, building a ``.tmp`` no one renamed)."""
    for child, tmp in list(_BUILDS):
        if child.poll() is None:
            child.kill()
            child.wait()
        tmp.unlink(missing_ok=True)
    _BUILDS.clear()


def _clean_stale(target: Path) -> None:
    """Partial files of ``target`` left by a process that is gone (one killed while it
    built: no exit handler ran), removed before a new build."""
    for tmp in target.parent.glob(f".{target.name}.*.tmp"):
        pid = tmp.name[len(target.name) + 2:-len(".tmp")]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            tmp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: alive
        return True
    return True


def _build(src, target: Path, log, timeout: float) -> None:
    if log is not None:
        log(f"skiff: quantizing the OCR detector {Path(src).name} to int8 once for this "
            f"machine (about 10 s), kept in {target.parent}")
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
    try:
        proc = subprocess.run([sys.executable, "-m", "skiff.kernels.ocr.calibrate", str(src),
                               str(tmp)], capture_output=True, text=True, env=env,
                              timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        tmp.unlink(missing_ok=True)
        raise QuantizeError(f"could not quantize {Path(src).name}: no result in "
                            f"{timeout:g} s") from exc
    if proc.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise QuantizeError(f"could not quantize {Path(src).name}: {tail[0]}")
    os.replace(tmp, target)  # atomic: a reader sees the whole file or none


def build_int8_detector(src: str | Path, dst: str | Path, inputs: list[np.ndarray]) -> None:
    """Write the int8 QDQ twin of ``src`` to ``dst``, activation ranges from ``inputs``."""
    quantize_qdq(src, dst, inputs, reduce_range=reduced_range())  # 7-bit weights where
    # int16 accumulation saturates


def quantize_qdq(src: str | Path, dst: str | Path, inputs: list[np.ndarray], *,
                 reduce_range: bool, op_types: list[str] | None = None, keep=None) -> None:
    """onnxruntime's static QDQ quantization of ``src`` into ``dst`` as skiff builds its int8
    twins: int8 weights per output channel, uint8 activations, each activation's range the
    mean over ``inputs`` of its extremes (not the extremes of all, which a few bright pages
    stretch: the detector map's mean error against float32 0.0038 -> 0.0023). ``op_types``:
    the node types to quantize (default all onnxruntime can); ``keep``: node names left
    float32, or a function of the pre-processed graph giving them (names as it has them)."""
    import onnx
    from onnx import version_converter
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    model = onnx.load(str(src))
    name = model.graph.input[0].name
    # per-channel scales need DequantizeLinear's axis (opset 13); the shipped graphs are 11
    if max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) < 13:
        model = version_converter.convert_version(model, 17)

    class Feed(CalibrationDataReader):
        def __init__(self):
            self.left = iter(inputs)

        def get_next(self):
            x = next(self.left, None)
            return None if x is None else {name: x}

    with tempfile.TemporaryDirectory() as tmp:
        raw, pre = os.path.join(tmp, "raw.onnx"), os.path.join(tmp, "pre.onnx")
        onnx.save(model, raw)
        del model
        quant_pre_process(raw, pre, skip_symbolic_shape=True)
        if callable(keep):
            keep = keep(onnx.load(pre))
        chosen = {} if op_types is None else {"op_types_to_quantize": list(op_types)}
        quantize_static(pre, str(dst), Feed(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        reduce_range=reduce_range, nodes_to_exclude=list(keep or []),
                        calibrate_method=CalibrationMethod.MinMax,
                        extra_options={"CalibMovingAverage": True}, **chosen)
