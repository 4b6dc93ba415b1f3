"""Bugs found while reviewing the GPU paths that also bite the plain-xp reference (CPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skiff.kernels.train.core import packed_attention as PA
from skiff.kernels.train.core.tensor import Tensor


@pytest.mark.parametrize("heads", [1, 2])
def test_packed_attention_leaves_inputs_alone_and_matches_torch(heads):
    """With one head the (T, H, D) -> (H, T, D) transpose is already contiguous; scaling it
    in place used to scale the caller's q (and the q saved for backward)."""
    rng = np.random.default_rng(0)
    lens, d = [3, 5], 4
    total = sum(lens)
    cu = np.concatenate([[0], np.cumsum(lens)])
    arrs = [rng.standard_normal((total, heads, d)) for _ in range(3)]
    g = rng.standard_normal((total, heads, d))
    before = [a.copy() for a in arrs]
    q, k, v = (Tensor(a, dtype="float64", requires_grad=True) for a in arrs)
    o = PA.packed_attention(q, k, v, cu)
    o.backward(g)
    for a, b in zip(arrs, before):
        np.testing.assert_array_equal(a, b)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in arrs)
    outs = []
    for s in range(len(lens)):
        sl = slice(cu[s], cu[s + 1])
        x = [t[sl].transpose(0, 1) for t in (tq, tk, tv)]  # (H, L, D)
        outs.append(torch.nn.functional.scaled_dot_product_attention(*x, is_causal=True)
                    .transpose(0, 1))
    to = torch.cat(outs)
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(o.numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    for mine, ref in ((q, tq), (k, tk), (v, tv)):
        np.testing.assert_allclose(np.asarray(mine.grad), ref.grad.numpy(), rtol=1e-9,
                                   atol=1e-11)
