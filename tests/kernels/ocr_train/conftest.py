"""Fixtures of the fine-tuning tests: the fonts the rendered sets need."""

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
