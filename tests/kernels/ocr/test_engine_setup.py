"""The engine's setup: the GPU install path (the extra, the one-line message when the CUDA
provider is missing and OCR falls back to the CPU, which provider ran) and the session's
memory settings."""

from __future__ import annotations

import logging
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from skiff.kernels.ocr import engine

ROOT = Path(__file__).resolve().parents[3]


def _versions(monkeypatch, installed):
    def version(name):
        if name in installed:
            return installed[name]
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", version)


@pytest.mark.parametrize("installed, fix", [
    ({"onnxruntime": "1.32.0", "onnxruntime-gpu": "1.32.0"},
     "pip install --force-reinstall --no-deps onnxruntime-gpu==1.32.0"),
    ({"onnxruntime": "1.32.0"}, "pip install 'skiff[ocr-gpu]' && pip install --force-reinstall"),
    ({"onnxruntime-gpu": "1.32.0"}, "onnxruntime-gpu[cuda,cudnn]"),
], ids=["both", "cpu-only", "gpu-without-libraries"])
def test_missing_cuda_provider_is_explained_in_one_line(monkeypatch, installed, fix):
    import onnxruntime as ort

    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CPUExecutionProvider"])
    _versions(monkeypatch, installed)
    why = engine.cuda_provider_problem()
    assert fix in why and "\n" not in why


def test_cuda_provider_present_is_no_problem(monkeypatch):
    import onnxruntime as ort

    monkeypatch.setattr(ort, "get_available_providers",
                        lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert engine.cuda_provider_problem() is None


def test_auto_on_a_gpu_without_the_provider_says_so_once(monkeypatch, caplog):
    import onnxruntime as ort

    import skiff.kernels.backend as backend

    monkeypatch.setattr(backend, "gpu_available", lambda: True)
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CPUExecutionProvider"])
    _versions(monkeypatch, {"onnxruntime": "1.32.0"})
    monkeypatch.setattr(engine, "_TOLD", set())
    with caplog.at_level(logging.WARNING, logger="skiff.ocr"):
        device, why = engine.resolve_ocr_device("auto")
        assert engine.resolve_ocr_device("auto") == (device, why)
    assert device == "cpu" and "runs on the CPU" in why and "skiff[ocr-gpu]" in why
    lines = [r.getMessage() for r in caplog.records if r.name == "skiff.ocr"]
    assert len(lines) == 1 and "\n" not in lines[0]
    # an explicit GPU is never quietly the CPU
    with pytest.raises(engine.EngineError, match="skiff\\[ocr-gpu\\]"):
        from skiff.kernels.ocr.models import MODEL_SETS

        engine.OnnxEngine(MODEL_SETS["ch"].path("cls"), "cuda:0")


def test_the_gpu_extra_installs_onnxruntime_gpu():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extra = project["optional-dependencies"]["ocr-gpu"]
    assert any(dep.startswith("onnxruntime-gpu") for dep in extra)
    assert not any(dep.startswith("onnxruntime-gpu") for dep in project["dependencies"])


def test_cpu_session_keeps_no_arena_and_says_its_provider():
    from skiff.kernels.ocr.models import MODEL_SETS

    eng = engine.OnnxEngine(MODEL_SETS["ch"].path("cls"), "cpu", threads=1)
    opts = eng.session.get_session_options()
    assert not opts.enable_cpu_mem_arena and not opts.enable_mem_pattern
    assert eng.provider == "CPUExecutionProvider"
    assert eng(np.zeros((2, 3, 48, 192), np.float32)).shape == (2, 2)


def test_recognizer_keeps_an_arena_for_a_call_only_and_reads_the_same():
    """The recognizer's session has onnxruntime's arena (its many small blocks are not
    malloc'd one by one) and shrinks it at the end of every call (RSS as without one, in
    benchmarks/bench_ocr_memory.py); its outputs are those of a session without."""
    from skiff.kernels.ocr.pipeline import OcrPipeline

    pipe = OcrPipeline("ch", device="cpu")
    rec, det = pipe.engine("rec"), pipe.engine("det")
    assert rec.session.get_session_options().enable_cpu_mem_arena
    assert rec.run_options is not None and \
        rec.run_options.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    assert not det.session.get_session_options().enable_cpu_mem_arena
    assert det.run_options is None
    plain = engine.OnnxEngine(rec.path, "cpu", threads=1)
    assert not plain.session.get_session_options().enable_cpu_mem_arena
    rng = np.random.default_rng(0)
    for width in (320, 96, 640):
        x = rng.uniform(-1, 1, (3, 3, 48, width)).astype(np.float32)
        assert np.array_equal(rec(x), plain(x))
