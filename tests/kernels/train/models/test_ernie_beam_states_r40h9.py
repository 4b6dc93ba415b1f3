"""``generate(num_beams=N, return_dict_in_generate=True, output_hidden_states=True,
output_attentions=True)`` (round 40, h9; was "not supported: greedy or sampling"):
transformers returns what each forward of its beam loop computed for the B x N rows it
ran (step 0 the expanded prompts, then each running beam's newest position, dead beams
too, in its order). Against transformers (eager attention) on a left-padded batch whose
beams finish at an eos, with ``num_return_sequences``, dense and MoE, greedy beams and beam
sampling with transformers' draws."""

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


def _real(mask, nb, width):
    """(B * nb, width) 1 where a row's column is a real token (the prompt's mask per beam,
    then the new tokens)."""
    m = np.repeat(mask, nb, axis=0)
    return np.concatenate([m, np.ones((m.shape[0], width - m.shape[1]), int)], axis=1) == 1


@pytest.mark.parametrize("sample", [False, True])
def test_beam_states_equal_transformers(pair, sample):
    ref, model = pair
    B, T, nb = 2, 6, 3
    ids = random_ids(model.config.vocab_size, (B, T), seed=40)
    mask = np.ones_like(ids)
    mask[0, :2] = 0
    plain = model.generate(ids, attention_mask=mask, max_new_tokens=4, num_beams=nb,
                           pad_token_id=0)
    kw = dict(max_new_tokens=5, num_beams=nb, num_return_sequences=2, pad_token_id=0,
              eos_token_id=int(plain[0, T + 1]),  # the best beam of row 0 ends early
              return_dict_in_generate=True, output_hidden_states=True,
              output_attentions=True, output_scores=True, do_sample=sample)
    if sample:
        kw.update(top_k=12)
        torch.manual_seed(3)
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), **kw)
    extra = dict(generator=torch.Generator().manual_seed(3)) if sample else {}
    got = model.generate(ids, attention_mask=mask, **kw, **extra)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    assert len(got.hidden_states) == len(want.hidden_states) >= 3
    assert len(got.attentions) == len(want.attentions) == len(want.hidden_states)
    L = model.config.num_hidden_layers
    for step, (mine, theirs) in enumerate(zip(got.hidden_states, want.hidden_states)):
        assert len(mine) == len(theirs) == L + 1
        width = T + step  # the columns the step's rows had
        real = _real(mask, nb, width)[:, :T] if step == 0 else np.ones((B * nb, 1), bool)
        for a, b in zip(mine, theirs):
            assert a.shape == tuple(b.shape)
            np.testing.assert_allclose(a[real], b.numpy()[real], atol=1e-4, err_msg=step)
    for step, (mine, theirs) in enumerate(zip(got.attentions, want.attentions)):
        assert len(mine) == len(theirs) == L
        keys = _real(mask, nb, T + step)  # the keys the step's queries saw
        for a, b in zip(mine, theirs):
            assert a.shape == tuple(b.shape)
            b = b.numpy()
            for r in range(B * nb):
                k = np.flatnonzero(keys[r, :b.shape[-1]])
                q = np.flatnonzero(keys[r, :T]) if step == 0 else [0]
                np.testing.assert_allclose(a[r][:, q][:, :, k], b[r][:, q][:, :, k],
                                           atol=1e-5, err_msg=step)
