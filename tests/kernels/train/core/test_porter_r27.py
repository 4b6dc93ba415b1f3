"""Round 27, a torch porter's leftovers (each against torch 2.13 in float64, values and
gradients): ``set_default_dtype(float64)`` (creation functions, Python numbers, new layers),
``nn.Parameter`` of a numpy float64 array, ``Tensor.norm`` at zero (torch's zero gradient, and
its double backward away from zero), tensor hooks in the ``create_graph`` pass (and on a
tensor that is gone), ``nn.EmbeddingBag`` / ``F.embedding_bag``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(27)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


# ---- set_default_dtype ------------------------------------------------------------------------
@pytest.fixture
def float64_default():
    skiff.set_default_dtype(skiff.float64)
    torch.set_default_dtype(torch.float64)
    yield
    skiff.set_default_dtype(skiff.float32)
    torch.set_default_dtype(torch.float32)


def test_default_dtype_float64_creation(float64_default):
    made = {
        "tensor": (skiff.tensor([1.5, 2.0]), torch.tensor([1.5, 2.0])),
        "zeros": (skiff.zeros(2, 3), torch.zeros(2, 3)),
        "ones": (skiff.ones(2), torch.ones(2)),
        "full": (skiff.full((2,), 0.1), torch.full((2,), 0.1)),
        "randn": (skiff.randn(3), torch.randn(3)),
        "rand": (skiff.rand(3), torch.rand(3)),
        "arange": (skiff.arange(0.0, 1.0, 0.25), torch.arange(0.0, 1.0, 0.25)),
        "linspace": (skiff.linspace(0, 1, 5), torch.linspace(0, 1, 5)),
        "eye": (skiff.eye(2), torch.eye(2)),
        "int / int": (skiff.tensor([1, 2]) / skiff.tensor([3, 3]),
                      torch.tensor([1, 2]) / torch.tensor([3, 3])),
        "int * float": (skiff.tensor([1, 2]) * 0.1, torch.tensor([1, 2]) * 0.1),
        "exp(int)": (skiff.tensor([1, 2]).exp(), torch.tensor([1, 2]).exp()),
        "float32 kept": (skiff.tensor(np.ones(2, np.float32)),
                         torch.tensor(np.ones(2, np.float32))),
    }
    for name, (s, t) in made.items():
        assert str(s.dtype) == str(t.dtype).replace("torch.", ""), name
    for name in ("tensor", "full", "arange", "linspace", "int / int", "int * float", "exp(int)"):
        np.testing.assert_array_equal(_np(made[name][0]), _np(made[name][1]), err_msg=name)
    assert skiff.get_default_dtype() == np.float64
    assert skiff.finfo().eps == torch.finfo().eps


def test_default_dtype_float64_layers_train_as_torch(float64_default):
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                             torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(64, 3))
    sm = skiff.nn.Sequential(skiff.nn.Conv2d(2, 4, 3, padding=1), skiff.nn.BatchNorm2d(4),
                             skiff.nn.ReLU(), skiff.nn.Flatten(), skiff.nn.Linear(64, 3))
    for mod in (skiff.nn.Embedding(4, 2), skiff.nn.LayerNorm(3), skiff.nn.LSTM(2, 3),
                skiff.nn.MultiheadAttention(4, 2), skiff.nn.GRUCell(2, 2), skiff.nn.PReLU(),
                skiff.nn.EmbeddingBag(5, 2), sm):
        assert {str(p.dtype) for p in mod.parameters()} == {"float64"}, type(mod).__name__
    assert str(skiff.nn.Linear(2, 2, dtype=skiff.float32).weight.dtype) == "float32"
    sm.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    X, y = RNG.standard_normal((8, 2, 4, 4)), RNG.integers(0, 3, 8)
    opts = (torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9),
            skiff.optim.SGD(sm.parameters(), lr=0.1, momentum=0.9))
    for m, o, lib in ((tm, opts[0], torch), (sm, opts[1], skiff)):
        m.losses = []
        for _ in range(5):
            loss = lib.nn.functional.cross_entropy(m(lib.tensor(X)), lib.tensor(y))
            o.zero_grad()
            loss.backward()
            o.step()
            m.losses.append(loss.item())
    np.testing.assert_allclose(sm.losses, tm.losses, rtol=1e-12)
    assert tm.losses[-1] < tm.losses[0]


def test_default_dtype_refused_and_restored():
    with pytest.raises(TypeError, match="float32 and float64"):
        skiff.set_default_dtype(skiff.int32)
    assert skiff.get_default_dtype() == np.float32
    assert str(skiff.tensor([1.0]).dtype) == "float32"
    assert str(skiff.nn.Linear(2, 2).weight.dtype) == "float32"


def test_parameter_keeps_numpy_float64():
    a = np.ones(3)
    t = torch.nn.Parameter(torch.from_numpy(a))
    for p in (skiff.nn.Parameter(a), skiff.nn.Parameter(skiff.from_numpy(a))):
        assert str(p.dtype) == str(t.dtype).replace("torch.", "")
    assert str(skiff.nn.Parameter(np.ones(2, np.float32)).dtype) == "float32"
    assert str(skiff.nn.Parameter([1.0, 2.0]).dtype) == str(torch.get_default_dtype())[6:]


# ---- Tensor.norm at zero ----------------------------------------------------------------------
@pytest.mark.parametrize("p", [2, "fro", 1, 3, 1.5, float("inf")])
@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
def test_norm_zero_gradient(p, dim):
    X = RNG.standard_normal((3, 4))
    X[0] = 0.0  # a zero row: torch gives it a zero gradient
    G = RNG.standard_normal((3,)) if dim == 1 else 1.0
    ts, tt = skiff.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    (ts.norm(p=p, dim=dim) * skiff.tensor(G)).sum().backward()
    (tt.norm(p=p, dim=dim) * torch.tensor(G)).sum().backward()
    np.testing.assert_allclose(_np(ts.norm(p=p, dim=dim)), _np(tt.norm(p=p, dim=dim)),
                               rtol=1e-13)
    np.testing.assert_allclose(_np(ts.grad), _np(tt.grad), rtol=1e-12, atol=1e-15)
    assert np.isfinite(_np(ts.grad)).all()
    z = skiff.zeros(4, dtype=skiff.float64, requires_grad=True)
    z.norm(p=p).backward()
    np.testing.assert_array_equal(_np(z.grad), np.zeros(4))


@pytest.mark.parametrize("p", [2, 3])
def test_norm_double_backward(p):
    X = RNG.standard_normal((3, 4))
    V = RNG.standard_normal((3, 4))
    out = []
    for lib in (skiff, torch):
        x = lib.tensor(X, requires_grad=True)
        g, = lib.autograd.grad(x.norm(p=p, dim=1).sum(), x, create_graph=True)
        hv, = lib.autograd.grad((g * lib.tensor(V)).sum(), x)
        out.append((_np(g), _np(hv)))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-10, atol=1e-13)


# ---- tensor hooks in the create_graph pass -----------------------------------------------------
def _hooked(lib, create_graph, keep):
    x = lib.tensor(np.array([1.0, 2.0, -3.0]), requires_grad=True)
    x.register_hook(lambda g: g * 10)
    seen = []

    def loss():
        h = x * x
        h.register_hook(lambda g: seen.append(_np(g)) or g * 2)
        if keep:
            keep.append(h)
        return (h * x).sum()

    g, = lib.autograd.grad(loss(), x, create_graph=create_graph)
    out = [_np(g), seen[0]]
    if create_graph:
        g2, = lib.autograd.grad(g.sum(), x)
        out.append(_np(g2))
    x.grad = None
    loss().backward(create_graph=create_graph)
    out.append(_np(x.grad))
    return out


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("keep", [False, True], ids=["temp", "kept"])
def test_hooks_fire_in_create_graph_pass(create_graph, keep):
    # temp: the hooked tensor is a local of loss(), gone after it returns (torch's hooks live
    # on the graph, so they still fire); kept: alive, so the second pass goes through its hook
    got = _hooked(skiff, create_graph, [] if keep else None)
    want = _hooked(torch, create_graph, [] if keep else None)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-14)


def test_retain_grad_in_create_graph_pass():
    out = []
    for lib in (skiff, torch):
        x = lib.tensor(np.array([0.5, -1.0]), requires_grad=True)
        h = x.sin()
        h.retain_grad()
        (h * h).sum().backward(create_graph=True)
        out.append((_np(h.grad), _np(x.grad)))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-14)


# ---- EmbeddingBag ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("layout", ["offsets", "last_offset", "2d"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag(mode, layout, padding_idx):
    W = RNG.standard_normal((10, 4))
    if layout == "2d":
        idx, offs = RNG.integers(0, 10, (4, 3)), None
        idx[1, 0] = 2
    else:
        idx = np.array([1, 2, 4, 5, 4, 3, 2, 9, 2, 2])
        offs = np.array([0, 2, 2, 5, 8] + ([10] if layout == "last_offset" else []))
    nb = 4 if layout == "2d" else 5
    G = RNG.standard_normal((nb, 4))
    psw = RNG.standard_normal(idx.shape) if mode == "sum" else None
    res = []
    for lib in (skiff, torch):
        bag = lib.nn.EmbeddingBag.from_pretrained(
            lib.tensor(W), freeze=False, mode=mode, padding_idx=padding_idx,
            include_last_offset=layout == "last_offset")
        w = None if psw is None else lib.tensor(psw, requires_grad=True)
        out = bag(lib.tensor(idx), None if offs is None else lib.tensor(offs),
                  per_sample_weights=w)
        (out * lib.tensor(G)).sum().backward()
        res.append([_np(out), _np(bag.weight.grad)] + ([] if w is None else [_np(w.grad)]))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_embedding_bag_module_and_errors():
    torch.manual_seed(0)
    tb = torch.nn.EmbeddingBag(12, 3, mode="sum", padding_idx=0).double()
    sb = skiff.nn.EmbeddingBag(12, 3, mode="sum", padding_idx=0, dtype=skiff.float64)
    assert not _np(sb.weight)[0].any() and not _np(tb.weight)[0].any()
    sb.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in tb.state_dict().items()})
    idx = RNG.integers(0, 12, 9)
    offs = np.array([0, 4, 4, 7])
    np.testing.assert_allclose(
        _np(skiff.nn.functional.embedding_bag(skiff.tensor(idx), sb.weight, skiff.tensor(offs),
                                              mode="mean")),
        _np(torch.nn.functional.embedding_bag(torch.tensor(idx), tb.weight, torch.tensor(offs),
                                              mode="mean")), rtol=1e-13)
    with pytest.raises(ValueError, match="needs offsets"):
        sb(skiff.tensor(idx))
    with pytest.raises(ValueError, match="offsets must be None"):
        sb(skiff.tensor(idx.reshape(3, 3)), skiff.tensor(offs))
    with pytest.raises(ValueError, match="offsets\\[0\\] has to be 0"):
        sb(skiff.tensor(idx), skiff.tensor(offs + 1))
    with pytest.raises(ValueError, match="only supported for mode='sum'"):
        skiff.nn.EmbeddingBag(4, 2)(skiff.tensor([[1, 2]]),
                                    per_sample_weights=skiff.tensor([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="mode must be one of"):
        skiff.nn.EmbeddingBag(4, 2, mode="median")
