"""Where skiff's defaults and meanings are torch's (float64, against torch 2.x): comparisons
and logical operators, ``scaled_dot_product_attention``, ``layer_norm``, ``GELU``,
``max``/``min``, ``var``/``std``, numpy and torch interop, BatchNorm state dicts, class-id
checks, cross-entropy's (N, C, d1, ...) layout, frozen parameters in optimizers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import skiff
from skiff.kernels.train.core import nn, optim
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.tensor import Tensor

TOL = {"rtol": 1e-9, "atol": 1e-11}
rng = np.random.default_rng(0)


def S(a, grad=False):
    return Tensor(a, dtype=np.float64, requires_grad=grad)


def T(a, grad=False):
    return torch.tensor(a, requires_grad=grad)


def same_value_and_grad(ours, theirs, *arrays):
    """``ours(*tensors)`` and ``theirs(*tensors)`` equal in value and in each input's
    gradient under a random upstream gradient."""
    xs, xt = [S(a, True) for a in arrays], [T(a, True) for a in arrays]
    got, want = ours(*xs), theirs(*xt)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **TOL)
    w = np.random.default_rng(1).standard_normal(tuple(want.shape))
    (got * S(w)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    for a, b in zip(xs, xt):
        np.testing.assert_allclose(a.grad, b.grad.numpy(), **TOL)


# ---- 1: == and != elementwise, & | ^ ~ ------------------------------------------------------
def test_equality_is_elementwise_and_tensors_stay_hashable():
    a, b = np.array([1, 0, 2, 2]), np.array([1, 1, 2, 0])
    for op in (lambda x, y: x == y, lambda x, y: x != y, lambda x, y: x == 2,
               lambda x, y: 0 != x):
        np.testing.assert_array_equal(op(Tensor(a), Tensor(b)).numpy(), op(T(a), T(b)).numpy())
    p, q = Tensor(a) > 0, Tensor(b) > 0
    pt, qt = T(a) > 0, T(b) > 0
    for op in (lambda x, y: x & y, lambda x, y: x | y, lambda x, y: x ^ y, lambda x, y: ~x,
               lambda x, y: (x == y) & ~y, lambda x, y: x & True):
        got = op(p, q)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got.numpy(), op(pt, qt).numpy())
    np.testing.assert_array_equal((Tensor(a) & Tensor(b)).numpy(), (T(a) & T(b)).numpy())
    np.testing.assert_array_equal((~Tensor(a)).numpy(), (~T(a)).numpy())
    with pytest.raises(TypeError, match="bool or integer"):
        ~S([1.0])
    x = S([1.0, 2.0], grad=True)
    assert not (x == x).requires_grad
    y = S([1.0, 2.0])
    assert len({x, y}) == 2 and {x: 1, y: 2}[y] == 2  # keyed by identity
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x == y)
    acc = float((Tensor([1, 0, 1]) == Tensor([1, 0, 0])).float().mean())
    assert acc == pytest.approx(2 / 3)


def test_optimizers_and_modules_do_not_compare_tensors_with_equals():
    m = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3), nn.Linear(3, 3))
    m[2].weight = m[0].weight  # tied: found by identity
    opt = optim.AdamW(m.parameters(), lr=0.1)
    x = S(rng.standard_normal((4, 3)))
    m.to("float64")
    for _ in range(2):
        opt.zero_grad()
        m(x).sum().backward()
        opt.step()
    assert len(list(m.parameters())) == 5
    m.load_state_dict(m.state_dict())
    optim.SGD(m.parameters(), lr=0.1, momentum=0.9).step()


# ---- 2: scaled_dot_product_attention ---------------------------------------------------------
Q, K, V = (rng.standard_normal((2, 2, 4, 3)) for _ in range(3))
K6, V6 = rng.standard_normal((2, 2, 6, 3)), rng.standard_normal((2, 2, 6, 3))
BOOL = rng.random((4, 6)) < 0.7
BOOL[:, 0] = True  # every query attends to something
FLOAT = rng.standard_normal((2, 1, 4, 6))


@pytest.mark.parametrize("kw", [
    {}, {"is_causal": True}, {"scale": 0.3}, {"attn_mask": BOOL}, {"attn_mask": FLOAT},
    {"is_causal": True, "six": True},
], ids=["default", "causal", "scale", "bool-mask", "float-mask", "causal-T<S"])
def test_sdpa_equals_torch(kw):
    kw = dict(kw)
    six = kw.pop("six", False) or "attn_mask" in kw
    tkw = {k: (torch.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    same_value_and_grad(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kw),
                        lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, **tkw),
                        Q, K6 if six else K, V6 if six else V)


def test_sdpa_old_causal_keyword_and_dropout():
    # skiff's causal=True: the last T of S positions (a cache), bottom-right aligned
    got = F.scaled_dot_product_attention(S(Q), S(K6), S(V6), causal=True).numpy()
    mask = torch.ones(4, 6, dtype=torch.bool).tril(diagonal=2)
    want = TF.scaled_dot_product_attention(T(Q), T(K6), T(V6), attn_mask=mask).numpy()
    np.testing.assert_allclose(got, want, **TOL)
    with pytest.raises(RuntimeError, match="should not be set when is_causal=True"):
        F.scaled_dot_product_attention(S(Q), S(K), S(V), attn_mask=BOOL[:, :4], is_causal=True)
    x = S(np.ones((1, 1, 64, 8)), grad=True)
    out = F.scaled_dot_product_attention(x, x, x, dropout_p=0.5)
    assert out.shape == (1, 1, 64, 8) and 0.6 < float(out.mean()) < 1.4
    out.sum().backward()
    assert x.grad.shape == x.shape


# ---- 3: layer_norm, LayerNorm ----------------------------------------------------------------
def test_layer_norm_takes_the_normalized_shape_second():
    x = rng.standard_normal((3, 4, 5))
    w, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    same_value_and_grad(lambda x: F.layer_norm(x, (5,)), lambda x: TF.layer_norm(x, (5,)), x)
    same_value_and_grad(lambda x, w, b: F.layer_norm(x, [4, 5], w, b, eps=1e-3),
                        lambda x, w, b: TF.layer_norm(x, [4, 5], w, b, eps=1e-3), x, w, b)
    same_value_and_grad(lambda x, w: F.layer_norm(x, 5, w[0]),
                        lambda x, w: TF.layer_norm(x, (5,), w[0]), x, w)
    with pytest.raises(TypeError, match="normalized_shape"):
        F.layer_norm(S(x), S(w[0]))
    with pytest.raises(ValueError, match="ending in"):
        F.layer_norm(S(x), (4,))


@pytest.mark.parametrize("kw", [{}, {"elementwise_affine": False}, {"bias": False}])
def test_layer_norm_module_shapes_and_state_dict(kw):
    ours, theirs = nn.LayerNorm([4, 5], **kw, dtype=np.float64), torch.nn.LayerNorm([4, 5], **kw)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    if ours.weight is not None:
        theirs = theirs.double()
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(rng.standard_normal((4, 5))))
        ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = rng.standard_normal((2, 4, 5))
    np.testing.assert_allclose(ours(S(x)).numpy(), theirs.double()(T(x)).detach().numpy(), **TOL)


# ---- 4: GELU exact by default ----------------------------------------------------------------
def test_gelu_default_is_exact_and_tanh_on_request():
    x = rng.standard_normal((3, 5)) * 3
    same_value_and_grad(lambda x: nn.GELU()(x), lambda x: torch.nn.GELU()(x), x)
    same_value_and_grad(F.gelu, TF.gelu, x)
    same_value_and_grad(lambda x: F.gelu(x, approximate="tanh"),
                        lambda x: TF.gelu(x, approximate="tanh"), x)


def test_models_that_trained_with_tanh_gelu_keep_it():
    from skiff.kernels.train.models.mlp import MLP
    from skiff.kernels.train.parallel.moe import Expert

    assert [m.approximate for m in MLP(2, 2, activation="gelu").modules()
            if isinstance(m, nn.GELU)] == ["tanh", "tanh"]
    e = Expert(4, 8)
    x = Tensor(rng.standard_normal((3, 4)))
    want = e.proj(F.gelu(e.fc(x), approximate="tanh")).numpy()
    np.testing.assert_array_equal(e(x).numpy(), want)


# ---- 5, 6: max/min, var/std ------------------------------------------------------------------
M = rng.standard_normal((3, 4, 5))
TIES = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, 2.0]])


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("x", [M, TIES], ids=["random", "ties"])
def test_max_min_as_torch(name, x):
    same_value_and_grad(lambda a: getattr(a, name)(), lambda a: getattr(a, name)(), x)
    for args in [(1,), (-1, True), (0,)]:
        same_value_and_grad(lambda a, args=args: getattr(a, name)(*args)[0],
                            lambda a, args=args: getattr(a, name)(*args)[0], x)
        got, want = getattr(S(x), name)(*args), getattr(T(x), name)(*args)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        assert got.values.shape == tuple(want.values.shape)
    got = getattr(S(x), name)(dim=1, keepdim=True)
    np.testing.assert_array_equal(got.indices.numpy(), getattr(T(x), name)(1, True)[1].numpy())
    other = np.round(x[..., ::-1].copy())  # ties with x in places
    same_value_and_grad(lambda a, b: getattr(a, name)(b), lambda a, b: getattr(a, name)(b),
                        x, other)
    # numpy's keywords: the values alone
    np.testing.assert_array_equal(getattr(S(x), name)(axis=1).numpy(),
                                  getattr(np, name)(x, axis=1))


@pytest.mark.parametrize("fn", ["var", "std"])
def test_var_std_unbiased_by_default(fn):
    for args, kw in [((), {}), ((1,), {}), ((1, False), {}), ((2,), {"keepdim": True}),
                     (((0, 2),), {"correction": 0}), ((), {"unbiased": False})]:
        same_value_and_grad(lambda a, args=args, kw=kw: getattr(a, fn)(*args, **kw),
                            lambda a, args=args, kw=kw: getattr(a, fn)(*args, **kw), M)
    np.testing.assert_allclose(getattr(S(M), fn)(axis=1, ddof=0).numpy(),
                               getattr(np, fn)(M, axis=1), **TOL)


# ---- 7: numpy and torch interop --------------------------------------------------------------
def test_numpy_and_torch_interop():
    pred = skiff.tensor([1, 0, 1])
    assert np.asarray(pred).dtype == np.int64
    assert np.mean(np.asarray(pred) == np.array([1, 0, 0])) == pytest.approx(2 / 3)
    assert np.asarray(S([1.5]), dtype=np.float32).dtype == np.float32
    loss = S(0.123456)
    assert f"{loss:.3f}" == "0.123" and f"{S([2.5]):>5}" == "  2.5"
    assert float(loss) == 0.123456 and int(skiff.tensor(3)) == 3 and bool(skiff.tensor(1))
    t = torch.arange(6.0, requires_grad=True).reshape(2, 3) * 2
    s = skiff.tensor(t)
    assert s.dtype == np.float32 and s.shape == (2, 3)
    np.testing.assert_array_equal(s.numpy(), t.detach().numpy())
    assert skiff.tensor(torch.tensor([1, 2])).dtype == np.int64
    b = skiff.tensor(torch.ones(2, dtype=torch.bfloat16), dtype="float32")
    np.testing.assert_array_equal(b.numpy(), [1.0, 1.0])


# ---- 8: BatchNorm state dicts both ways ------------------------------------------------------
@pytest.mark.parametrize("ours,theirs,shape", [
    (lambda: nn.BatchNorm1d(3), lambda: torch.nn.BatchNorm1d(3), (5, 3)),
    (lambda: nn.BatchNorm2d(3), lambda: torch.nn.BatchNorm2d(3), (4, 3, 2, 2)),
])
def test_batch_norm_state_dicts_round_trip(ours, theirs, shape):
    a, b = nn.Sequential(ours()), torch.nn.Sequential(theirs())
    for _ in range(3):
        x = rng.standard_normal(shape)
        a(Tensor(x, dtype=np.float32))
        b(torch.tensor(x, dtype=torch.float32))
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb) and int(sa["0.num_batches_tracked"]) == 3
    for k in sb:
        np.testing.assert_allclose(sa[k], sb[k].numpy(), rtol=1e-5, atol=1e-6)
    c = nn.Sequential(ours())
    c.load_state_dict(sb)  # strict: torch's keys all known
    assert int(c[0].num_batches_tracked) == 3
    c.eval()
    b.eval()
    x = rng.standard_normal(shape)
    np.testing.assert_allclose(c(Tensor(x)).numpy(), b(torch.tensor(x, dtype=torch.float32))
                               .detach().numpy(), rtol=1e-5, atol=1e-5)
    d = theirs()
    d.load_state_dict({k[2:]: torch.from_numpy(np.asarray(v)) for k, v in sa.items()})
    old = {k: v for k, v in sa.items() if "num_batches" not in k}  # an older skiff state
    c.load_state_dict(old)


# ---- 9: class ids out of range ---------------------------------------------------------------
def test_out_of_range_class_ids_raise_index_error():
    logits = S([[2.0, 0.5, -1.0], [0.1, 0.2, 0.3]])
    for bad in ([-1, 0], [0, 3]):
        with pytest.raises(IndexError, match="out of range"):
            F.cross_entropy(logits, Tensor(bad))
        with pytest.raises(IndexError, match="out of range"):
            F.nll_loss(logits.log_softmax(1), Tensor(bad))
        with pytest.raises(IndexError, match="out of range"):
            nn.Embedding(3, 2)(Tensor(bad))
    with pytest.raises(IndexError, match="out of range"):
        F.cross_entropy(logits, Tensor([-1, 1]), weight=np.ones(3), ignore_index=1)
    with pytest.raises(IndexError, match="out of range"):
        F.one_hot(Tensor([0, -1]), 3)
    with pytest.raises(IndexError, match="out of range"):
        F.one_hot(Tensor([0, 3]), 3)
    for ignore in (-100, -1, 1):
        t = np.array([0, ignore])
        for ours, theirs in ((F.cross_entropy, TF.cross_entropy), (F.nll_loss, TF.nll_loss)):
            got = ours(logits, Tensor(t), ignore_index=ignore).item()
            want = theirs(T(logits.numpy()), torch.tensor(t), ignore_index=ignore).item()
            assert got == pytest.approx(want, rel=1e-12)


# ---- 10: cross-entropy with the classes on axis 1 -------------------------------------------
@pytest.mark.parametrize("shape", [(2, 4, 4), (3, 5, 2, 3), (5,)])
@pytest.mark.parametrize("kw", [{}, {"reduction": "none"}, {"reduction": "sum"},
                                {"label_smoothing": 0.1}, {"weight": "w"}])
def test_cross_entropy_classes_on_axis_one(shape, kw):
    c = shape[1] if len(shape) > 1 else shape[0]
    tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    y = np.random.default_rng(2).integers(0, c, tshape)
    if len(shape) > 1:
        y.flat[0] = -100
    x = np.random.default_rng(3).standard_normal(shape)
    w = np.linspace(0.5, 2.0, c)
    ours = {k: (w if v == "w" else v) for k, v in kw.items()}
    theirs = {k: (torch.tensor(w) if v == "w" else v) for k, v in kw.items()}
    same_value_and_grad(lambda a: F.cross_entropy(a, Tensor(y), **ours),
                        lambda a: TF.cross_entropy(a, torch.tensor(y), **theirs), x)
    if "label_smoothing" not in kw:
        same_value_and_grad(lambda a: F.nll_loss(a.log_softmax(min(1, a.ndim - 1)), Tensor(y),
                                                 **ours),
                            lambda a: TF.nll_loss(a.log_softmax(min(1, a.ndim - 1)),
                                                  torch.tensor(y), **theirs), x)
    crit = nn.CrossEntropyLoss(ours.pop("weight", None), **ours)
    tcrit = torch.nn.CrossEntropyLoss(theirs.pop("weight", None), **theirs)
    np.testing.assert_allclose(crit(S(x), Tensor(y)).numpy(),
                               tcrit(T(x), torch.tensor(y)).numpy(), **TOL)


def test_language_model_losses_flatten_their_logits():
    from skiff.kernels.train.models.gpt import GPT, GPTConfig

    model = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8))
    x = np.random.default_rng(4).integers(0, 11, (2, 6))
    y = np.random.default_rng(5).integers(0, 11, (2, 6))
    logits = model(x)
    want = TF.cross_entropy(torch.tensor(logits.numpy().reshape(12, 11)),
                            torch.tensor(y.reshape(12))).item()
    assert model.loss((x, y)).item() == pytest.approx(want, rel=1e-5)


# ---- 11: frozen parameters -------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda p: optim.AdamW(p, lr=0.1),
                                  lambda p: optim.SGD(p, lr=0.1, momentum=0.9)])
def test_optimizers_keep_frozen_parameters_and_skip_them(make):
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    m[0].weight.requires_grad_(False)
    frozen = m[0].weight._data.copy()
    opt = make(m.parameters())
    assert sum(len(g["params"]) for g in opt.param_groups) == 4  # as torch keeps them
    m(Tensor(rng.standard_normal((3, 2)))).sum().backward()
    assert m[0].weight.grad is None
    before = m[1].weight._data.copy()
    opt.step()
    np.testing.assert_array_equal(m[0].weight.data, frozen)
    assert not np.array_equal(m[1].weight.data, before)
    opt.load_state_dict(opt.state_dict())
    with pytest.raises(ValueError, match="leaf"):
        make([m[1].weight * 2])
    with pytest.raises(TypeError, match="takes tensors"):
        make([np.zeros(2)])
