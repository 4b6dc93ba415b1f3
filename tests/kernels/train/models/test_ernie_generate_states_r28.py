"""``generate(..., return_dict_in_generate=True, output_hidden_states=True,
output_attentions=True)`` (round 28; was "does not support output_attentions"): per step,
transformers' hidden states and eager attention weights (the prompt's positions at step 0,
then each fed-back token's), a left-padded batch whose rows stop at different steps, dense
and MoE, greedy and sampled with transformers' draws."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch, transformers


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    make_checkpoint(folder, request.param)
    ref = transformers.AutoModelForCausalLM.from_pretrained(
        folder, attn_implementation="eager").eval()
    return ref, from_pretrained(folder)


@pytest.mark.parametrize("sample", [False, True])
def test_generate_states_equal_transformers(pair, sample):
    ref, model = pair
    ids = random_ids(model.config.vocab_size, (3, 7), seed=31)
    mask = np.ones_like(ids)
    mask[0, :2], mask[2, :4] = 0, 0
    kw = dict(max_new_tokens=5, return_dict_in_generate=True, output_hidden_states=True,
              output_attentions=True, do_sample=sample, pad_token_id=0)
    if sample:
        kw.update(top_k=20)
    free = model.generate(ids, attention_mask=mask, max_new_tokens=5, pad_token_id=0)
    kw["eos_token_id"] = int(free[1, 9])  # row 1 stops after its 3rd new token
    if sample:
        torch.manual_seed(5)
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), **kw)
    extra = dict(generator=torch.Generator().manual_seed(5)) if sample else {}
    if sample:
        torch.manual_seed(5)
    got = model.generate(ids, attention_mask=mask, **kw, **extra)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    seq_mask = np.concatenate([mask, np.ones((3, got.sequences.shape[1] - 7), int)], axis=1)
    assert len(got.hidden_states) == len(want.hidden_states) == got.sequences.shape[1] - 7
    assert len(got.attentions) == len(want.attentions)
    for step, (mine, theirs) in enumerate(zip(got.hidden_states, want.hidden_states)):
        s = 0 if step == 0 else 7 + step - 1
        e = 7 if step == 0 else s + 1
        real = seq_mask[:, s:e] == 1
        assert len(mine) == len(theirs) == model.config.num_hidden_layers + 1
        for a, b in zip(mine, theirs):
            assert a.shape == tuple(b.shape)
            np.testing.assert_allclose(a[real], b.numpy()[real], atol=1e-4, err_msg=step)
    for step, (mine, theirs) in enumerate(zip(got.attentions, want.attentions)):
        s = 0 if step == 0 else 7 + step - 1
        e = 7 if step == 0 else s + 1
        for a, b in zip(mine, theirs):
            assert a.shape == tuple(b.shape)
            b = b.numpy()
            for r in range(3):
                q = np.flatnonzero(seq_mask[r, s:e])
                k = np.flatnonzero(seq_mask[r, :b.shape[-1]])
                np.testing.assert_allclose(a[r][:, q][:, :, k], b[r][:, q][:, :, k],
                                           atol=1e-5, err_msg=step)
    plain = model.generate(ids, attention_mask=mask, max_new_tokens=3, output_attentions=True)
    assert isinstance(plain, np.ndarray)  # without return_dict_in_generate: the ids alone
