"""Round 29: NAdam's ``mu_product`` at torch's scalar precision: float64 under a float64
default dtype (it was float32 always, a 1e-10 drift per step against torch there), float32
otherwise; trajectories against torch 2.13 in both."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff


@pytest.mark.parametrize("default", ["float64", "float32"])
def test_nadam_follows_torch_under_each_default_dtype(default):
    w0 = np.random.default_rng(2910).standard_normal(6)
    res = []
    for lib in (skiff, torch):
        before = lib.get_default_dtype()
        lib.set_default_dtype(getattr(lib, default))
        try:
            p = lib.nn.Parameter(lib.tensor(w0, dtype=lib.float64))
            opt = lib.optim.NAdam([p], lr=5e-3, momentum_decay=8e-3)
            out = []
            for _ in range(6):
                opt.zero_grad()
                (p.sin() * lib.tensor(np.arange(6.0))).sum().backward()
                opt.step()
                out.append(np.array(p.detach().numpy() if lib is torch else np.asarray(p)))
        finally:
            lib.set_default_dtype(before)
        res.append(out)
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)
