"""Contrastive search (round 28; was "does not support penalty_alpha"):
``model.generate(ids, penalty_alpha=a, top_k=k)``. transformers 5 runs it only from a Hub
repository (``trust_remote_code``; nothing is downloaded in tests), so the oracle is the
published rule computed on transformers' own model without a cache: each step, the top-k
tokens of transformers' next-token distribution, each candidate run through transformers'
whole forward for its last hidden state (``hidden_states[-1]``), the best
``(1 - a) p - a max cos(h, context)``. The same tokens, one row and a left-padded batch,
dense and MoE; eos stops a row (pad after it, as transformers)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch, transformers


def reference(ref, prompt, alpha, k, n, eos=None):
    ids = [int(t) for t in prompt]
    new = []
    with torch.no_grad():
        for _ in range(n):
            out = ref(torch.tensor([ids]), output_hidden_states=True)
            context = out.hidden_states[-1][0]
            probs = torch.softmax(out.logits[0, -1], dim=-1)
            top_p, top_i = probs.topk(k)
            cand = torch.tensor([ids + [int(t)] for t in top_i])
            nxt = ref(cand, output_hidden_states=True).hidden_states[-1][:, -1]
            unit = torch.nn.functional.normalize
            penalty = (unit(context, dim=-1) @ unit(nxt, dim=-1).T).max(dim=0).values
            token = int(top_i[int(torch.argmax((1 - alpha) * top_p - alpha * penalty))])
            new.append(token)
            ids.append(token)
            if token == eos:
                break
    return new


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    _, ref = make_checkpoint(folder, request.param)
    return ref, from_pretrained(folder)


@pytest.mark.parametrize("alpha,k", [(0.6, 4), (0.3, 2), (0.9, 6)])
def test_contrastive_search_tokens(pair, alpha, k):
    ref, model = pair
    prompt = random_ids(model.config.vocab_size, (1, 6), seed=7)
    got = model.generate(prompt, max_new_tokens=8, penalty_alpha=alpha, top_k=k,
                         eos_token_id=None)
    want = reference(ref, prompt[0], alpha, k, 8)
    np.testing.assert_array_equal(got[0, :6], prompt[0])
    assert got[0, 6:].tolist() == want
    greedy = model.generate(prompt, max_new_tokens=8, do_sample=False, eos_token_id=None)
    assert alpha < 0.5 or not np.array_equal(greedy, got)  # the penalty changes the path


def test_contrastive_left_padded_batch_and_eos(pair):
    ref, model = pair
    V = model.config.vocab_size
    rows = [random_ids(V, (1, n), seed=s)[0] for n, s in ((5, 8), (3, 9), (7, 10))]
    free = [reference(ref, r, 0.6, 4, 6) for r in rows]
    eos = free[1][2]  # row 1 stops early at its 3rd token; others may too
    # each row's tokens with eos: its free run up to the first eos (the reference's path is
    # the same until then; round 43: no second reference run per row)
    want = [f[:f.index(eos) + 1] if eos in f else f for f in free]
    T = max(len(r) for r in rows)
    pad = 0
    ids = np.full((3, T), pad, dtype=np.int64)
    mask = np.zeros((3, T), dtype=np.int64)
    for b, r in enumerate(rows):
        ids[b, T - len(r):], mask[b, T - len(r):] = r, 1
    got = model.generate(ids, attention_mask=mask, max_new_tokens=6, penalty_alpha=0.6,
                         top_k=4, eos_token_id=eos, pad_token_id=pad)
    width = max(len(w) for w in want)
    assert got.shape == (3, T + width)
    np.testing.assert_array_equal(got[:, :T], ids)
    for b, w in enumerate(want):
        assert got[b, T:].tolist() == w + [pad] * (width - len(w))
    hf = transformers.GenerationConfig(penalty_alpha=0.6, top_k=4, max_new_tokens=6,
                                       eos_token_id=eos, pad_token_id=pad)
    np.testing.assert_array_equal(model.generate(ids, attention_mask=mask,
                                                 generation_config=hf), got)


def test_contrastive_choices_as_transformers_decides(pair):
    """penalty_alpha with sampling or top_k=1 is ignored (transformers samples / is greedy
    then); options contrastive search does not apply here are one error."""
    _, model = pair
    prompt = random_ids(model.config.vocab_size, (1, 5), seed=11)
    greedy = model.generate(prompt, max_new_tokens=4, do_sample=False)
    np.testing.assert_array_equal(model.generate(prompt, max_new_tokens=4, penalty_alpha=0.6,
                                                 top_k=1), greedy)
    with pytest.raises(ValueError, match="repetition_penalty"):
        model.generate(prompt, max_new_tokens=4, penalty_alpha=0.6, top_k=4,
                       repetition_penalty=1.2)
    with pytest.raises(ValueError, match="output_scores"):
        model.generate(prompt, max_new_tokens=4, penalty_alpha=0.6, top_k=4,
                       return_dict_in_generate=True, output_scores=True)


def test_checkpoint_generation_config_asks_for_it(tmp_path):
    """A ``generation_config.json`` with ``penalty_alpha`` / ``top_k``: ``generate(**tok(...,
    return_tensors="pt"))`` searches contrastively as transformers would (it was greedy)."""
    import json

    from .ernie_reference import make_sentencepiece_checkpoint

    ref, _ = make_sentencepiece_checkpoint(tmp_path)
    path = tmp_path / "generation_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "penalty_alpha": 0.6,
                                "top_k": 4, "max_new_tokens": 5}))
    model = from_pretrained(tmp_path)
    tok = model.tokenizer
    enc = tok(["Hello world", "What is two plus two?"], padding=True, padding_side="left",
              return_tensors="pt")
    got = model.generate(**enc)
    T = enc["input_ids"].shape[1]
    for b in range(2):
        real = enc["attention_mask"][b].numpy() == 1
        want = reference(ref, enc["input_ids"][b].numpy()[real], 0.6, 4, 5,
                         eos=tok.eos_token_id)
        assert got[b, T:].tolist()[:len(want)] == want
