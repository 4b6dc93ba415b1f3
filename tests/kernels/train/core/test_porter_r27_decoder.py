"""Round 27: ``nn.TransformerDecoderLayer``, ``nn.TransformerDecoder`` and ``nn.Transformer``
(nn/decoder.py) against torch 2.13 in float64, from torch's weights (state dicts load as they
are): outputs and every gradient with causal and padding masks, post- and pre-norm,
``batch_first``; ``generate_square_subsequent_mask``; and a small copy task trained 8 steps
with both, the losses equal."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(4)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _load(sm, tm):
    sm.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in tm.state_dict().items()})


@pytest.mark.parametrize("norm_first,batch_first,activation", [
    (False, True, "relu"), (True, False, "gelu")])
def test_decoder_stack(norm_first, batch_first, activation):
    torch.manual_seed(0)
    kw = dict(dim_feedforward=16, dropout=0.0, norm_first=norm_first, batch_first=batch_first,
              activation=activation)
    tm = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(8, 2, **kw), 2,
                                     torch.nn.LayerNorm(8)).double()
    sm = skiff.nn.TransformerDecoder(skiff.nn.TransformerDecoderLayer(8, 2, **kw), 2,
                                     skiff.nn.LayerNorm(8, dtype=skiff.float64))
    sm.to(skiff.float64)
    _load(sm, tm)
    shape_t, shape_m = ((3, 5, 8), (3, 7, 8)) if batch_first else ((5, 3, 8), (7, 3, 8))
    tgt, mem = RNG.standard_normal(shape_t), RNG.standard_normal(shape_m)
    mpad = np.zeros((3, 7), bool)
    mpad[1, 5:] = True
    tpad = np.zeros((3, 5), bool)
    tpad[2, 4:] = True
    G = RNG.standard_normal(shape_t)
    res = []
    for lib, m in ((skiff, sm), (torch, tm)):
        t, me = lib.tensor(tgt, requires_grad=True), lib.tensor(mem, requires_grad=True)
        causal = lib.nn.Transformer.generate_square_subsequent_mask(5, dtype=lib.float64)
        out = m(t, me, tgt_mask=causal, tgt_key_padding_mask=lib.tensor(tpad),
                memory_key_padding_mask=lib.tensor(mpad))
        (out * lib.tensor(G)).sum().backward()
        res.append([_np(out), _np(t.grad), _np(me.grad)]
                   + [_np(p.grad) for _, p in sorted(m.named_parameters())])
    assert len(res[0]) == len(res[1])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_transformer_copy_task_trains_as_torch():
    V, D = 7, 8
    losses = []
    torch.manual_seed(1)
    t_model = torch.nn.ModuleDict({
        "emb": torch.nn.Embedding(V, D),
        "tr": torch.nn.Transformer(D, 2, 1, 1, 16, dropout=0.0, batch_first=True),
        "out": torch.nn.Linear(D, V)}).double()
    s_model = skiff.nn.ModuleDict({
        "emb": skiff.nn.Embedding(V, D),
        "tr": skiff.nn.Transformer(D, 2, 1, 1, 16, dropout=0.0, batch_first=True),
        "out": skiff.nn.Linear(D, V)}).double()
    assert sorted(s_model.state_dict()) == sorted(t_model.state_dict())
    _load(s_model, t_model)
    src = RNG.integers(1, V, (6, 5))
    for lib, m in ((torch, t_model), (skiff, s_model)):
        opt = lib.optim.Adam(m.parameters(), lr=1e-2)
        mask = lib.nn.Transformer.generate_square_subsequent_mask(5).to(lib.float64)
        run = []
        for _ in range(8):
            s = lib.tensor(src)
            tgt_in = lib.cat([lib.zeros(6, 1, dtype=lib.long), s[:, :-1]], 1)
            h = m["tr"](m["emb"](s), m["emb"](tgt_in), tgt_mask=mask, tgt_is_causal=True)
            loss = lib.nn.functional.cross_entropy(m["out"](h).reshape(-1, V), s.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-9)
    assert losses[0][-1] < losses[0][0]
    m = skiff.nn.Transformer.generate_square_subsequent_mask(3)
    want = torch.nn.Transformer.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(_np(m), _np(want))
