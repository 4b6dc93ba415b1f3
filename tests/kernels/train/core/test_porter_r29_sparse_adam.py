"""Round 29: ``optim.SparseAdam`` against torch 2.13's (sparse embedding gradients) in
float64: the tables after every step, rows never looked up left alone, repeated ids,
``maximize``, two parameter groups."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(2905)


def _run(lib, w0, ids_per_step, targets, kw, groups):
    embs = [lib.nn.Embedding(w.shape[0], w.shape[1], sparse=True) for w in w0]
    for e, w in zip(embs, w0):
        e.weight = lib.nn.Parameter(lib.tensor(w))
    if groups:
        params = [{"params": [embs[0].weight]}, {"params": [embs[1].weight], "lr": 0.03}]
    else:
        params = [e.weight for e in embs]
    opt = lib.optim.SparseAdam(params, lr=0.1, betas=(0.8, 0.99), **kw)
    hist = []
    for ids, t in zip(ids_per_step, targets):
        opt.zero_grad()
        a = embs[0](lib.tensor(ids[0]))
        b = embs[1](lib.tensor(ids[1]))
        loss = ((a * b).sum(1) - lib.tensor(t)).pow(2).mean() + a.pow(3).mean()
        loss.backward()
        opt.step()
        hist.append([e.weight.detach().clone() for e in embs])
    return hist


@pytest.mark.parametrize("kw,groups", [({}, False), ({"maximize": True, "eps": 1e-6}, False),
                                       ({}, True)])
def test_sparse_adam_equals_torch(kw, groups):
    w0 = [RNG.standard_normal((9, 4)), RNG.standard_normal((7, 4))]
    ids = [(RNG.integers(0, 6, 5), RNG.integers(0, 7, 5)) for _ in range(6)]  # rows 6-8 idle
    ids[2] = (np.array([1, 1, 1, 2, 2]), ids[2][1])  # repeated ids add up
    targets = [RNG.standard_normal(5) for _ in range(6)]
    hs = _run(skiff, w0, ids, targets, kw, groups)
    ht = _run(torch, w0, ids, targets, kw, groups)
    for a_step, b_step in zip(hs, ht):
        for a, b in zip(a_step, b_step):
            np.testing.assert_allclose(np.asarray(a), b.numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(np.asarray(hs[-1][0])[6:], w0[0][6:])


def test_sparse_adam_refuses_bad_betas():
    with pytest.raises(ValueError, match="beta"):
        skiff.optim.SparseAdam([skiff.nn.Parameter(skiff.zeros(2, 2))], betas=(0.9, 1.0))
