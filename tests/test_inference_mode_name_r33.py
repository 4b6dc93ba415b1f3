"""`skiff.is_inference_mode_enabled()` as torch's (round 33: the function existed in the core,
not at the top level). The oracle: torch 2.13's own answer in the same blocks."""

import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402


def test_is_inference_mode_enabled_as_torch():
    assert skiff.is_inference_mode_enabled() == torch.is_inference_mode_enabled() is False
    with skiff.inference_mode(), torch.inference_mode():
        assert skiff.is_inference_mode_enabled() == torch.is_inference_mode_enabled() is True
    assert "is_inference_mode_enabled" in dir(skiff)
