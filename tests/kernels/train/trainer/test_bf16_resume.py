"""A bf16-mixed run stopped and resumed on one process ends as the run that never stopped.

Found by a user: no bf16-mixed run could resume. npz stores bfloat16 (an ml_dtypes type) as
raw bytes ("|V2"), and loading the weights failed "No cast function available". Checkpoints
now keep the bits and the dtype's name. The oracle is the same Trainer run unstopped.
"""

from __future__ import annotations

import numpy as np

import skiff
from skiff.kernels.train.checkpoint import flatten_state, unflatten_state
from skiff.kernels.train.core.tensor import _as_dtype
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from tests.helpers.stop_at import StopAtStep


def _run(folder, stop=None, resume=False):
    skiff.seed(0)
    model = GPT(GPTConfig(block_size=8, vocab_size=32, n_layer=1, n_head=2, n_embd=16))
    ids = np.random.default_rng(0).integers(0, 32, size=(16, 9))
    trainer = skiff.Trainer(model, precision="bf16-mixed", lr=1e-2, batch_size=4,
                            schedule="constant", checkpoint_dir=folder, resume=resume,
                            reporter=StopAtStep(stop))
    result = trainer.train((ids[:, :-1], ids[:, 1:]), steps=6)
    return result, [m.numpy().copy() for m in trainer.mixed.master], model.state_dict()


def test_a_bf16_mixed_run_resumes_exactly(tmp_path):
    whole, masters, weights = _run(tmp_path / "whole")
    _run(tmp_path / "part", stop=3)
    again, masters2, weights2 = _run(tmp_path / "part", resume=True)
    assert again.resumed["from_step"] == 3
    assert [r["loss"] for r in again.history] == [r["loss"] for r in whole.history]
    assert all(np.array_equal(a, b) for a, b in zip(masters, masters2))
    for k, v in weights.items():
        assert str(weights2[k].dtype) == "bfloat16" and np.array_equal(
            np.asarray(v, np.float32), np.asarray(weights2[k], np.float32)), k


def test_bfloat16_arrays_come_back_as_bfloat16_with_their_bits():
    bf16 = _as_dtype("bfloat16")
    x = np.array([1.0, -2.5, 3.14159, 1e-3], np.float32).astype(bf16)
    tree, arrays = flatten_state({"w": x, "n": np.arange(3)})
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as z:
        back = unflatten_state(tree, {k: z[k] for k in z.files})
    assert back["w"].dtype == bf16
    assert np.array_equal(back["w"].view(np.uint16), x.view(np.uint16))
    assert np.array_equal(back["n"], np.arange(3))
