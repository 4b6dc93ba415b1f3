"""Round 33 (h2): the OCR benchmark's results header names the CPU's vector instructions and
the onnxruntime version, since the ratios against RapidOCR move with both (the 1.99x of
2026-12-02 and the 1.22x of 2026-12-05 were measured under different onnxruntime versions;
the same skiff code is not slower today). Oracles: hand-written ``/proc/cpuinfo`` texts of
the two EPYC kinds this project has run on, and ``onnxruntime.__version__`` itself."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_ocr_r33h2",
                                                  ROOT / "benchmarks" / "bench_ocr.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cpuinfo(flags: str) -> str:
    core = (f"processor\t: {{n}}\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14\n"
            f"flags\t\t: fpu sse sse2 {flags}\n\n")
    return core.format(n=0) + core.format(n=1)


@pytest.mark.parametrize("flags, isa", [
    ("avx avx2 fma avx512f avx512bw avx512_vnni avx512_bf16", "AVX-512 VNNI"),
    ("avx avx2 fma avx512f avx512bw", "AVX-512, no VNNI"),
    ("avx avx2 fma", "AVX2 only"),
    ("avx", "no AVX2"),
])
def test_machine_line_names_the_vector_instructions(flags, isa):
    ort = pytest.importorskip("onnxruntime")
    line = _bench().machine_line(_cpuinfo(flags))
    assert line == f"AMD EPYC 9R14, {isa}, onnxruntime {ort.__version__}"


def test_machine_line_without_cpuinfo_still_names_the_runtime():
    ort = pytest.importorskip("onnxruntime")
    line = _bench().machine_line("")
    assert line.endswith(f"onnxruntime {ort.__version__}")
    assert "AVX" not in line
