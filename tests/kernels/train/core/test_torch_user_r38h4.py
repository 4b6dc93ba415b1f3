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


ZERO_CASES = {  # gradients at zeros, where skiff gave nan (or raised) and torch a number
    "normalize_zero_row": lambda L, a, b: L.nn.functional.normalize(a, dim=1),
    "normalize_p1_dim0": lambda L, a, b: L.nn.functional.normalize(a, p=1, dim=0),
    "cosine_zero_row": lambda L, a, b: L.nn.functional.cosine_similarity(a, b, dim=1),
    "cosine_broadcast": lambda L, a, b: L.nn.functional.cosine_similarity(a[:, None], b[None],
                                                                          dim=-1),
    "pow_0": lambda L, a, b: a ** 0,
    "pow_tensor_exponent": lambda L, a, b: a.abs() ** b,
    "vander_at_0": lambda L, a, b: a[:, :1] ** L.arange(4, dtype=L.float64),
    "atan2_origin": lambda L, a, b: L.atan2(a, a * 0),
    "std_constant_row": lambda L, a, b: (a * 0 + b[:, :1]).std(dim=1),
    "norm_p0": lambda L, a, b: a.norm(p=0, dim=1),
    "norm_p_half": lambda L, a, b: a.norm(p=0.5, dim=1),
    "norm_p_minus1": lambda L, a, b: a.norm(p=-1, dim=1),
    "norm_minus_inf": lambda L, a, b: a.norm(p=float("-inf"), dim=1),
    "kl_log_target_grad": lambda L, a, b: L.nn.functional.kl_div(
        a.log_softmax(1), b.log_softmax(1), reduction="batchmean", log_target=True),
    "kl_target_grad": lambda L, a, b: L.nn.functional.kl_div(
        a.log_softmax(1), b.softmax(1), reduction="sum"),
}


@pytest.mark.parametrize("name", sorted(ZERO_CASES))
def test_gradients_at_zero_and_through_targets_are_torchs(name):
    r = np.random.default_rng(38)
    x, y = r.normal(size=(4, 5)), r.normal(size=(4, 5))
    x[1] = 0.0
    x[2, 3] = 0.0
    res = []
    for lib in (torch, skiff):
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        out = ZERO_CASES[name](lib, a, b)
        (out * lib.tensor(np.arange(1.0, out.numel() + 1).reshape(tuple(out.shape)))).sum()\
            .backward()
        res.append([out.detach().numpy()] + [t.grad.numpy() if t.grad is not None else
                                             np.zeros((4, 5)) for t in (a, b)])
    for u, v in zip(*res):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)


def test_dist_p0_counts_as_torchs():
    # skiff raised ZeroDivisionError (torch's own backward of it raises: values only)
    x, y = np.array([[0.0, 1.5, -2.0]]), np.array([[0.0, 1.0, -2.0]])
    assert float(skiff.dist(skiff.tensor(x), skiff.tensor(y), p=0)) == float(
        torch.dist(torch.tensor(x), torch.tensor(y), p=0)) == 1.0


def test_r_drop_symmetric_kl_trains_as_torchs():
    # R-Drop / mutual learning: KL between two outputs that both require grad
    r = np.random.default_rng(1)
    xs, losses = r.normal(size=(2, 8, 6)), []
    init = {}
    for lib in (torch, skiff):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(6, 16), lib.nn.Tanh(), lib.nn.Linear(16, 4)).double()
        if lib is torch:
            init.update({k: v.detach().numpy().copy() for k, v in m.state_dict().items()})
        else:
            m.load_state_dict({k: skiff.tensor(v) for k, v in init.items()})
        opt = lib.optim.SGD(m.parameters(), lr=0.5)
        run = []
        for _ in range(4):
            p, q = m(lib.tensor(xs[0])).log_softmax(-1), m(lib.tensor(xs[1])).log_softmax(-1)
            F = lib.nn.functional
            loss = 0.5 * (F.kl_div(p, q, reduction="batchmean", log_target=True)
                          + F.kl_div(q, p, reduction="batchmean", log_target=True))
            opt.zero_grad()
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-12)


@pytest.mark.parametrize("values", [[[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]], [[0.1, 0.1, 0.1, 5.0]],
                                    [[4.0, 1.0, 2.0]]])
def test_median_of_all_shares_a_ties_gradient_as_torchs(values):
    res = []
    for lib in (torch, skiff):
        t = lib.tensor(values, requires_grad=True)
        m = t.median()
        m.backward()
        res.append((m.item(), t.grad.numpy().tolist()))
    assert res[1] == res[0]
