"""Round 38 (h4): what torch users' programs (a RealNVP flow, a GraphSAGE/GIN on batched
graphs, SimCLR's NT-Xent, a KL-annealed VAE, torch.func over a model with a MAML step, a
causal transformer LM with parametrizations and an MDN head; /work/round38/h4/p1-p5) met that
differed from torch 2.13."""

import pytest

import skiff

torch = pytest.importorskip("torch")


def test_requires_grad_on_a_computed_tensor_is_torchs():
    # ``p0 = {k: v.clone().requires_grad_(True) ...}`` (MAML ports): a no-op where the tensor
    # already requires grad; ``requires_grad_(False)`` refused with torch's words
    for lib in (torch, skiff):
        a = lib.ones(2, requires_grad=True)
        b = a * 2
        assert b.requires_grad_(True) is b and b.requires_grad and not b.is_leaf
        b.sum().backward()
        assert a.grad.tolist() == [2.0, 2.0]
        with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
            (a * 2).requires_grad_(False)
