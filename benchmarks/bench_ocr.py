"""OCR benchmark: skiff against RapidOCR 3.10 and Tesseract on one rendered test set.

    .venv/bin/python benchmarks/bench_ocr.py [--per-category 12] [--threads 2] [--quick]
    .venv/bin/python benchmarks/bench_ocr.py --set documents [--pages 30]
    .venv/bin/python benchmarks/bench_ocr.py --set photos [--pages 12]
    .venv/bin/python benchmarks/bench_ocr.py --stages [--rounds 3]   # where the CPU goes

The test set (``skiff.kernels.ocr.synth``: English, Chinese, mixed, paragraphs; clean, small,
rotated, noisy) is written to a temporary folder once; each method then reads the same
files in its own process with ``OPENBLAS_NUM_THREADS=1`` and the same number of threads
(onnxruntime intra-op threads for skiff and RapidOCR, ``OMP_THREAD_LIMIT`` for Tesseract).
Throughput is images/s over the whole folder after one warm-up image (models loaded),
decoding included. Accuracy is character accuracy (1 - edit distance / length, NFKC, lines
joined by newlines, spaces between two CJK characters removed for every method since
Tesseract inserts them). Figures are printed as ratios against RapidOCR measured in the same
run and written to ``benchmarks/results/ocr.md``.

RapidOCR runs with ``Det.limit_type=max, Det.limit_side_len=960`` (the best peer setting
measured here). ``skiff-fp32`` runs the shipped float32 detector (``precision="fp32"``),
the others skiff's default, its int8 twin. Spin-waiting is set the same way for both in
each pair: ``skiff`` and
``rapidocr-nospin`` with onnxruntime's busy-waiting off (skiff's default), ``skiff-spin`` and
``rapidocr`` with it on (onnxruntime's default, as RapidOCR runs). Each worker also reports
its CPU seconds (the process's threads; less moved by a loaded machine than wall time) and
its peak RSS.

The whole-process table times what a user waits for, from the command to the last line: a
fresh process per method and round (interpreter start, imports, models loaded, every image
of the folder, no warm-up), timed by this script, with the CPU seconds and peak RSS the
kernel reports for that child (``os.wait4``). skiff runs as its users run it from a terminal,
``python -m skiff ocr FOLDER --threads T --out FILE`` (a job with its run folder); RapidOCR as
a script that builds its engine with the same settings as above and reads the folder.
``--stages`` (round 30) reads the folder with skiff and with RapidOCR (``max, 960``), each
in its own process at one intra-op thread with spin-waiting off, rounds interleaved, and
prints where the CPU goes: each model's seconds (the calling thread's CPU inside
onnxruntime, which at one thread is all of it), its calls and the input pixels it saw
(batch x height x width, padding included: a recognizer's work is its columns, these over
48), and the rest of the process (decoding, the
pre- and post-processing, the passes around the models); medians over the rounds. skiff's
second readings (round 34: turned readings, trims of unsure lines, denoised copies, ...)
have rows of their own, ``rec (read_both_ways)``, with the lines each changed; the
small-print recognizer (round 38's second opinion) is ``rec-small``, and a session made
after the warm-up (a model loaded on first need) ``session (rec-small)`` (round 39). It
writes no results page.
Tesseract needs Debian's ``tesseract-ocr`` and ``tesseract-ocr-chi-sim``
(``tools/bench-deps.sh``); it is skipped with a note when missing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METHODS = ("skiff", "rapidocr-nospin", "skiff-spin", "rapidocr", "skiff-fp32", "skiff-tiny",
           "rapidocr-tiny", "tesseract", "skiff-hybrid")
# run unless --methods says otherwise (skiff-hybrid builds its int8 recognizer on first use)
DEFAULT_METHODS = METHODS[:-1]
CJK = r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]"


def _squeeze_cjk(text: str) -> str:
    return re.sub(rf"(?<={CJK}) +(?={CJK})", "", text)


# workers: one process each ------------------------------------------------------------------
def worker_skiff(paths, threads, precision="auto", model="ch"):
    from skiff.kernels.ocr import OcrPipeline

    pipe = OcrPipeline(model, device="cpu", threads=threads, batch_size=8, precision=precision)
    pipe(paths[0])  # warm-up: models loaded, first shapes seen
    t0 = time.perf_counter()
    texts = [r.text for r in pipe.run(paths)]
    return texts, time.perf_counter() - t0


def worker_skiff_spin(paths, threads):
    """skiff with onnxruntime's busy-waiting threads on, as RapidOCR runs them."""
    os.environ["SKIFF_OCR_SPIN"] = "1"
    return worker_skiff(paths, threads)


def worker_skiff_fp32(paths, threads):
    """skiff with the detector in float32, as shipped (the same model files as RapidOCR's)."""
    return worker_skiff(paths, threads, precision="fp32")


def worker_skiff_hybrid(paths, threads):
    """skiff with ``--precision hybrid``: the recognizer's int8 twin on clean images."""
    return worker_skiff(paths, threads, precision="hybrid")


def worker_skiff_tiny(paths, threads):
    """skiff's fast set ``--lang ch-tiny`` (PP-OCRv6 tiny detector and recognizer)."""
    return worker_skiff(paths, threads, model="ch-tiny")


def worker_skiff_gpu(paths, threads):
    from skiff.kernels.ocr import OcrPipeline

    pipe = OcrPipeline("ch", device="cuda:0", threads=threads, batch_size=16)
    pipe(paths[0])
    t0 = time.perf_counter()
    texts = [r.text for r in pipe.run(paths)]
    return texts, time.perf_counter() - t0


def worker_naive_gpu(paths, threads):
    """onnxruntime-gpu used naively: one image and one crop at a time, cuDNN's exhaustive
    convolution search (onnxruntime's default), so every new width is searched anew."""
    os.environ["SKIFF_OCR_CONV_SEARCH"] = "EXHAUSTIVE"
    from skiff.kernels.ocr import OcrPipeline

    pipe = OcrPipeline("ch", device="cuda:0", threads=threads, batch_size=1, rec_batch=1,
                       det_batch=1)
    pipe(paths[0])
    t0 = time.perf_counter()
    texts = [r.text for r in pipe.run(paths)]
    return texts, time.perf_counter() - t0


def _no_spin() -> None:
    """onnxruntime's busy-waiting off for every session made from now on (RapidOCR has no
    setting for it: its sessions get options with the entry already set)."""
    import onnxruntime as ort

    make = ort.SessionOptions

    def options():
        opts = make()
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return opts

    ort.SessionOptions = options  # before rapidocr imports the name


def _rapid_engine(threads, tiny=False):
    from rapidocr import RapidOCR

    params = {"Det.limit_type": "max", "Det.limit_side_len": 960,
              "EngineConfig.onnxruntime.intra_op_num_threads": threads,
              "EngineConfig.onnxruntime.inter_op_num_threads": 1,
              "Global.log_level": "error"}
    if tiny:  # RapidOCR's own tiny setting, given the same files as skiff's ch-tiny
        from rapidocr.utils.typings import ModelType

        from skiff.kernels.ocr.models import get_model_set

        ms = get_model_set("ch-tiny")
        params.update({"Det.model_type": ModelType.TINY, "Det.model_path": str(ms.path("det")),
                       "Rec.model_type": ModelType.TINY, "Rec.model_path": str(ms.path("rec")),
                       "Rec.rec_keys_path": str(ms.dict_path())})
    return RapidOCR(params=params)


def _rapid_read(engine, paths) -> list[str]:
    texts = []
    for p in paths:
        out = engine(p)
        texts.append("\n".join(out.txts) if out.txts else "")
    return texts


def worker_rapidocr_nospin(paths, threads):
    """RapidOCR with onnxruntime's busy-waiting off, as skiff runs by default."""
    _no_spin()
    return worker_rapidocr(paths, threads)


def worker_rapidocr_tiny(paths, threads):
    """RapidOCR with PP-OCRv6 tiny (the files of skiff's ch-tiny), busy-waiting off."""
    _no_spin()
    return worker_rapidocr(paths, threads, tiny=True)


def worker_rapidocr(paths, threads, tiny=False):
    engine = _rapid_engine(threads, tiny)
    engine(paths[0])
    t0 = time.perf_counter()
    texts = _rapid_read(engine, paths)
    return texts, time.perf_counter() - t0


def worker_tesseract(paths, threads):
    env = {**os.environ, "OMP_THREAD_LIMIT": str(threads)}
    cmd = ["tesseract", "-", "stdout", "-l", "eng+chi_sim", "--psm", "3"]

    def one(p):
        with open(p, "rb") as fh:
            out = subprocess.run(cmd, stdin=fh, capture_output=True, env=env, check=False)
        return out.stdout.decode("utf-8", "replace")

    one(paths[0])
    t0 = time.perf_counter()
    texts = [one(p) for p in paths]
    return texts, time.perf_counter() - t0


_STAGES: dict = {}  # a stage worker's figures, written with its texts
_TIMING = [False]  # within the timed read (after the warm-up)


def _count_stage(key: str, batch, seconds: float) -> None:
    if _WITHIN[0] and key in ("rec", "cls", "rec-small"):  # inside a second reading of skiff's
        key = f"{key} ({_WITHIN[0]})"
    row = _STAGES.setdefault(key, {"cpu_s": 0.0, "calls": 0, "pixels": 0})
    row["cpu_s"] += seconds
    row["calls"] += 1
    row["pixels"] += int(batch.size // max(1, batch.shape[1]))  # N x H x W


# skiff's second readings (the pipeline's LineReading methods): the recognizer's and the
# direction model's CPU inside each is counted apart, as "rec (read_both_ways)", with the
# lines whose text it changed; "trims" are recognize's rereads of unsure lines from their
# middle rows (within a second reading: "rec (read_both_ways, trims)")
SECOND_READINGS = ("read_both_ways", "read_tall_as_they_are", "read_bars_upright",
                   "read_sideways_upright", "read_colour_axis", "read_points", "_read_denoised")
_WITHIN = [""]  # the second reading running now; "" for the first reading


def _changed(stage: str, lines: int) -> None:
    row = _STAGES.setdefault(f"rec ({stage})" if stage else "rec",
                             {"cpu_s": 0.0, "calls": 0, "pixels": 0})
    row["changed"] = row.get("changed", 0) + lines


def _count_second_readings(cls) -> None:
    """Wrap ``cls``'s second readings and ``recognize`` so :func:`_count_stage` knows which
    one a model call is made for, and count the lines each changes."""
    def texts_of(out):
        return [t for t, _ in out]

    def wrap(name):
        method = getattr(cls, name)

        def counted(self, *args):
            outer = _WITHIN[0]
            # _read_denoised(good, crops, owners, texts, flipped) returns new lists; the
            # others change texts (their last argument) in place
            texts = args[3] if name == "_read_denoised" else args[-1]
            before = texts_of(texts)
            _WITHIN[0] = name
            try:
                out = method(self, *args)
            finally:
                _WITHIN[0] = outer
            after = texts_of(out[2] if name == "_read_denoised" else texts)
            _changed(name, sum(a != b for a, b in zip(before, after)) + abs(len(after) -
                                                                             len(before)))
            return out
        setattr(cls, name, counted)

    for name in SECOND_READINGS:
        if hasattr(cls, name):  # a reading renamed or gone is not counted, not an error
            wrap(name)
    recognize, once = cls.recognize, cls._recognize_once
    depth = [0]

    def counted_once(self, crops, fallback):
        depth[0] += 1
        if depth[0] == 1:
            return once(self, crops, fallback)
        outer = _WITHIN[0]
        _WITHIN[0] = f"{outer}, trims" if outer else "trims"
        try:
            return once(self, crops, fallback)
        finally:
            _WITHIN[0] = outer

    def counted_recognize(self, crops, owners, items, fallback=True):
        first: list = []
        depth[0] = 0

        def keep_first(self_, crops_, fallback_):
            out = counted_once(self_, crops_, fallback_)
            if depth[0] == 1:
                first.extend(texts_of(out))
            return out
        cls._recognize_once = keep_first
        try:
            out = recognize(self, crops, owners, items, fallback)
        finally:
            cls._recognize_once = once
        if first:
            _changed(f"{_WITHIN[0]}, trims" if _WITHIN[0] else "trims",
                     sum(a != b for a, b in zip(first, texts_of(out))))
        return out
    cls.recognize = counted_recognize


def _stage_key(path) -> str:
    """The model a file is: ``det``, ``cls``, ``rec``, or ``rec-small`` for the small-print
    recognizer (:mod:`skiff.kernels.ocr.small_print`'s cache file; round 39: it was counted
    as ``rec``, its cost hidden among the second readings')."""
    name = Path(str(path)).name.lower()
    if "small-print" in name:
        return "rec-small"
    return "rec" if "rec" in name else "det" if "det" in name else "cls" if "cls" in name \
        else name


def worker_stages_skiff(paths, threads):
    """skiff's default pipeline with each engine call's CPU counted by model."""
    from skiff.kernels.ocr import engine

    call = engine.OnnxEngine.__call__

    def counted(self, batch):
        t0 = time.thread_time()
        out = call(self, batch)
        _count_stage(_stage_key(self.path), batch, time.thread_time() - t0)
        return out

    engine.OnnxEngine.__call__ = counted
    made = engine.OnnxEngine.__init__

    def made_counted(self, path, *args, **kwargs):
        # a session made after the warm-up (a model loaded on first need, as the small-print
        # recognizer is) has a row of its own, "session (rec-small)"
        t0 = time.thread_time()
        made(self, path, *args, **kwargs)
        if _TIMING[0]:
            row = _STAGES.setdefault(f"session ({_stage_key(path)})",
                                     {"cpu_s": 0.0, "calls": 0, "pixels": 0})
            row["cpu_s"] += time.thread_time() - t0
            row["calls"] += 1

    engine.OnnxEngine.__init__ = made_counted
    from skiff.kernels.ocr import OcrPipeline

    _count_second_readings(OcrPipeline)
    pipe = OcrPipeline("ch", device="cpu", threads=threads, batch_size=8)
    pipe(paths[0])  # warm-up: models loaded, first shapes seen; not counted
    return _timed_stages(lambda: [r.text for r in pipe.run(paths)])


def _timed_stages(read):
    """``read()``'s texts and seconds, with the process's CPU over it kept in ``_STAGES``
    (the models' counts start here too: the warm-up is left out)."""
    _STAGES.clear()
    _TIMING[0] = True
    c0, t0 = time.process_time(), time.perf_counter()
    texts = read()
    seconds = time.perf_counter() - t0
    _TIMING[0] = False
    _STAGES["process"] = {"cpu_s": time.process_time() - c0}
    return texts, seconds


def worker_stages_rapidocr(paths, threads):
    """RapidOCR (``max, 960``, spin-waiting off) with each session call's CPU counted."""
    _no_spin()
    from rapidocr.inference_engine.onnxruntime import main as ort_main

    call = ort_main.OrtInferSession.__call__

    def counted(self, batch):
        t0 = time.thread_time()
        out = call(self, batch)
        _count_stage(_stage_key(getattr(self.session, "_model_path", "")), batch,
                     time.thread_time() - t0)
        return out

    ort_main.OrtInferSession.__call__ = counted
    engine = _rapid_engine(threads)
    engine(paths[0])
    return _timed_stages(lambda: _rapid_read(engine, paths))


STAGE_METHODS = ("stages-skiff", "stages-rapidocr")


def _stage_table(runs: dict) -> str:
    """Markdown: per model and the rest, each tool's median CPU seconds (and the first
    round's calls and input pixels) over its rounds."""
    import statistics

    def med(values):
        return statistics.median(values) if values else float("nan")

    lines = ["| stage | skiff CPU s | skiff calls / input pixels | RapidOCR CPU s | "
             "RapidOCR calls / input pixels |", "|---|---|---|---|---|"]
    rows = {}
    for method, outs in runs.items():
        for out in outs:
            models = dict(out.get("stages", {}))
            total = models.pop("process", {"cpu_s": float("nan")})["cpu_s"]
            for key, row in models.items():
                rows.setdefault(key, {}).setdefault(method, []).append(row)
            rest = total - sum(r["cpu_s"] for r in models.values())
            rows.setdefault("rest of the process", {}).setdefault(method, []).append(
                {"cpu_s": rest})
            rows.setdefault("all (process CPU)", {}).setdefault(method, []).append(
                {"cpu_s": total})
            rows.setdefault("wall s (after warm-up)", {}).setdefault(method, []).append(
                {"cpu_s": out["seconds"]})
    for key in sorted(rows, key=lambda k: (k.split(" (")[0] not in ("det", "cls", "rec"), k)):
        cells = []
        for method in STAGE_METHODS:
            got = rows[key].get(method, [])
            cells.append(f"{med([r['cpu_s'] for r in got]):.2f}" if got else "")
            cell = f"{got[0]['calls']} / {got[0]['pixels']}" if got and "calls" in got[0] \
                else ""
            if got and "changed" in got[0]:
                cell += f"; {got[0]['changed']} lines changed"
            cells.append(cell)
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def whole_rapidocr(paths, threads, spin=True, tiny=False):
    """A fresh RapidOCR process's whole work: engine built, every image read."""
    if not spin:
        _no_spin()
    return _rapid_read(_rapid_engine(threads, tiny), paths)


WHOLE = ("skiff", "rapidocr-nospin", "skiff-spin", "rapidocr", "skiff-tiny", "rapidocr-tiny",
         "skiff-hybrid")


def whole_env(method, threads, bytecode=None) -> dict:
    """The environment of a whole-process run. ``bytecode``: a folder where each process
    keeps and finds its modules' compiled byte code (``PYTHONPYCACHEPREFIX``), written even
    where ``PYTHONDONTWRITEBYTECODE`` is set: a user's installed package has its ``.pyc``
    files (pip writes them), and a checkout writes them on its first run; without them each
    skiff process compiled its ~70 modules from source again (round 41, h2: a one-image run
    0.99-1.05 CPU s against 0.78-0.81 with them), which RapidOCR's installed package never
    did. :func:`warm_bytecode` fills it before the timed rounds."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": str(threads),
           "SKIFF_OCR_THREADS": str(threads), "SKIFF_OCR_SPIN": "1" if method == "skiff-spin"
           else "0"}
    if bytecode is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    return env


def warm_bytecode(methods, folder, threads, bytecode) -> None:
    """One untimed run of each method on the folder's first image, compiling into
    ``bytecode`` (:func:`whole_env`) every module that method's process imports."""
    first = sorted(p for p in Path(folder).iterdir() if p.suffix in (".png", ".jpg"))[:1]
    one = Path(tempfile.mkdtemp(prefix="skiff-bench-warm-"))
    try:
        for p in first:
            shutil.copy(p, one / p.name)
        for method in methods:
            _run_whole(method, one, threads, [p.name for p in first], bytecode=bytecode)
    finally:
        shutil.rmtree(one, ignore_errors=True)


def _run_whole(method, folder, threads, names, bytecode=None):
    """One fresh process doing ``method``'s whole work on ``folder``: ``({texts, wall_s,
    cpu_s, peak_mib}, None)``, or None and why. The texts follow ``names``; ``bytecode``:
    :func:`whole_env`."""
    env = whole_env(method, threads, bytecode)
    work = Path(tempfile.mkdtemp(prefix="skiff-bench-whole-"))
    out = work / "out.jsonl"
    if method.startswith("skiff"):
        cmd = [sys.executable, "-m", "skiff", "ocr", str(folder), "--threads", str(threads),
               "--out", str(out), *(["--lang", "ch-tiny"] if method == "skiff-tiny" else []),
               *(["--precision", "hybrid"] if method == "skiff-hybrid" else [])]
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    else:
        cmd = [sys.executable, __file__, "--whole-worker", method, "--folder", str(folder),
               "--threads", str(threads), "--whole-out", str(out)]
    with open(work / "stderr.txt", "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    try:
        if proc.returncode != 0 or not out.exists():
            tail = (work / "stderr.txt").read_text(errors="replace").strip().splitlines()
            return None, (tail or ["failed"])[-1]
        by_name = {}
        for line in out.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            by_name[Path(rec["image"]).name] = rec.get("text") or ""
        return {"texts": [by_name.get(n, "") for n in names], "wall_s": wall,
                "cpu_s": usage.ru_utime + usage.ru_stime,
                "peak_mib": usage.ru_maxrss / 1024}, None
    finally:
        shutil.rmtree(work, ignore_errors=True)


# driver --------------------------------------------------------------------------------------
def _run_worker(method, folder, threads, script=__file__):
    """``script --worker METHOD`` in its own process with the same threads for every method;
    its JSON answer (``FOLDER/out-METHOD.json``), or None and why."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": str(threads),
           "SKIFF_OCR_THREADS": str(threads)}
    out = Path(folder) / f"out-{method}.json"
    cmd = [sys.executable, str(script), "--worker", method, "--folder", str(folder),
           "--threads", str(threads)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not out.exists():
        return None, (proc.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(out.read_text()), None


def machine_line(cpuinfo: str | None = None) -> str:
    """The CPU's model and vector instructions and the onnxruntime version, for a results
    header: the OCR ratios against RapidOCR move with both (round 33: the 1.99x of
    2026-12-02 came from an older onnxruntime, under which RapidOCR's float32 models cost
    ~15% more CPU; the same skiff code is not slower here). ``cpuinfo``: the text of
    ``/proc/cpuinfo`` (read when None; absent off Linux)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    model, flags = "", set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and not model:
            model = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    isa = ("AVX-512 VNNI" if "avx512_vnni" in flags else "AVX-512, no VNNI"
           if "avx512f" in flags else "AVX2 only" if "avx2" in flags else
           "no AVX2" if flags else "")
    try:
        import onnxruntime as ort

        rt = f"onnxruntime {ort.__version__}"
    except ImportError:
        rt = "no onnxruntime"
    cpu = model or platform.processor() or platform.machine()
    return ", ".join(x for x in (cpu, isa, rt) if x)


def _has_cuda() -> bool:
    try:
        import onnxruntime as ort

        from skiff.kernels.backend import gpu_available
    except ImportError:
        return False
    return gpu_available() and "CUDAExecutionProvider" in ort.get_available_providers()


def _truth(folder):
    rows = [json.loads(line) for line in open(Path(folder) / "truth.jsonl", encoding="utf-8")]
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-category", type=int, default=12)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="4 images per category, 1 round")
    ap.add_argument("--rounds", type=int, default=3,
                    help="each method reads the folder this many times, interleaved with the "
                         "others; the best round counts (the machine is shared)")
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                    help="comma-separated subset of " + ", ".join(METHODS))
    ap.add_argument("--worker", choices=METHODS + ("skiff-gpu", "naive-gpu") + STAGE_METHODS)
    ap.add_argument("--stages", action="store_true",
                    help="where the CPU goes, per model and the rest, skiff against RapidOCR "
                         "at one thread (printed; no results page)")
    ap.add_argument("--folder")
    ap.add_argument("--set", dest="which", choices=("mixed", "documents", "photos"),
                    default="mixed",
                    help="mixed: the rendered test set (1-6 lines a page, four categories); "
                         "documents: dense scanned-like pages (20-40 lines, A4 at 150 dpi)")
    ap.add_argument("--pages", type=int, default=30,
                    help="pages of the documents or photos set")
    ap.add_argument("--results", default=None,
                    help="results page (default benchmarks/results/ocr.md, "
                         "ocr-documents.md for --set documents)")
    ap.add_argument("--no-whole", action="store_true",
                    help="skip the whole-process table (fresh processes, startup included)")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="whole-process runs compile their modules afresh where "
                         "PYTHONDONTWRITEBYTECODE is set (default: a byte-code folder, "
                         "filled by one untimed run per method, as an installed package has)")
    ap.add_argument("--whole-worker", choices=("rapidocr", "rapidocr-nospin", "rapidocr-tiny"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--whole-out", help=argparse.SUPPRESS)
    ap.add_argument("--write-set", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.pages < 1 or args.per_category < 1:
        ap.error("--pages and --per-category must be at least 1")

    if args.whole_worker:
        rows = _truth(args.folder)
        paths = [str(Path(args.folder) / r["image"]) for r in rows]
        texts = whole_rapidocr(paths, args.threads, spin=args.whole_worker == "rapidocr",
                               tiny=args.whole_worker == "rapidocr-tiny")
        with open(args.whole_out, "w", encoding="utf-8") as fh:
            for path, text in zip(paths, texts, strict=True):
                fh.write(json.dumps({"image": path, "text": text}, ensure_ascii=False) + "\n")
        return 0

    if args.worker:
        rows = _truth(args.folder)
        paths = [str(Path(args.folder) / r["image"]) for r in rows]
        import resource

        c0 = time.process_time()
        texts, seconds = globals()[f"worker_{args.worker.replace('-', '_')}"](paths,
                                                                             args.threads)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # MiB
        (Path(args.folder) / f"out-{args.worker}.json").write_text(
            json.dumps({"texts": texts, "seconds": seconds, "peak_mib": peak,
                        "cpu_s": time.process_time() - c0, "stages": _STAGES},
                       ensure_ascii=False))
        return 0

    from skiff.kernels.ocr.synth import (
        CATEGORIES,
        char_accuracy,
        make_document_set,
        make_photo_set,
        make_test_set,
        write_test_set,
    )

    documents = args.which in ("documents", "photos")  # dense pages, scanned or photographed
    photos = args.which == "photos"
    n = 4 if args.quick else args.per_category
    if args.write_set:  # the child below: render, write, exit
        write_test_set(args.write_set, make_photo_set(args.pages, seed=1) if photos else
                       make_document_set(args.pages, seed=1) if documents
                       else make_test_set(n, seed=1))
        return 0
    folder = Path(tempfile.mkdtemp(prefix="skiff-bench-ocr-"))
    # rendered in a child: a worker's peak RSS counts its parent's at the fork (Linux keeps
    # the high-water mark across exec), and eight 12-MP photos held here read as 938 MiB for
    # every method
    subprocess.run([sys.executable, __file__, "--write-set", str(folder), "--set", args.which,
                    "--pages", str(args.pages), "--per-category", str(n)], check=True)
    rows = _truth(folder)
    if args.stages:
        runs: dict = {m: [] for m in STAGE_METHODS}
        for r in range(1 if args.quick else args.rounds):
            for method in STAGE_METHODS:  # interleaved: the machine's load moves
                print(f"stages, round {r + 1}: {method} …", file=sys.stderr, flush=True)
                out, err = _run_worker(method, folder, 1)
                if out is None:
                    print(f"note: {method} failed: {err}", file=sys.stderr)
                    continue
                runs[method].append(out)
        shutil.rmtree(folder, ignore_errors=True)
        print(f"{len(rows)} images, one intra-op thread, spin-waiting off; load average "
              f"{os.getloadavg()[0]:.1f}; {machine_line()}")
        print(_stage_table(runs))
        return 0
    # accuracy columns: the categories, or for documents the kinds of text
    groups = ("english", "chinese", "mixed", "paragraph") if documents else CATEGORIES
    group_of = "kind" if documents else "category"
    results_page = args.results or str(ROOT / "benchmarks" / "results" /
                                       ("ocr-photos.md" if photos else "ocr-documents.md"
                                        if documents else "ocr.md"))
    results, notes = {}, []
    asked = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = sorted(set(asked) - set(METHODS))
    if bad:
        ap.error(f"unknown method(s) {', '.join(bad)}: choose from {', '.join(METHODS)}")
    methods = [m for m in METHODS if m in asked and (m != "tesseract" or shutil.which("tesseract"))]
    if _has_cuda():  # on a GPU: skiff against onnxruntime-gpu used naively
        methods += ["skiff-gpu", "naive-gpu"]
    if "tesseract" in asked and "tesseract" not in methods:
        notes.append("tesseract: not installed (tools/bench-deps.sh)")
    rounds = 1 if args.quick else args.rounds
    for r in range(rounds):
        for method in methods:
            print(f"round {r + 1}/{rounds}: {method} …", file=sys.stderr, flush=True)
            out, err = _run_worker(method, folder, args.threads)
            if out is None:
                notes.append(f"{method}: failed: {err}")
                continue
            ips = len(rows) / out["seconds"]
            if method in results:  # accuracy from the first round, the best throughput
                results[method]["ips"] = max(results[method]["ips"], ips)
                results[method]["rounds"].append(round(ips, 2))
                results[method]["peak"].append(out["peak_mib"])
                results[method]["cpu"].append(out["cpu_s"])
                continue
            acc = {c: [] for c in groups}
            for row, text in zip(rows, out["texts"], strict=True):
                truth = "\n".join(row["lines"])
                acc[row[group_of]].append(char_accuracy(_squeeze_cjk(text), truth))
            results[method] = {"acc": {c: sum(v) / len(v) for c, v in acc.items() if v},
                               "ips": ips, "rounds": [round(ips, 2)],
                               "peak": [out["peak_mib"]], "cpu": [out["cpu_s"]]}
    whole = {}
    names = [r["image"] for r in rows]
    bytecode = None if args.no_whole or args.no_bytecode_cache else \
        Path(tempfile.mkdtemp(prefix="skiff-bench-pyc-"))
    if bytecode is not None:
        warm_bytecode([m for m in WHOLE if m in asked], folder, args.threads, bytecode)
    for r in range(0 if args.no_whole else rounds):
        for method in WHOLE:
            if method not in asked:
                continue
            print(f"whole process, round {r + 1}/{rounds}: {method} …", file=sys.stderr,
                  flush=True)
            out, err = _run_whole(method, folder, args.threads, names, bytecode=bytecode)
            if out is None:
                notes.append(f"{method} (whole process): failed: {err}")
                continue
            if method not in whole:
                acc = [char_accuracy(_squeeze_cjk(t), "\n".join(row["lines"]))
                       for row, t in zip(rows, out["texts"], strict=True)]
                whole[method] = {"acc": sum(acc) / len(acc), "wall": [], "cpu": [],
                                 "peak": []}
            for key, value in (("wall", out["wall_s"]), ("cpu", out["cpu_s"]),
                               ("peak", out["peak_mib"])):
                whole[method][key].append(value)
    shutil.rmtree(folder, ignore_errors=True)
    if bytecode is not None:
        shutil.rmtree(bytecode, ignore_errors=True)

    # each method against the RapidOCR run with spin-waiting set the same way
    pair = {"skiff": "rapidocr-nospin", "skiff-spin": "rapidocr", "skiff-fp32": "rapidocr-nospin",
            "skiff-hybrid": "rapidocr-nospin",
            "skiff-tiny": "rapidocr-tiny", "rapidocr-tiny": "rapidocr-nospin",
            "tesseract": "rapidocr"}
    head = ("| method | " + " | ".join(groups) + " | images/s (best) | vs RapidOCR, "
            "same spin | CPU s (best) | CPU vs RapidOCR | peak RSS MiB (max) | images/s per "
            "round |")
    lines = [head, "|" + "---|" * (len(groups) + 7)]
    for method, r in results.items():
        peer = results.get(pair.get(method, method))
        ratio = f"{r['ips'] / peer['ips']:.2f}x ({pair.get(method, method)})" if peer else "n/a"
        # tesseract runs as child processes, whose CPU time the worker does not see
        cpu = f"{min(peer['cpu']) / min(r['cpu']):.2f}x" if peer and min(r["cpu"]) > 0.5 \
            else "n/a"
        accs = " | ".join(f"{100 * r['acc'][c]:.1f}%" if c in r["acc"] else "n/a"
                          for c in groups)
        per = ", ".join(map(str, r["rounds"]))
        lines.append(f"| {method} | {accs} | {r['ips']:.2f} | {ratio} | {min(r['cpu']):.1f} | "
                     f"{cpu} | {max(r['peak']):.0f} | {per} |")
    table = "\n".join(lines)
    print(table)
    wlines = ["| method | accuracy (all images) | seconds, command to last line (best) | "
              "vs RapidOCR, same spin | CPU s (best) | CPU vs RapidOCR | peak RSS MiB (max) | "
              "seconds per round |", "|" + "---|" * 8]
    for method, r in whole.items():
        peer = whole.get(pair.get(method, method))
        ratio = f"{min(peer['wall']) / min(r['wall']):.2f}x ({pair.get(method, method)})" \
            if peer else "n/a"
        cpu = f"{min(peer['cpu']) / min(r['cpu']):.2f}x" if peer else "n/a"
        per = ", ".join(f"{w:.2f}" for w in r["wall"])
        wlines.append(f"| {method} | {100 * r['acc']:.1f}% | {min(r['wall']):.2f} | {ratio} | "
                      f"{min(r['cpu']):.1f} | {cpu} | {max(r['peak']):.0f} | {per} |")
    wtable = "\n".join(wlines) if whole else ""
    print(wtable)
    for note in notes:
        print("note:", note)
    cmd = "OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr.py" + \
        (f" --set {args.which} --pages {args.pages}" if documents else "") + \
        (" --quick" if args.quick else
         f"{'' if documents else f' --per-category {n}'} --rounds {rounds}") + \
        f" --threads {args.threads}" + \
        (f" --methods {args.methods}" if args.methods != ",".join(DEFAULT_METHODS) else "") + \
        (" --no-bytecode-cache" if args.no_bytecode_cache else "")
    what = ("3000 x 4000 phone photos (JPEG) of dense pages from three distances (the page "
            "1.0, 0.8, 0.6 of the frame in turn): perspective, uneven light, noise; accuracy "
            "per kind of text") if photos else \
        ("dense pages of 20-40 lines, A4 at 150 dpi, every third with a scanner's noise; "
         "accuracy per kind of text") if documents else f"{n} per category"
    doc = [
        "# OCR benchmark" + (": phone photos of pages" if photos else
                             ": dense document pages" if documents else ""), "",
        f"Command: `{cmd}`  ",
        f"Machine: {machine_line()}, {os.cpu_count()} CPUs, "
        f"{args.threads} threads per method; {len(rows)} rendered images "
        f"({what}); {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"load average at the end {os.getloadavg()[0]:.1f} (a shared machine: other "
        "benchmarks and tests ran meanwhile, hence the spread between rounds).", "",
        "Character accuracy (1 - edit distance / length, NFKC) per category, and images/s "
        "over the whole folder (decoding included, after one warm-up image). RapidOCR 3.10 "
        "runs with `limit_type=max, limit_side_len=960`; Tesseract 5 with `eng+chi_sim`, "
        "`--psm 3`. Spin-waiting is the same within each pair: `skiff` against "
        "`rapidocr-nospin` (onnxruntime's busy-waiting off, skiff's default: a notebook "
        "shares its cores), `skiff-spin` against `rapidocr` (on, onnxruntime's default). "
        "`skiff` and `skiff-spin` run the detector as its int8 twin (skiff's default on the "
        "CPU, `--precision auto`); `skiff-fp32` runs the shipped float32 files, the same "
        "models as RapidOCR's, with spin-waiting off; `skiff-hybrid` is `--precision "
        "hybrid` (the recognizer's int8 twin on images under `denoise.NOISY`, opt-in). "
        "`skiff-tiny` is `--lang ch-tiny` "
        "(PP-OCRv6 tiny detector and recognizer) against `rapidocr-tiny`, RapidOCR's own "
        "tiny setting given the same files, both with spin-waiting off; `rapidocr-tiny`'s "
        "ratio is against `rapidocr-nospin` (what the tiny models save a RapidOCR user). "
        "Each method reads the folder once per round, rounds interleaved; the best round's "
        "throughput and CPU seconds and the highest peak RSS are shown.",
        "", table, "",
        *(["## Whole process", "",
           f"The same {len(rows)} images as one folder, each method a fresh process per "
           "round from the command to its last line: interpreter start, imports, models "
           "loaded (skiff's int8 detector from its cache), every image, no warm-up. skiff "
           "is `python -m skiff ocr FOLDER --threads T --out FILE` (a job with its run "
           "folder, as a user runs it); RapidOCR a script building its engine as above. "
           "Best round's seconds and CPU seconds, highest peak RSS (the kernel's figures "
           "for the child). "
           + ("Each process compiled its modules afresh (`--no-bytecode-cache`)."
              if args.no_bytecode_cache else
              "Compiled byte code is kept in a folder filled by one untimed run of each "
              "method (as an installed package has its `.pyc` files)."),
           "", wtable, ""] if whole else []),
        *[f"- note: {n_}" for n_ in notes],
    ]
    from results_file import write_keeping_earlier  # benchmarks/, the script's folder

    write_keeping_earlier(results_page, "\n".join(doc))
    print(f"written {results_page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
