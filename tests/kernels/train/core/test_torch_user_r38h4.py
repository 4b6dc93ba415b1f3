"""Round 38 (h4): what torch users' programs (a RealNVP flow, a GraphSAGE/GIN on batched
graphs, SimCLR's NT-Xent, a KL-annealed VAE, torch.func over a model with a MAML step, a
causal transformer LM with parametrizations and an MDN head; /work/round38/h4/p1-p5) met that
differed from torch 2.13."""

import numpy as np
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


def test_clamp_with_tensor_bounds_is_differentiable_in_them_as_torchs():
    # ``x.clamp(min=lower, max=upper)`` with learned bounds: skiff gave the bounds no gradient
    r = np.random.default_rng(38)
    x, b = r.normal(size=(5, 6)), r.normal(size=(5, 6))
    b[0, :3] = -5.0  # lo > hi there: the result is hi, hi takes the gradient
    lo, hi = b * 0.5, b + 1
    lo[1, :2] = hi[1, :2]  # lo == hi: below it no gradient at all (torch's)
    x[1, 0], x[1, 1] = lo[1, 0] - 1, lo[1, 1] + 1
    w = np.arange(30.0).reshape(5, 6)
    for kw in ({"min": 1, "max": 1}, {"min": 1}, {"max": 1}, {"min": 1, "row": 1}):
        res = []
        for lib in (torch, skiff):
            ts = [lib.tensor(v, requires_grad=True) for v in (x, lo, hi)]
            bounds = {k: (ts[1] if k == "min" else ts[2]) for k in ("min", "max") if k in kw}
            if "row" in kw:  # a bound broadcast over the rows
                bounds["max"] = ts[2][0]
            y = lib.clamp(ts[0], **bounds)
            (y * lib.tensor(w)).sum().backward()
            res.append([y.detach().numpy()] + [t.grad.numpy() if t.grad is not None else
                                               np.zeros_like(x) for t in ts])
        for u, v in zip(*res):
            np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("eq,shapes", [
    ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("bii->bi", [(2, 3, 3)]),
    ("iij,jk->ik", [(3, 3, 2), (2, 4)]), ("ij,ii->j", [(3, 2), (3, 3)]),
    ("iji->j", [(3, 2, 3)]), ("...ii->...i", [(2, 3, 3)]), ("iii->", [(3, 3, 3)])])
def test_einsum_gradient_through_a_repeated_letter_is_torchs(eq, shapes):
    # a diagonal or trace in einsum ('ii->i', 'bii->bi'): skiff raised NotImplementedError
    r = np.random.default_rng(38)
    xs = [r.normal(size=s) for s in shapes]
    res = []
    for lib in (torch, skiff):
        ts = [lib.tensor(x, requires_grad=True) for x in xs]
        y = lib.einsum(eq, *ts)
        w = np.arange(1.0, y.numel() + 1).reshape(tuple(y.shape))
        (y * lib.tensor(w)).sum().backward()
        res.append([y.detach().numpy()] + [t.grad.numpy() for t in ts])
    for u, v in zip(*res):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kw", [{}, {"offset": 1}, {"offset": -2},
                                {"offset": 1, "dim1": 0, "dim2": 2}, {"dim1": -1, "dim2": 0},
                                {"offset": -1, "dim1": 3, "dim2": 1}])
def test_diag_embed_offsets_and_dims_are_torchs(kw):
    # skiff refused every offset and placement but the default
    x = np.random.default_rng(38).normal(size=(2, 3, 4))
    res = []
    for lib in (torch, skiff):
        t = lib.tensor(x, requires_grad=True)
        y = lib.diag_embed(t, **kw)
        (y * lib.tensor(np.arange(1.0, y.numel() + 1).reshape(tuple(y.shape)))).sum().backward()
        res.append((y.detach().numpy(), t.grad.numpy()))
    for u, v in zip(*res):
        np.testing.assert_array_equal(u, v)
    with pytest.raises(RuntimeError, match="cannot be identical"):
        skiff.diag_embed(skiff.ones(2, 3), dim1=1, dim2=1)


@pytest.mark.filterwarnings("ignore:index_reduce")  # torch's beta warning
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_is_torchs(reduce, include_self):
    r = np.random.default_rng(38)
    x0, src, idx = r.normal(size=(3, 5)), r.normal(size=(4, 5)), [0, 2, 0, 1]
    res = []
    for lib in (torch, skiff):
        x, s = lib.tensor(x0, requires_grad=True), lib.tensor(src, requires_grad=True)
        y = x.clone().index_reduce_(0, lib.tensor(idx), s, reduce, include_self=include_self)
        y2 = x.index_reduce(0, lib.tensor(idx), s, reduce, include_self=include_self)
        ((y + y2) * lib.tensor(np.arange(1.0, 16).reshape(3, 5))).sum().backward()
        res.append([y.detach().numpy(), x.grad.numpy(), s.grad.numpy()])
    for u, v in zip(*res):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)
