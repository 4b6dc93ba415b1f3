"""Round 31 (coordinator): a numpy scalar counts as the Python number it holds in type
promotion, as torch counts it (float32 weights times ``np.float64(0.5)`` stayed float32 in
torch and became float64 here: a Trainer's accumulation factor sent 8-byte rows through the
experts' all-to-all); a checkpoint folder given to ``load_state_dict`` names the reader."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

CASES = [
    ("float32", lambda t: t * np.float64(0.5)),
    ("float32", lambda t: np.float64(0.5) * t),
    ("float32", lambda t: t + np.int64(2)),
    ("float32", lambda t: t / np.float32(3.0)),
    ("int64", lambda t: t * np.int32(2)),
    ("float32", lambda t: t * np.float64(1.5)),
    ("float64", lambda t: t * np.float32(2.0)),
]


@pytest.mark.parametrize("dtype,op", CASES)
def test_numpy_scalar_promotion_matches_torch(dtype, op):
    tt = torch.ones(3, dtype=getattr(torch, dtype))
    st = skiff.ones(3, dtype=getattr(skiff, dtype))
    want, got = op(tt), op(st)
    assert str(got.dtype).removeprefix("skiff.") == str(want.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(np.asarray(got.detach().numpy() if hasattr(got, "detach")
                                             else got), want.numpy())


def test_gradient_stays_float32_under_numpy_factor():
    w = skiff.ones(4, requires_grad=True)
    (w * np.float64(0.25)).sum().backward()
    assert w.grad.dtype == np.float32
    np.testing.assert_allclose(np.asarray(w.grad), 0.25)


def test_checkpoint_folder_names_its_reader(tmp_path):
    net = skiff.nn.Linear(2, 2)
    folder = tmp_path / "step-00000003"
    folder.mkdir()
    with pytest.raises(FileNotFoundError, match="model_weights"):
        net.load_state_dict(str(folder))
