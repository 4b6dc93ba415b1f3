"""Round 42 (h11): torch programs ported by changing the import (float64, torch 2.13 on the CPU
as the oracle, same weights): a pre-norm transformer encoder-decoder with callable activations
and padding masks, a graph attention network batching graphs by ``repeat_interleave`` and
normalizing edges by ``sparse.softmax``; and torch's checks and words on attention masks.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import skiff  # noqa: E402
from skiff.kernels.train.core import sparse_r37  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")


def _np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x.detach()._data) if hasattr(x, "_data") else np.asarray(x)


def _train(T, build, step, sd, steps=2):
    T.manual_seed(0)
    model = build(T).double()
    if sd is not None:
        model.load_state_dict({k: T.tensor(v) for k, v in sd.items()})
    opt = T.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = step(T, model)
        loss.backward()
        losses.append(loss.item())
        grads = {k: _np(p.grad) for k, p in model.named_parameters()}
        opt.step()
    return model, losses, grads


def _same_training(build, step, atol=1e-12):
    sd = {k: _np(v).copy() for k, v in build(torch).double().state_dict().items()}
    tm, tl, tg = _train(torch, build, step, sd)
    sm, sl, sg = _train(skiff, build, step, sd)
    np.testing.assert_allclose(sl, tl, rtol=1e-13)
    assert sorted(sg) == sorted(tg)
    for k in tg:
        np.testing.assert_allclose(sg[k], tg[k], atol=1e-13, err_msg=k)
    ts, ss = tm.state_dict(), sm.state_dict()
    assert list(ss) == list(ts)
    for k in ts:
        np.testing.assert_allclose(_np(ss[k]), _np(ts[k]), atol=atol, err_msg=k)
    return tm, sm


_RNG = np.random.default_rng(0)
_SRC = _RNG.integers(1, 11, (6, 2))
_SRC[4:, 0] = 0  # padding at the end of the first sequence (sequence-first layout)
_TGT = _RNG.integers(1, 11, (4, 2))


def _seq2seq(T):
    nn, F = T.nn, T.nn.functional

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(11, 8, padding_idx=0)
            enc = nn.TransformerEncoderLayer(8, 2, 12, dropout=0.0, norm_first=True,
                                             activation=nn.GELU(approximate="tanh"),
                                             layer_norm_eps=1e-6)
            self.enc = nn.TransformerEncoder(enc, 2, norm=nn.LayerNorm(8),
                                             enable_nested_tensor=False)
            # (a module here: torch's decoder stack copies its layer back to ReLU, torch's
            # old __setstate__ that pytorch#81832 fixed for the encoder layer only)
            dec = nn.TransformerDecoderLayer(8, 2, 12, dropout=0.0, norm_first=True,
                                             activation=F.gelu)
            self.dec = nn.TransformerDecoder(dec, 1)
            self.out = nn.Linear(8, 11)

        def forward(self, src, tgt):
            pad = (src == 0).t()
            mem = self.enc(self.emb(src), src_key_padding_mask=pad)
            causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(0),
                                                                    dtype=T.float64)
            y = self.dec(self.emb(tgt), mem, tgt_mask=causal, memory_key_padding_mask=pad,
                         tgt_is_causal=True)
            return self.out(y)

    return Seq2Seq()


def _seq2seq_step(T, model):
    src, tgt = T.tensor(_SRC), T.tensor(_TGT)
    logits = model(src, tgt[:-1])
    return T.nn.functional.cross_entropy(logits.reshape(-1, 11), tgt[1:].reshape(-1))


def test_prenorm_seq2seq_with_callable_activations_trains_as_torchs():
    # skiff refused activation=F.gelu / nn.GELU("tanh") ("must be 'relu' or 'gelu'")
    tm, sm = _same_training(_seq2seq, _seq2seq_step, atol=1e-10)  # the key bias: no gradient
    assert sm.enc.layers[0].activation_relu_or_gelu == tm.enc.layers[0].activation_relu_or_gelu
    assert tm.enc.layers[0].activation_relu_or_gelu == 2
    for t, s in ((tm.enc.layers[0], sm.enc.layers[0]), (tm.dec.layers[0], sm.dec.layers[0])):
        assert s.self_attn.head_dim == t.self_attn.head_dim == 4
    assert sm.enc.layers[1].activation.approximate == "tanh"
    dec = skiff.nn.TransformerDecoder(skiff.nn.TransformerDecoderLayer(
        8, 2, activation=skiff.nn.GELU(approximate="tanh")), 2)
    assert dec.layers[1].activation.approximate == "tanh"  # skiff runs the module it was given
    assert sm.enc.use_nested_tensor is False
    assert skiff.nn.TransformerEncoderLayer(8, 2, activation="relu").activation_relu_or_gelu == 1
    for lib in (torch, skiff):
        with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
            lib.nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_attention_masks_checked_in_torchs_words():
    x = _RNG.standard_normal((2, 5, 8))

    def outcome(lib, call):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(8, 2, 12, 0.0, batch_first=True).double()
        try:
            call(lib, layer, lib.tensor(x))
        except Exception as e:  # noqa: BLE001 - the outcome compared
            return type(e).__name__, str(e)
        return None

    calls = [  # an int 0/1 padding mask was added to the scores as it was
        lambda L, m, v: m(v, src_key_padding_mask=L.tensor(np.array([[0, 0, 0, 1, 1]] * 2))),
        lambda L, m, v: m(v, src_mask=L.tensor(np.zeros((5, 5), np.int64))),
        lambda L, m, v: m(v, src_mask=L.tensor(np.zeros((4, 4), bool))),
        lambda L, m, v: m(v, src_mask=L.tensor(np.zeros((3, 5, 5), bool))),
        lambda L, m, v: m(v, src_mask=L.tensor(np.zeros((1, 1, 5, 5), bool))),
        lambda L, m, v: m(v, src_key_padding_mask=L.tensor(np.zeros((5, 2), bool))),
        lambda L, m, v: m(v, src_key_padding_mask=L.tensor(np.zeros((2, 4), bool))),
        lambda L, m, v: m.self_attn(v, v, v, key_padding_mask=L.tensor(np.zeros(5, bool))),
        lambda L, m, v: L.nn.functional.scaled_dot_product_attention(
            v, v, v, attn_mask=L.ones(5, 5, dtype=L.bool), is_causal=True),
    ]
    for i, call in enumerate(calls):
        want, got = outcome(torch, call), outcome(skiff, call)
        assert want is not None and got is not None, i
        assert got[0] == want[0] and got[1].startswith(want[1].replace("torch.Size", "")
                                                       .split(" (")[0][:40]), (i, want, got)
    # float additive padding masks stay allowed, as torch's
    pad = np.array([[0, 0, 0, -np.inf, -np.inf], [0.0] * 5])
    outs, sd = [], None
    for lib in (torch, skiff):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(8, 2, 12, 0.0, batch_first=True).double()
        if sd is not None:
            layer.load_state_dict({k: skiff.tensor(v) for k, v in sd.items()})
        sd = {k: _np(v) for k, v in layer.state_dict().items()}
        outs.append(_np(layer(lib.tensor(x), src_key_padding_mask=lib.tensor(pad))))
    np.testing.assert_allclose(outs[1], outs[0], atol=1e-13)


_SIZES = np.array([5, 3, 6])
_OFF = np.array([0, 5, 8])
_G = _RNG.integers(0, 3, 24)
_EDGES = _RNG.integers(0, 6, (2, 24)) % _SIZES[_G] + _OFF[_G]
_X = _RNG.standard_normal((14, 4))


def _gat(T, sparse):
    nn, F = T.nn, T.nn.functional
    sizes = T.tensor(_SIZES)
    batch = T.repeat_interleave(sizes)  # node -> its graph
    n = int(sizes.sum())
    src, dst = T.tensor(_EDGES)

    class GAT(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 6, bias=False)
            self.att = nn.Parameter(T.randn(2, 6, dtype=T.float64) * 0.3)
            self.head = nn.Linear(12, 2)

        def forward(self, x):
            h = self.lin(x)
            a = F.leaky_relu((h[src] * self.att[0]).sum(-1) + (h[dst] * self.att[1]).sum(-1),
                             0.2)
            adj = T.sparse_coo_tensor(T.stack([dst, src]), a, (n, n))
            h = F.elu(sparse.mm(sparse.softmax(adj, dim=1), h) + h)
            h = h * T.sigmoid(sparse.sum(adj, dim=1).to_dense())[:, None]
            mean = T.zeros(3, 6, dtype=h.dtype).index_add(0, batch, h) / sizes[:, None]
            top = T.full((3, 6), -1e9, dtype=h.dtype).index_reduce_(0, batch, h, "amax")
            return self.head(T.cat([mean, top], -1))

    return GAT()


def test_graph_attention_with_sparse_softmax_and_repeat_interleave_trains_as_torchs():
    # skiff lacked torch.repeat_interleave(counts), sparse.softmax/log_softmax and a dense
    # tensor's to_dense() (what sparse.sum(dim=) gives in skiff)
    def build(T):
        return _gat(T, torch.sparse if T is torch else sparse_r37)

    def step(T, model):
        out = model(T.tensor(_X))
        return T.nn.functional.cross_entropy(out, T.tensor(np.array([0, 1, 1])))

    _same_training(build, step)
    # log_softmax along either dimension, and the values' gradient through softmax
    vals, w = _RNG.standard_normal(24), _RNG.standard_normal((14, 14))
    res = []
    for lib, sp in ((torch, torch.sparse), (skiff, sparse_r37)):
        v = lib.tensor(vals, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(_EDGES), v, (14, 14))
        logs = [_np(sp.log_softmax(s, d).to_dense()) for d in (0, -1)]
        (sp.softmax(s, 0).to_dense() ** 2 * lib.tensor(w)).sum().backward()
        res.append(logs + [_np(v.grad)])
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, atol=1e-13)


def test_repeat_interleave_checks_in_torchs_words():
    calls = [
        lambda L: L.repeat_interleave(L.tensor([[1, 2]])),
        lambda L: L.repeat_interleave(L.tensor([1, -2])),
        lambda L: L.arange(4).repeat_interleave(L.tensor([1, 2, 3])),
        lambda L: L.arange(4.0).repeat_interleave(L.tensor([1, 2, 3, 1]), output_size=5),
        lambda L: L.repeat_interleave(L.tensor([1.0, 2.0])),
        lambda L: L.arange(4).repeat_interleave(L.tensor([[2]])),
    ]
    for call in calls:
        with pytest.raises(Exception) as want:
            call(torch)
        with pytest.raises(type(want.value), match=str(want.value)[:40].replace("[", r"\[")
                           .replace("(", r"\(").replace(")", r"\)")):
            call(skiff)
    for call in (lambda L: L.repeat_interleave(L.tensor([2, 0, 1]), output_size=3),
                 lambda L: L.arange(4).repeat_interleave(L.tensor([2])),
                 lambda L: L.arange(6.0).reshape(2, 3).repeat_interleave(L.tensor([1, 0, 2]),
                                                                         dim=1)):
        np.testing.assert_array_equal(_np(call(skiff)), _np(call(torch)))
    assert str(skiff.repeat_interleave(skiff.tensor([1, 2])).dtype) == "int64"


def _clip_pool(T):
    nn, F = T.nn, T.nn.functional

    class AttentionPool2d(nn.Module):  # OpenAI CLIP's ModifiedResNet head, as it is written
        def __init__(self, spacial_dim, embed_dim, num_heads, output_dim=None):
            super().__init__()
            self.positional_embedding = nn.Parameter(
                T.randn(spacial_dim ** 2 + 1, embed_dim) / embed_dim ** 0.5)
            self.k_proj = nn.Linear(embed_dim, embed_dim)
            self.q_proj = nn.Linear(embed_dim, embed_dim)
            self.v_proj = nn.Linear(embed_dim, embed_dim)
            self.c_proj = nn.Linear(embed_dim, output_dim or embed_dim)
            self.num_heads = num_heads

        def forward(self, x):
            x = x.flatten(start_dim=2).permute(2, 0, 1)  # NCHW -> (HW)NC
            x = T.cat([x.mean(dim=0, keepdim=True), x], dim=0)  # (HW+1)NC
            x = x + self.positional_embedding[:, None, :].to(x.dtype)
            x, _ = F.multi_head_attention_forward(
                query=x[:1], key=x, value=x, embed_dim_to_check=x.shape[-1],
                num_heads=self.num_heads, q_proj_weight=self.q_proj.weight,
                k_proj_weight=self.k_proj.weight, v_proj_weight=self.v_proj.weight,
                in_proj_weight=None,
                in_proj_bias=T.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias]),
                bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0,
                out_proj_weight=self.c_proj.weight, out_proj_bias=self.c_proj.bias,
                use_separate_proj_weight=True, training=self.training, need_weights=False)
            return x.squeeze(0)

    return AttentionPool2d(3, 8, 2, 5)


def test_clip_attention_pool_by_the_functional_mha_trains_as_torchs():
    # skiff lacked F.multi_head_attention_forward and Tensor.flatten(start_dim=)
    x = _RNG.standard_normal((2, 8, 3, 3))
    _same_training(_clip_pool, lambda T, m: (m(T.tensor(x)) ** 2).mean())
    # the packed in_proj form, with bias_k/bias_v, a zero key, a padding mask and the weights
    q, kv = _RNG.standard_normal((3, 2, 8)), _RNG.standard_normal((4, 2, 8))
    w = [_RNG.standard_normal(s) for s in ((24, 8), (24,), (1, 1, 8), (1, 1, 8), (8, 8), (8,))]
    pad = np.array([[False, False, True, True], [False] * 4])
    res = []
    for lib in (torch, skiff):
        t = [lib.tensor(a) for a in w]
        out, weights = lib.nn.functional.multi_head_attention_forward(
            lib.tensor(q), lib.tensor(kv), lib.tensor(kv), 8, 2, t[0], t[1], t[2], t[3], True,
            0.0, t[4], t[5], key_padding_mask=lib.tensor(pad), average_attn_weights=False)
        res.append((_np(out), _np(weights)))
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, atol=1e-13)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 6, but got 8"):
        skiff.nn.functional.multi_head_attention_forward(
            skiff.tensor(q), skiff.tensor(kv), skiff.tensor(kv), 6, 2, *[None] * 6, None, None)


def test_sparse_softmax_is_reached_as_torch_sparse_softmax():
    """``torch.sparse.softmax`` / ``log_softmax`` spelt through ``skiff.sparse``."""
    import skiff.sparse
    from skiff.kernels.train.core import sparse_r37

    assert skiff.sparse.softmax is sparse_r37.softmax
    assert skiff.sparse.log_softmax is sparse_r37.log_softmax
