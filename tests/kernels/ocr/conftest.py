"""Shared OCR fixtures: one CPU pipeline per test module (models load once), rendered pages."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def fonts():
    from skiff.kernels.ocr.synth import FontsMissing
    from skiff.kernels.ocr.synth import fonts as find

    try:
        return find()
    except FontsMissing as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def pipe():
    from skiff.kernels.ocr import OcrPipeline

    return OcrPipeline("ch", device="cpu", threads=2)


@pytest.fixture(scope="session")
def sample(fonts):
    """A clean English page with two or three lines."""
    from skiff.kernels.ocr.synth import render_sample

    return render_sample("clean", 0, seed=3)
