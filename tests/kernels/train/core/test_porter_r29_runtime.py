"""Round 29: a torch script's first lines run under skiff (``torch.compile``, ``torch.jit``,
``torch.backends`` flags, ``torch.func`` as an attribute): the compiled model's outputs and
gradients equal torch's eager run in float64 (what ``compile`` must not change)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff


def _pair():
    t = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.GELU(), torch.nn.Linear(5, 2))
    t = t.double()
    s = skiff.nn.Sequential(skiff.nn.Linear(4, 5), skiff.nn.GELU(), skiff.nn.Linear(5, 2))
    s = s.double()
    s.load_state_dict({k: skiff.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return s, t


def test_compile_and_jit_leave_the_model_as_torch_eager():
    skiff.backends.cudnn.benchmark = True
    skiff.backends.cuda.matmul.allow_tf32 = True
    assert skiff.backends.mps.is_available() is False
    s, t = _pair()
    cs = skiff.compile(s, mode="max-autotune")
    js = skiff.jit.script(s)
    x = np.random.default_rng(2906).standard_normal((3, 4))

    @skiff.compile(fullgraph=True)
    def loss_fn(m, x):
        return (m(x) ** 2).sum()

    ls = loss_fn(cs, skiff.tensor(x)) + (js(skiff.tensor(x)) * 0.5).sum()
    ls.backward()
    lt = (t(torch.tensor(x)) ** 2).sum() + (t(torch.tensor(x)) * 0.5).sum()
    lt.backward()
    assert ls.item() == pytest.approx(lt.item(), rel=1e-13)
    for (n, p), (_, q) in zip(s.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(np.asarray(p.grad), q.grad.numpy(), rtol=1e-12, err_msg=n)


def test_jit_save_says_what_to_do_and_func_is_an_attribute():
    with pytest.raises(NotImplementedError, match="state_dict"):
        skiff.jit.save(skiff.nn.Linear(2, 2), "m.pt")
    x = np.arange(6.0).reshape(2, 3)
    a = skiff.func.vmap(lambda r: (r * r).sum())(skiff.tensor(x))
    b = torch.func.vmap(lambda r: (r * r).sum())(torch.tensor(x))
    np.testing.assert_allclose(np.asarray(a), b.numpy())
