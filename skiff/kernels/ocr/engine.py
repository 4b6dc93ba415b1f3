"""Run an ONNX graph with onnxruntime on the CPU or a CUDA GPU, and say which ran it.

A GPU asked for is a GPU used: when the CUDA provider is missing or fails to load, the engine
raises instead of quietly running on the CPU (onnxruntime's own default), and
:attr:`OnnxEngine.device` always names the device that ran. On CUDA, cuDNN's convolution
search is set to ``HEURISTIC`` so a new input width does not start an exhaustive algorithm
search; callers also pad widths to a few buckets so shapes repeat.
:func:`resolve_ocr_device` turns ``auto`` into the device the engines will use.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from skiff.kernels.backend.devices import DEFAULT_DEVICE

__all__ = ["OnnxEngine", "EngineError", "default_threads", "resolve_ocr_device"]


class EngineError(RuntimeError):
    """The engine cannot run on the device that was asked for."""


def default_threads() -> int:
    env = os.environ.get("SKIFF_OCR_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(4, os.cpu_count() or 1))


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
    """

    def __init__(self, path: str | Path, device: str = "cpu", *, threads: int | None = None):
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
        if device == "cpu":
            providers = [("CPUExecutionProvider", {})]
        elif device.startswith("cuda"):
            index = int(device.partition(":")[2] or 0)
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                raise EngineError(
                    f"device {device!r} asked for, but this onnxruntime has no CUDA provider "
                    f"(providers: {', '.join(ort.get_available_providers())}); install "
                    "onnxruntime-gpu or use --device cpu")
            providers = [("CUDAExecutionProvider", {
                "device_id": index,
                "cudnn_conv_algo_search": os.environ.get("SKIFF_OCR_CONV_SEARCH", "HEURISTIC"),
                "arena_extend_strategy": "kSameAsRequested",
                "do_copy_in_default_stream": True,
            }), ("CPUExecutionProvider", {})]
        else:
            raise EngineError(f"unknown OCR device {device!r}: use cpu or cuda:N")
        self.session = ort.InferenceSession(str(self.path), sess_options=opts,
                                            providers=[p for p, _ in providers],
                                            provider_options=[o for _, o in providers])
        used = self.session.get_providers()
        if device.startswith("cuda") and used[0] != "CUDAExecutionProvider":
            raise EngineError(f"onnxruntime could not start CUDA for {self.path.name} on "
                              f"{device!r} (it offered {used}); not falling back to the CPU")
        self.provider = used[0]
        self.device_index = int(device.partition(":")[2] or 0) if device != "cpu" else -1
        self.input_name = self.session.get_inputs()[0].name
        self.output_name = self.session.get_outputs()[0].name
        self._lock = threading.Lock()

    def __call__(self, batch) -> np.ndarray:
        """Run the graph on a ``(N, C, H, W)`` float32 batch (numpy or cupy); numpy out.

        A cupy batch on a CUDA engine is bound in place (no trip through host memory)."""
        if not isinstance(batch, np.ndarray):
            if self.provider == "CUDAExecutionProvider":
                return self._run_bound(batch)
            batch = batch.get()
        batch = np.ascontiguousarray(batch, dtype=np.float32)
        with self._lock:
            return self.session.run([self.output_name], {self.input_name: batch})[0]

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
    why = "no GPU" if not gpu_available() else "onnxruntime has no CUDA provider"
    return "cpu", f"auto: {why}, running on the CPU"
