"""Run an ONNX graph with onnxruntime on the CPU or a CUDA GPU, and say which ran it.

A GPU asked for is a GPU used: when the CUDA provider is missing or fails to load, the engine
raises instead of quietly running on the CPU (onnxruntime's own default), and
:attr:`OnnxEngine.device` always names the device that ran. On CUDA, cuDNN's convolution
search is set to ``HEURISTIC`` so a new input width does not start an exhaustive algorithm
search; callers also pad widths to a few buckets so shapes repeat.
:func:`resolve_ocr_device` turns ``auto`` into the device the engines will use; when a GPU is
there but onnxruntime's CUDA provider is not, it says so in one logged line with the fix
(:func:`cuda_provider_problem`), once per process, and runs on the CPU.

The GPU package: ``onnxruntime-gpu`` installs the same ``onnxruntime`` module as the CPU
package, which ``rapidocr_onnxruntime`` (one of the wheels the models come from) requires, so
pip keeps both and whichever was written last wins. ``pip install "skiff[ocr-gpu]"`` adds
onnxruntime-gpu; ``pip install --force-reinstall --no-deps onnxruntime-gpu`` afterwards makes
its files the ones in place (:func:`cuda_provider_problem` names that step when needed).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path

import numpy as np

from skiff.kernels.backend.devices import DEFAULT_DEVICE

__all__ = ["OnnxEngine", "EngineError", "MemoryGate", "default_threads", "resolve_ocr_device",
           "cuda_provider_problem", "tune_malloc", "give_back_memory"]

log = logging.getLogger("skiff.ocr")


class EngineError(RuntimeError):
    """The engine cannot run on the device that was asked for."""


def default_threads() -> int:
    env = os.environ.get("SKIFF_OCR_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(4, os.cpu_count() or 1))


class MemoryGate:
    """Working memory that the engines of one pipeline may use at once, in bytes.

    Each call of an engine that has a gate holds its estimated working memory (input
    elements times the engine's ``bytes_per_element``) while it runs; a call that does not
    fit waits until calls in other threads are done (one call alone always runs). The
    detection thread and the recognition stage then overlap only while their buffers fit
    the bound together. :attr:`peak` is the most held, :attr:`waits` how often one waited.
    """

    def __init__(self, max_bytes: float):
        if not max_bytes > 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes!r}")
        self.max_bytes = int(max_bytes)
        self.held = 0
        self.peak = 0
        self.waits = 0
        self._cond = threading.Condition()

    def acquire(self, nbytes: int) -> None:
        with self._cond:
            if self.held and self.held + nbytes > self.max_bytes:
                self.waits += 1
                self._cond.wait_for(lambda: not self.held or self.held + nbytes <= self.max_bytes)
            self.held += nbytes
            self.peak = max(self.peak, self.held)

    def release(self, nbytes: int) -> None:
        with self._cond:
            self.held = max(0, self.held - nbytes)
            self._cond.notify_all()


class OnnxEngine:
    """One onnxruntime session on one device.

    Parameters
    ----------
    path : str or Path
        The ``.onnx`` file.
    device : str
        ``cpu`` or ``cuda:N``.
    threads : int, optional
        Intra-op threads on the CPU (default: ``SKIFF_OCR_THREADS`` or up to 4).
    gate : MemoryGate, optional
        Shared with the pipeline's other engines: a call holds ``bytes_per_element`` times
        its input's size of it while it runs (CPU only).
    arena : bool
        On the CPU, onnxruntime's memory arena for the blocks of one call, given back when
        the call ends (the recognizer's setting); without it every block is malloc'd.
    graph_cache : bool
        On the CPU, keep the graph onnxruntime optimizes in skiff's cache and load it
        optimized in later processes (:func:`optimized_graph_path`; the pipeline's
        engines; ``SKIFF_OCR_GRAPH_CACHE=0`` turns it off).
    """

    def __init__(self, path: str | Path, device: str = "cpu", *, threads: int | None = None,
                 gate: MemoryGate | None = None, bytes_per_element: float = 0.0,
                 arena: bool = False, graph_cache: bool = False):
        import onnxruntime as ort  # lazy: skiff imports fast without it

        self.path = Path(path)
        self.device = device
        self.threads = threads or default_threads()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        # no busy-waiting between ops: a notebook shares its cores with the kernel, widgets
        # and other jobs, and spinning threads then cost more than they save
        opts.add_session_config_entry("session.intra_op.allow_spinning",
                                      os.environ.get("SKIFF_OCR_SPIN", "0"))
        # input sizes change from image to image: a memory arena and per-shape memory
        # patterns keep the largest blocks ever seen (RapidOCR turns the arena off). With
        # ``arena`` a session keeps one for the blocks of a call and gives it back at the
        # call's end (shrinkage): the recognizer's many small activations, malloc'd one by
        # one otherwise, cost it 1.3-1.9x per column in batches side by side on two cores,
        # with the same RSS over a run (docs/ocr.md, "Memory over a run")
        arena = arena and device == "cpu"
        opts.enable_cpu_mem_arena = arena
        opts.enable_mem_pattern = False
        if device == "cpu":
            tune_malloc()
        if device == "cpu":
            providers = [("CPUExecutionProvider", {})]
        elif device.startswith("cuda"):
            index = int(device.partition(":")[2] or 0)
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                raise EngineError(f"device {device!r} asked for, but {cuda_provider_problem()}"
                                  " (or use --device cpu)")
            if hasattr(ort, "preload_dlls"):  # CUDA and cuDNN from the nvidia-* wheels
                try:
                    ort.preload_dlls()
                except Exception:  # libraries found by the system's paths instead
                    pass
            providers = [("CUDAExecutionProvider", {
                "device_id": index,
                "cudnn_conv_algo_search": os.environ.get("SKIFF_OCR_CONV_SEARCH", "HEURISTIC"),
                "arena_extend_strategy": "kSameAsRequested",
                "do_copy_in_default_stream": True,
            }), ("CPUExecutionProvider", {})]
        else:
            raise EngineError(f"unknown OCR device {device!r}: use cpu or cuda:N")
        source, keep = str(self.path), None
        if device == "cpu" and graph_cache:
            source, keep = _optimized_graph(ort, self.path, opts)
        self.session = ort.InferenceSession(source, sess_options=opts,
                                            providers=[p for p, _ in providers],
                                            provider_options=[o for _, o in providers])
        if keep is not None:  # written by this session: kept for the next process
            _keep_optimized(opts.optimized_model_filepath, keep)
        used = self.session.get_providers()
        if device.startswith("cuda") and used[0] != "CUDAExecutionProvider":
            raise EngineError(f"onnxruntime could not start CUDA for {self.path.name} on "
                              f"{device!r} (it offered {used}); not falling back to the CPU")
        self.provider = used[0]
        self.device_index = int(device.partition(":")[2] or 0) if device != "cpu" else -1
        self.input_name = self.session.get_inputs()[0].name
        self.output_name = self.session.get_outputs()[0].name
        self._lock = threading.Lock()
        self.run_options = None
        if arena:
            self.run_options = ort.RunOptions()
            self.run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self.gate = gate if device == "cpu" and bytes_per_element > 0 else None
        self.bytes_per_element = float(bytes_per_element)

    def __call__(self, batch) -> np.ndarray:
        """Run the graph on a ``(N, C, H, W)`` float32 batch (numpy or cupy); numpy out.

        A cupy batch on a CUDA engine is bound in place (no trip through host memory)."""
        if not isinstance(batch, np.ndarray):
            if self.provider == "CUDAExecutionProvider":
                return self._run_bound(batch)
            batch = batch.get()
        batch = np.ascontiguousarray(batch, dtype=np.float32)
        # onnxruntime runs one session from several threads at once on the CPU (recognition
        # batches side by side); the GPU path keeps one call at a time
        lock = self._lock if self.provider != "CPUExecutionProvider" else contextlib.nullcontext()
        if self.gate is None:
            with lock:
                return self.session.run([self.output_name], {self.input_name: batch},
                                        self.run_options)[0]
        need = int(batch.size * self.bytes_per_element)
        self.gate.acquire(need)
        try:
            with lock:
                return self.session.run([self.output_name], {self.input_name: batch},
                                        self.run_options)[0]
        finally:
            self.gate.release(need)

    def _run_bound(self, batch) -> np.ndarray:
        from skiff.kernels.backend import cupy

        cp = cupy()
        cp.cuda.get_current_stream().synchronize()  # the input is written before it is read
        with cp.cuda.Device(self.device_index):  # ORT reads the pointer on its own GPU
            if batch.device.id != self.device_index:
                batch = cp.array(batch, dtype=cp.float32)  # a copy onto the engine's GPU
            batch = cp.ascontiguousarray(batch, dtype=cp.float32)
            cp.cuda.get_current_stream().synchronize()  # the input is written before ORT reads it
        with self._lock:
            io = self.session.io_binding()
            io.bind_input(self.input_name, "cuda", self.device_index, np.float32,
                          tuple(batch.shape), batch.data.ptr)
            io.bind_output(self.output_name, "cuda", self.device_index)
            self.session.run_with_iobinding(io)
            return io.copy_outputs_to_cpu()[0]

    def __repr__(self) -> str:
        return f"OnnxEngine({self.path.name}, device={self.device}, provider={self.provider})"


def _cpu_flags() -> str:
    """The CPU's model and feature flags (``/proc/cpuinfo``; the platform's name elsewhere):
    onnxruntime's optimized CPU graph holds kernels chosen for them."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        import platform

        return platform.processor() or platform.machine()
    keep = [line for line in text.splitlines()
            if line.split(":")[0].strip() in ("model name", "flags", "Features", "CPU part")]
    return "\n".join(dict.fromkeys(keep))


def optimized_graph_path(path: str | Path, version: str) -> Path | None:
    """Where the CPU graph of ``path`` optimized by onnxruntime ``version`` on this CPU is
    cached (``cache/ocr/<stem>-ortopt-<digest>.onnx``), keyed by the source's path, size and
    modification time, the onnxruntime version and the CPU's model and flags; None when the
    source cannot be read."""
    import hashlib

    from skiff.kernels.backend.cache import cache_dir

    try:
        st = Path(path).stat()
    except OSError:
        return None
    key = "\0".join([str(Path(path).resolve()), str(st.st_size), str(st.st_mtime_ns), version,
                     _cpu_flags()])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / "ocr" / f"{Path(path).stem}-ortopt-{digest}.onnx"


def _optimized_graph(ort, path: Path, opts) -> tuple[str, Path | None]:
    """``(file, keep)``: the file a CPU session should load, the cached optimized graph when
    there is one (``opts`` then skip the optimizations: they were applied), else ``path``,
    with ``opts`` set to write the graph they optimize to a temporary file beside the cache
    entry ``keep`` (moved there by :func:`_keep_optimized` once the session is made).

    onnxruntime optimizes a graph (constant folding, fusions, the int8 detector's QDQ pairs
    into QLinearConv, the NCHWc layout) every time a session is made: 0.22 CPU s of a
    process's start for the three OCR models (det int8 0.139 -> 0.033 s, rec 0.131 -> 0.051,
    cls 0.067 -> 0.037; round 33), the same outputs. The NCHWc graph is for this CPU, hence
    the key. ``SKIFF_OCR_GRAPH_CACHE=0`` turns the cache off."""
    if os.environ.get("SKIFF_OCR_GRAPH_CACHE", "1") == "0":
        return str(path), None
    target = optimized_graph_path(path, ort.__version__)
    if target is None:
        return str(path), None
    if target.exists():
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        return str(target), None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # the cache folder not writable: optimize in memory, as before
        return str(path), None
    if not os.access(target.parent, os.W_OK):
        return str(path), None
    opts.optimized_model_filepath = str(
        target.with_name(f"{target.stem}.{os.getpid()}.{threading.get_ident()}.tmp"))
    return str(path), target


def _keep_optimized(tmp: str, target: Path) -> None:
    """Move a session's freshly written optimized graph ``tmp`` to ``target`` (atomic:
    processes racing write their own temporary files; the last rename wins, the files
    alike)."""
    src = Path(tmp)
    try:
        if src.stat().st_size > 0:
            os.replace(src, target)
            # an older entry of the same file (another onnxruntime, an earlier copy of a
            # re-exported model) is not read again: one entry a model name
            stem = target.stem.rpartition("-ortopt-")[0]
            for old in target.parent.glob(f"{stem}-ortopt-*.onnx"):
                if old != target and old.stem.rpartition("-ortopt-")[0] == stem:
                    with contextlib.suppress(OSError):
                        old.unlink()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            src.unlink()


_LIBC = None


def _libc():
    """glibc, once its malloc is tuned for OCR (see :func:`tune_malloc`); None elsewhere."""
    global _LIBC
    if _LIBC is None:
        _LIBC = False
        if os.environ.get("SKIFF_OCR_MALLOC", "1") != "0":
            try:
                import ctypes

                libc = ctypes.CDLL("libc.so.6")
                libc.malloc_trim.argtypes = [ctypes.c_size_t]
                _LIBC = libc
            except (OSError, AttributeError):  # not glibc (macOS, Windows, musl)
                pass
    return _LIBC or None


def tune_malloc() -> None:
    """One malloc arena instead of one per thread (``SKIFF_OCR_ARENAS``; the loader,
    detection and recognition threads then share freed blocks: two arenas peaked ~25 MiB
    higher on 32 pages). Large blocks follow glibc's own rule (mapped from 128 KiB at first,
    the threshold rising to 32 MiB as blocks are freed, those then kept in the heap and
    reused; the heap is trimmed after each batch, :func:`give_back_memory`).
    ``SKIFF_OCR_MMAP_MIB=16`` maps blocks of 16 MiB and more and hands them back as soon as
    they are freed, the default until 2026-12-02: the detector's activations were then
    mapped and faulted in afresh at every call, 1.3 million page faults on eight 12-MP
    photos (16.6 s against 13.2 s, peak RSS 645 against 632 MiB; dense pages 12.4 s
    against 11.4 s, 432 against 445 MiB; the mixed set the same time, 308 against
    298-327 MiB). ``SKIFF_OCR_MALLOC=lean`` maps blocks from 1 MiB (+20-57% CPU: page
    faults); ``SKIFF_OCR_MALLOC=0`` leaves malloc alone. Called once per process."""
    libc = _libc()
    if libc is None or getattr(tune_malloc, "done", False):
        return
    tune_malloc.done = True
    libc.mallopt(-8, int(os.environ.get("SKIFF_OCR_ARENAS", "1")))  # M_ARENA_MAX
    mib = float(os.environ.get("SKIFF_OCR_MMAP_MIB") or 0)
    if os.environ.get("SKIFF_OCR_MALLOC") == "lean":
        mib = 1
    if mib > 0:  # M_MMAP_THRESHOLD, fixed (not raised as blocks are freed)
        libc.mallopt(-3, int(mib * 2**20))


def give_back_memory() -> None:
    """Return the heap's free pages to the system (``malloc_trim``): called after each batch,
    so memory freed by one batch's largest images does not stay in the process."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def cuda_provider_problem() -> str | None:
    """None when onnxruntime has its CUDA provider, else why not, with the fix, in one line."""
    try:
        import onnxruntime as ort
    except ImportError:
        return "onnxruntime is not installed: pip install 'skiff[ocr-gpu]'"
    if "CUDAExecutionProvider" in ort.get_available_providers():
        return None
    from importlib import metadata

    def installed(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    cpu, gpu = installed("onnxruntime"), installed("onnxruntime-gpu")
    if gpu and cpu:
        return (f"onnxruntime {cpu} (CPU) and onnxruntime-gpu {gpu} are both installed and the "
                "CPU package's files are in use: pip install --force-reinstall --no-deps "
                f"onnxruntime-gpu=={gpu}")
    if gpu:
        return (f"onnxruntime-gpu {gpu} has no CUDA provider here (CUDA 12 and cuDNN 9 "
                "libraries not found?): pip install 'onnxruntime-gpu[cuda,cudnn]'")
    return ("this onnxruntime is the CPU package (no CUDA provider): pip install "
            "'skiff[ocr-gpu]' && pip install --force-reinstall --no-deps onnxruntime-gpu")


_TOLD: set[str] = set()


def resolve_ocr_device(device: str | None) -> tuple[str, str]:
    """``(device, why)``: ``auto`` is the first GPU when onnxruntime has CUDA, else the CPU.
    An explicit choice is returned as given (the engine refuses it if it cannot run)."""
    text = (device or DEFAULT_DEVICE).strip().lower()
    if text in ("gpu", "cuda"):
        text = "cuda:0"
    if text != DEFAULT_DEVICE:
        return text, "as asked"
    from skiff.kernels.backend import gpu_available

    try:
        import onnxruntime as ort

        has_cuda = "CUDAExecutionProvider" in ort.get_available_providers()
    except ImportError:
        has_cuda = False
    if gpu_available() and has_cuda:
        return "cuda:0", "auto: a GPU and onnxruntime's CUDA provider are present"
    if not gpu_available():
        return "cpu", "auto: no GPU, running on the CPU"
    why = f"auto: a GPU is here but OCR runs on the CPU: {cuda_provider_problem()}"
    if why not in _TOLD:  # one line, once per process
        _TOLD.add(why)
        log.warning("skiff OCR: %s", why)
    return "cpu", why
