"""bfloat16 weights kept 16-bit (round 26). Round 25 measured skiff's bf16 logits 0.37 off
transformers' bf16 ones, more than transformers' bf16 is off its own float32 (0.20). The
cause was skiff's RMSNorm: ``nn.RMSNorm`` squared, averaged and took the root in bfloat16
(2.7 times the reference's error), where the reference computes in float32 and rounds the
normalised value once. ERNIE's norms now compute as the reference: on transformers' own
inputs they give its bf16 outputs bit for bit, and the logits are nearer transformers' bf16
ones than those are to float32. (What stays different: skiff's 16-bit matmuls return
float32, so activations are not rounded to bf16 after each projection as in torch.)"""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core.tensor import Tensor, no_grad
from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch


@pytest.mark.parametrize("shape", ["dense-gqa-tied", "moe-shared"])
def test_bf16_norms_and_logits_against_transformers(tmp_path, shape):
    import ml_dtypes

    _, ref32 = make_checkpoint(tmp_path, shape)
    ref = type(ref32).from_pretrained(tmp_path, dtype=torch.bfloat16).eval()
    model = from_pretrained(tmp_path, dtype="bfloat16")
    ids = random_ids(model.config.vocab_size, (2, 12), seed=3)
    with torch.no_grad():
        out = ref(torch.tensor(ids), output_hidden_states=True)
        want32 = ref32(torch.tensor(ids)).logits.numpy()
        hidden = out.hidden_states[1]  # layer 0's output: a bf16 input for the norms
    x = Tensor(hidden.float().numpy().astype(ml_dtypes.bfloat16))
    with no_grad():
        for mine, theirs in [(model.model.layers[1].input_layernorm,
                              ref.model.layers[1].input_layernorm),
                             (model.model.layers[0].post_attention_layernorm,
                              ref.model.layers[0].post_attention_layernorm),
                             (model.model.norm, ref.model.norm)]:
            got = mine(x)._data
            with torch.no_grad():
                expect = theirs(hidden)
            assert got.dtype == np.dtype(ml_dtypes.bfloat16)
            np.testing.assert_array_equal(got.astype(np.float32), expect.float().numpy())
        logits = np.asarray(model(ids)._data).astype(np.float32)
    if shape.startswith("moe"):  # bf16 flips routing choices (transformers' own spread
        return  # against float32 is 1.8 here): the logits say nothing of the rounding
    want = out.logits.float().numpy()
    spread = np.abs(want - want32).max()  # transformers' bf16 against its float32: 0.2
    assert np.abs(logits - want).max() < spread  # was 0.30 (norms in bf16), now 0.10
