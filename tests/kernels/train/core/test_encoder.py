"""MultiheadAttention and TransformerEncoder(Layer) against torch's: a torch state_dict loads
as it is, and outputs, attention weights and every gradient agree in float64, with padding
masks, attention masks and causal masks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skiff.kernels.train.core import nn
from skiff.kernels.train.core.tensor import Tensor

TOL = {"rtol": 1e-9, "atol": 1e-11}


def _load(ours, theirs):
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def _compare(m, t, run_ours, run_theirs, x):
    xs = Tensor(x, requires_grad=True, dtype=np.float64)
    xt = torch.tensor(x, requires_grad=True)
    got, want = run_ours(xs), run_theirs(xt)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **TOL)
    (got * got).sum().backward()
    (want * want).sum().backward()
    np.testing.assert_allclose(xs.grad, xt.grad.numpy(), **TOL)
    for (name, p), tp in zip(m.named_parameters(), t.parameters()):
        np.testing.assert_allclose(p.grad, tp.grad.numpy(), err_msg=name, **TOL)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "padding", "attn-bool", "attn-float", "causal"])
def test_multihead_attention_equals_torch(batch_first, masks):
    torch.manual_seed(0)
    t = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first).double().eval()
    m = nn.MultiheadAttention(8, 2, batch_first=batch_first, dtype=np.float64)
    _load(m, t)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 8))  # (L, N, E) or (N, L, E)
    n, length = (3, 5) if batch_first else (5, 3)
    kw_s, kw_t = {}, {}
    if masks == "padding":
        pad = np.zeros((n, length), bool)
        pad[0, -1] = pad[1, -2:] = True
        kw_s, kw_t = {"key_padding_mask": pad}, {"key_padding_mask": torch.tensor(pad)}
    elif masks.startswith("attn"):
        am = rng.random((length, length)) < 0.3
        np.fill_diagonal(am, False)
        am = am if masks == "attn-bool" else np.where(am, -2.0, 0.5)
        kw_s, kw_t = {"attn_mask": am}, {"attn_mask": torch.tensor(am)}
    elif masks == "causal":
        causal = np.triu(np.ones((length, length), bool), 1)
        kw_s = {"is_causal": True}
        kw_t = {"attn_mask": torch.tensor(causal), "is_causal": True}
    xs = Tensor(x, dtype=np.float64)
    _, w = m(xs, xs, xs, **kw_s)
    _, wt = t(torch.tensor(x), torch.tensor(x), torch.tensor(x), **kw_t)
    np.testing.assert_allclose(w.numpy(), wt.detach().numpy(), **TOL)
    _compare(m, t, lambda v: m(v, v, v, need_weights=False, **kw_s)[0],
             lambda v: t(v, v, v, need_weights=False, **kw_t)[0], x)


@pytest.mark.parametrize("kw", [{}, {"norm_first": True, "activation": "gelu"},
                                {"batch_first": True}])
def test_transformer_encoder_equals_torch(kw):
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kw)
    t = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8),
                                    enable_nested_tensor=False).double().eval()
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                       dtype=np.float64, **kw)
    m = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8, dtype=np.float64))
    _load(m, t)
    x = np.random.default_rng(2).standard_normal((4, 3, 8))
    pad = np.zeros((3, 4) if not kw.get("batch_first") else (4, 3), bool)
    pad[1, -1] = True
    _compare(m, t, lambda v: m(v, src_key_padding_mask=pad),
             lambda v: t(v, src_key_padding_mask=torch.tensor(pad)), x)


def test_bad_masks_are_named():
    m = nn.MultiheadAttention(4, 2)
    x = Tensor(np.zeros((3, 2, 4), np.float32))
    with pytest.raises(AssertionError,
                       match=r"key_padding_mask must have shape \(N, S\) = \(2, 3\)"):
        m(x, x, x, key_padding_mask=np.zeros((3, 2), bool))
    with pytest.raises(ValueError, match="not divisible by num_heads"):
        nn.MultiheadAttention(5, 2)
