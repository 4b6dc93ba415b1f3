"""Round 28: ``nn.MultiheadAttention(kdim=, vdim=)`` (torch's separate ``q/k/v_proj_weight``,
cross-attention over keys and values of other widths), a 3-D ``attn_mask`` (N * heads, L, S)
and a float64 float mask kept float64, against torch 2.13 in float64 (outputs, weights, every
gradient)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(291)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


@pytest.mark.parametrize("kw,mask", [({"kdim": 5, "vdim": 3}, None),
                                     ({"kdim": 5, "vdim": 5, "bias": False}, "3d"),
                                     ({}, "3d"), ({}, "float")])
def test_mha_against_torch(kw, mask):
    E, h, N, L, S = 8, 2, 3, 4, 6
    kd, vd = kw.get("kdim", E), kw.get("vdim", E)
    q = RNG.standard_normal((N, L, E))
    k = RNG.standard_normal((N, S, kd))
    v = RNG.standard_normal((N, S, vd))
    am = None
    if mask == "3d":
        am = RNG.random((N * h, L, S)) < 0.3
        am[..., 0] = False  # every row keeps one key
    elif mask == "float":
        am = RNG.standard_normal((L, S)) * 0.37
    tm = torch.nn.MultiheadAttention(E, h, batch_first=True, **kw).double()
    sm = skiff.nn.MultiheadAttention(E, h, batch_first=True, **kw).double()
    sd = tm.state_dict()
    assert sorted(sd) == sorted(sm.state_dict())
    sm.load_state_dict({k_: skiff.tensor(v_.numpy()) for k_, v_ in sd.items()})
    res = []
    for lib, m in ((skiff, sm), (torch, tm)):
        ts = [lib.tensor(a, requires_grad=True) for a in (q, k, v)]
        out, w = m(*ts, attn_mask=None if am is None else lib.tensor(am))
        (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))).sum() \
            .backward()
        res.append([out, w] + [t.grad for t in ts]
                   + [p.grad for _, p in sorted(m.named_parameters())])
    for a, b in zip(*res):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-12)


def test_add_bias_kv_is_supported_since_round_33():
    """Refused before round 33; compared with torch in test_torch_user_r33.py."""
    m = skiff.nn.MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True)
    assert tuple(m.bias_k.shape) == (1, 1, 4) and m.add_zero_attn
