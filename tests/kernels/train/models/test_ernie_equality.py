"""ERNIE-4.5 in skiff against transformers on the same checkpoint (float32, CPU).

Every shape of ``SHAPES`` (dense with grouped-query or plain attention, tied or untied head,
biases; MoE with shared experts, a dense first layer, an interval, an expert bias):
logits equal within 1e-4 of the logit scale, the same experts chosen per token in every MoE
layer, the loss gradient of a few weights equal to torch's autograd, a packed batch equal to
the sequences run one by one, and greedy generation of 32 tokens token-identical to
transformers' ``generate``, with and without the key/value cache.
"""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.data import pack_sequences

from .ernie_reference import random_ids as _ids
from .ernie_reference import shape_pair, torch

pair = shape_pair  # the fixture (each of the SHAPES), under the name the tests use


def test_logits_equal(pair):
    name, ref, model = pair
    ids = _ids(model.config.vocab_size, (2, 13))
    with torch.no_grad():
        want = ref(torch.tensor(ids)).logits.numpy()
    got = model(ids).numpy()
    assert got.shape == want.shape == (2, 13, model.config.vocab_size)
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 1e-4 * scale, name


def test_moe_routing_equal(pair):
    name, ref, model = pair
    if not model.config.is_moe:
        pytest.skip("dense")
    chosen = {}
    hooks = [layer.mlp.gate.register_forward_hook(
        lambda mod, inp, out, i=i: chosen.__setitem__(i, out[2].numpy()))
        for i, layer in enumerate(ref.model.layers) if hasattr(layer.mlp, "gate")]
    ids = _ids(model.config.vocab_size, (2, 9), seed=3)
    with torch.no_grad():
        ref(torch.tensor(ids))
    for h in hooks:
        h.remove()
    model(ids)
    moe_layers = [i for i, layer in enumerate(model.model.layers)
                  if model.config.is_moe_layer(i)]
    assert sorted(chosen) == moe_layers
    for i in moe_layers:
        mine = np.sort(model.model.layers[i].mlp.last_selection, axis=-1)
        assert np.array_equal(mine, np.sort(chosen[i], axis=-1)), (name, i)


def test_loss_gradients_equal(pair):
    name, ref, model = pair
    ids = _ids(model.config.vocab_size, (2, 10), seed=5)
    x, y = ids[:, :-1], ids[:, 1:]
    loss = model.loss((x, y))
    model.zero_grad()
    loss.backward()
    ref.zero_grad()
    logits = ref(torch.tensor(x)).logits
    tloss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                              torch.tensor(y).reshape(-1))
    tloss.backward()
    assert abs(loss.item() - tloss.item()) <= 1e-5 * abs(tloss.item())
    theirs = dict(ref.named_parameters())
    mine = dict(model.named_parameters())
    checked = 0
    for pname in ("model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
                  "model.layers.0.self_attn.k_proj.weight", "model.layers.1.mlp.gate.weight",
                  "model.layers.1.mlp.experts.0.up_proj.weight",
                  "model.layers.1.mlp.shared_experts.down_proj.weight",
                  "model.layers.1.post_attention_layernorm.weight", "model.norm.weight",
                  "lm_head.weight"):
        if pname not in mine:
            continue
        g = mine[pname]._grad
        tname = pname
        if ".experts.0." in pname:  # transformers keeps experts fused in memory
            experts = theirs[pname.split(".experts.")[0] + ".experts.gate_up_proj"]
            half = experts.shape[1] // 2
            tg = experts.grad[0, half:].numpy()
        else:
            tg = theirs[tname].grad.numpy()
        assert g.shape == tg.shape, pname
        assert np.abs(g - tg).max() <= 1e-4 * np.abs(tg).max() + 1e-7, (name, pname)
        checked += 1
    assert checked >= 5


def test_packed_batch_equals_sequences_alone(pair):
    _, _, model = pair
    seqs = [_ids(model.config.vocab_size, (n,), seed=n) for n in (7, 3, 11)]
    batch = pack_sequences(seqs)
    packed = model.forward_packed(batch.tokens, batch.cu_seqlens, batch.positions).numpy()
    cu = np.asarray(batch.cu_seqlens)
    for s, seq in enumerate(seqs):
        alone = model(seq[None, :-1]).numpy()[0]
        got = packed[cu[s]:cu[s + 1]]
        assert np.abs(got - alone).max() <= 1e-5 * np.abs(alone).max()


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_generation_token_identical(pair, use_cache):
    name, ref, model = pair
    ids = _ids(model.config.vocab_size, (2, 5), seed=7)
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids), max_new_tokens=32, do_sample=False,
                            use_cache=use_cache, eos_token_id=None, pad_token_id=0).numpy()
    got = model.generate(ids, max_new_tokens=32, use_cache=use_cache, eos_token_id=None)
    assert got.shape == (2, 37)
    assert np.array_equal(got, want), name


def test_generation_stops_at_eos_like_transformers(pair):
    name, ref, model = pair
    ids = _ids(model.config.vocab_size, (3, 4), seed=11)
    free = model.generate(ids, max_new_tokens=12, eos_token_id=None)
    eos = int(free[0, 6])  # a token row 0 emits: it stops there, the others may not
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids), max_new_tokens=12, do_sample=False,
                            eos_token_id=eos, pad_token_id=0).numpy()
    got = model.generate(ids, max_new_tokens=12, eos_token_id=eos, pad_token_id=0)
    assert np.array_equal(got, want), name


def test_prompts_of_different_lengths_generated_together(pair):
    """One packed prefill and batched decode steps, each row at its own position: every
    row equals transformers' greedy generation of that prompt alone."""
    name, ref, model = pair
    prompts = [_ids(model.config.vocab_size, (n,), seed=n) for n in (3, 9, 1, 14)]
    got = model.generate_batch(prompts, max_new_tokens=20, eos_token_id=None)
    wants = []
    for prompt, row in zip(prompts, got):
        with torch.no_grad():
            want = ref.generate(torch.tensor(prompt[None]), max_new_tokens=20, do_sample=False,
                                eos_token_id=None, pad_token_id=0).numpy()[0]
        assert np.array_equal(row, want), (name, len(prompt))
        wants.append(want)
    # a row stops after its eos; the others go on. transformers' greedy run of one prompt
    # with that eos is its run without it, cut after the first new eos (round 40: derived
    # from the runs above instead of four more transformers runs)
    eos = int(got[1][len(prompts[1]) + 2])
    stopped = model.generate_batch(prompts, max_new_tokens=20, eos_token_id=eos)
    assert len({len(r) for r in stopped}) > 1  # rows stopped at different steps
    for prompt, want, row in zip(prompts, wants, stopped):
        hits = np.flatnonzero(want[len(prompt):] == eos)
        alone = want[:len(prompt) + int(hits[0]) + 1] if hits.size else want
        assert np.array_equal(row, alone), (name, len(prompt))


def test_sampling_is_seeded_and_top_k_1_is_greedy(pair):
    _, _, model = pair
    ids = _ids(model.config.vocab_size, (2, 4), seed=2)
    greedy = model.generate(ids, max_new_tokens=8, eos_token_id=None)
    top1 = model.generate(ids, max_new_tokens=8, do_sample=True, top_k=1, eos_token_id=None)
    assert np.array_equal(top1, greedy)
    a = model.generate(ids, max_new_tokens=8, do_sample=True, temperature=2.0, top_p=0.9,
                       seed=5, eos_token_id=None)
    b = model.generate(ids, max_new_tokens=8, do_sample=True, temperature=2.0, top_p=0.9,
                       seed=5, eos_token_id=None)
    assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="exceeds the context"):
        model.generate(ids, max_new_tokens=model.config.max_position_embeddings)


def test_repetition_penalty_like_transformers(pair):
    name, ref, model = pair
    ids = _ids(model.config.vocab_size, (2, 6), seed=9)
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids), max_new_tokens=16, do_sample=False,
                            repetition_penalty=1.8, eos_token_id=None, pad_token_id=0).numpy()
    got = model.generate(ids, max_new_tokens=16, repetition_penalty=1.8, eos_token_id=None)
    assert np.array_equal(got, want), name
    rows = model.generate_batch(list(ids), max_new_tokens=16, repetition_penalty=1.8,
                                eos_token_id=None)
    assert np.array_equal(np.stack(rows), want), name
    plain = model.generate(ids, max_new_tokens=16, eos_token_id=None)
    assert not np.array_equal(plain, got)  # the penalty changed something


def test_streamer_sees_what_transformers_streamer_sees(pair):
    """A streamer gets the prompt, then each step's tokens, then end(), in the order
    transformers' generate calls it (its streamers take batch 1)."""
    _, ref, model = pair

    class Recorder:
        def __init__(self):
            self.calls = []

        def put(self, ids):
            self.calls.append(np.asarray(ids).reshape(-1).tolist())

        def end(self):
            self.calls.append("end")

    ids = _ids(model.config.vocab_size, (1, 5), seed=12)
    mine, theirs = Recorder(), Recorder()
    model.generate(ids, max_new_tokens=6, eos_token_id=None, streamer=mine)
    with torch.no_grad():
        ref.generate(torch.tensor(ids), max_new_tokens=6, do_sample=False, eos_token_id=None,
                     pad_token_id=0, streamer=theirs)
    assert mine.calls == theirs.calls and len(mine.calls) == 8
    seen = []
    model.generate(ids, max_new_tokens=3, eos_token_id=None, streamer=seen.append)
    assert [s.tolist() for s in seen] == mine.calls[1:4]
