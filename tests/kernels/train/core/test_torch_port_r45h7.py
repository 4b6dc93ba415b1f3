"""Round 45 (h7): torch snippets run by ``import skiff as torch``, each against torch 2.13 on the
CPU (float64 values and gradients): ``x.shape`` a ``torch.Size``, torch's dtype attributes on
``x.dtype``, channels-last results of pooling/normalisation/``*_like``, double backward of
``xlog1py``/``gammainc``/``fmod``/``hardswish``/``logsigmoid``/``mish``, ``cdist(p=inf)``'s
gradient at ties, ``autograd.functional``'s ``strict``, a custom ``autograd.Function``'s extra
``None`` gradients, ``set_materialize_grads(False)`` and a wrongly shaped gradient."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

LIBS = (skiff, torch)


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


# ---- x.shape is a torch.Size ----------------------------------------------------------------
def test_shape_is_a_torch_size():
    for lib in LIBS:
        x = lib.zeros(2, 3, 4, 5)
        assert repr(x.shape) == "torch.Size([2, 3, 4, 5])"
        assert repr(x.shape[1:]) == "torch.Size([3, 4, 5])" and x.shape[1:].numel() == 60
        assert x.shape.numel() == 120 and x.shape[-1] == 5 and type(x.shape[0]) is int
        assert x.shape == (2, 3, 4, 5) and hash(x.shape) == hash((2, 3, 4, 5))
        assert {(2, 3, 4, 5): 1}[x.shape] == 1 and x.shape == x.size()
        assert repr(x.shape + (6,)) == "torch.Size([2, 3, 4, 5, 6])"
        assert repr(lib.tensor(1.0).shape) == "torch.Size([])"
        assert pickle.loads(pickle.dumps(x.shape)) == (2, 3, 4, 5)
        assert np.zeros(x.shape).shape == (2, 3, 4, 5)
    # inside vmap the per-sample shape is a Size too
    seen = []
    skiff.vmap(lambda r: seen.append(repr(r.shape)) or r.sum())(skiff.zeros(3, 4))
    assert seen == ["torch.Size([4])"]


# ---- torch's dtype attributes ---------------------------------------------------------------
def test_dtype_answers_torch_attributes():
    names = ["float16", "float32", "float64", "complex64", "complex128", "int8", "uint8",
             "int32", "int64", "bool"]
    for name in names:
        ours = skiff.zeros(2, dtype=getattr(skiff, name)).dtype
        theirs = torch.zeros(2, dtype=getattr(torch, name)).dtype
        for attr in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
            assert getattr(ours, attr) == getattr(theirs, attr), (name, attr)
        if (theirs.is_floating_point or theirs.is_complex) and name != "float16":
            # (float16's is torch's complex32: numpy has none)
            assert str(ours.to_complex()) == str(theirs.to_complex())[6:]
            assert str(ours.to_real()) == str(theirs.to_real())[6:]
        # still numpy's dtype wherever skiff and numpy take one
        assert isinstance(ours, np.dtype) and isinstance(ours, skiff.dtype)
        assert ours == np.dtype(name) and hash(ours) == hash(np.dtype(name))
        assert ours == getattr(skiff, name) and str(ours) == name
        assert np.zeros(1, ours).dtype == np.dtype(name) and ours.kind == np.dtype(name).kind
    x = skiff.ones(3, dtype=skiff.float32)
    assert skiff.finfo(x.dtype).eps == torch.finfo(torch.float32).eps
    assert skiff.promote_types(x.dtype, skiff.int64) == skiff.float32
    assert pickle.loads(pickle.dumps(x.dtype)) == np.float32
    # a ported EMA/clip idiom: only the floating state is touched
    sd = {"w": skiff.ones(2), "n": skiff.tensor([3])}
    assert [k for k, v in sd.items() if v.dtype.is_floating_point] == ["w"]


# ---- channels-last results ------------------------------------------------------------------
_LAST_OPS = {
    "max_pool2d": lambda T, x: T.nn.functional.max_pool2d(x, 2),
    "max_pool2d indices": lambda T, x: T.nn.functional.max_pool2d(x, 2, return_indices=True)[1],
    "avg_pool2d": lambda T, x: T.nn.functional.avg_pool2d(x, 2),
    "MaxPool2d": lambda T, x: T.nn.MaxPool2d(2)(x),
    "adaptive_avg_pool2d": lambda T, x: T.nn.functional.adaptive_avg_pool2d(x, (2, 3)),
    "adaptive_max_pool2d": lambda T, x: T.nn.functional.adaptive_max_pool2d(x, (2, 3)),
    "lp_pool2d": lambda T, x: T.nn.functional.lp_pool2d(x, 2, 2),
    "batch_norm": lambda T, x: T.nn.functional.batch_norm(x, None, None, training=True),
    "group_norm": lambda T, x: T.nn.functional.group_norm(x, 2),
    "interpolate bilinear": lambda T, x: T.nn.functional.interpolate(x, scale_factor=2,
                                                                     mode="bilinear"),
    "Upsample": lambda T, x: T.nn.Upsample(scale_factor=2)(x),
    "pad reflect": lambda T, x: T.nn.functional.pad(x, (1, 1, 1, 1), mode="reflect"),
    "conv_transpose2d": lambda T, x: T.nn.functional.conv_transpose2d(
        x, T.ones(4, 3, 2, 2, dtype=T.float64)),
    "empty_like": lambda T, x: T.empty_like(x),
    "zeros_like": lambda T, x: T.zeros_like(x),
    "ones_like": lambda T, x: T.ones_like(x),
    "full_like": lambda T, x: T.full_like(x, 2.0),
    "randn_like": lambda T, x: T.randn_like(x),
    "randint_like": lambda T, x: T.randint_like(x, 5),
    "empty_like contiguous": lambda T, x: T.empty_like(x, memory_format=T.contiguous_format),
    "relu": lambda T, x: T.relu(x),
}


@pytest.mark.parametrize("name", list(_LAST_OPS))
def test_channels_last_results_keep_the_layout_as_torch(name):
    X = np.random.default_rng(0).standard_normal((2, 4, 6, 5))
    got = {}
    for lib in LIBS:
        x = lib.tensor(X).contiguous(memory_format=lib.channels_last)
        y = _LAST_OPS[name](lib, x)
        got[lib] = (y.is_contiguous(memory_format=lib.channels_last), y.is_contiguous(),
                    tuple(y.shape), _np(y))
    assert got[skiff][:3] == got[torch][:3]
    if "like" not in name:  # values as torch's (the creators' are random or unset)
        np.testing.assert_allclose(got[skiff][3], got[torch][3], rtol=1e-12, atol=1e-12)


def test_like_creators_keep_a_transposed_layout_and_take_channels_last():
    for lib in LIBS:
        t = lib.zeros(3, 4, dtype=lib.float64).t()
        z = lib.zeros_like(t)
        assert not z.is_contiguous() and z.t().is_contiguous()
        e = lib.empty_like(lib.zeros(2, 3, 4, 5), memory_format=lib.channels_last)
        assert e.is_contiguous(memory_format=lib.channels_last) and not e.is_contiguous()
        with pytest.raises(RuntimeError, match="required rank 4"):
            lib.empty_like(lib.zeros(2, 3, 4), memory_format=lib.channels_last)


def test_channels_last_pool_gradient_as_torch():
    X = np.random.default_rng(1).standard_normal((2, 3, 6, 4))
    grads = []
    for lib in LIBS:
        x = lib.tensor(X, requires_grad=True)
        y = lib.nn.functional.max_pool2d(x.contiguous(memory_format=lib.channels_last), 2)
        (y * lib.arange(y.numel(), dtype=lib.float64).reshape(y.shape)).sum().backward()
        grads.append(_np(x.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=0, atol=0)


# ---- double backward ------------------------------------------------------------------------
def _three_orders(lib, f, diff, *vals):
    xs = [lib.tensor(v, dtype=lib.float64, requires_grad=d) for v, d in zip(vals, diff)]
    ws = [x for x in xs if x.requires_grad]
    y = f(lib, *xs)
    y = (y * lib.tensor(np.linspace(-0.7, 1.1, y.numel())).reshape(y.shape)).sum()
    g = lib.autograd.grad(y, ws, create_graph=True)
    s = sum((gi * lib.tensor(np.linspace(0.3, 1.2, gi.numel())).reshape(gi.shape)).sum()
            for gi in g)
    h = lib.autograd.grad(s, ws, create_graph=True)
    k = lib.autograd.grad(sum((hi ** 2).sum() for hi in h), ws)
    return [_np(t) for t in (*g, *h, *k)]


_A, _B = np.array([0.5, 1.5, 2.0, 0.0, 0.0]), np.array([0.3, 2.0, 0.7, -1.0, 0.4])
_X = np.array([-4.0, -2.5, -0.7, 0.0, 0.4, 2.2, 3.5, 1.0])
_M = np.random.default_rng(3).standard_normal((2, 3, 3)) + 3 * np.eye(3)
_DOUBLE = {
    "xlog1py": (lambda T, a, b: T.special.xlog1py(a, b), (True, True), _A, _B),
    "xlog1py broadcast": (lambda T, a, b: T.special.xlog1py(a, b), (True, True), _A[:, None],
                          _B[None, :3]),
    "gammainc": (lambda T, a, b: T.special.gammainc(a, b), (False, True),
                 np.array([0.5, 1.5, 2.0, 3.0]), np.array([0.3, 2.0, 0.7, 4.0])),
    "gammaincc": (lambda T, a, b: T.special.gammaincc(a, b), (False, True),
                  np.array([0.5, 1.5, 2.0, 3.0]), np.array([0.3, 2.0, 0.7, 4.0])),
    "fmod": (lambda T, a, b: T.fmod(a, b) ** 2 * b, (True, True), np.array([5.5, -1.5, 2.0]),
             np.array([2.0, 0.7, -0.9])),
    "remainder": (lambda T, a, b: T.remainder(a, b) ** 3 * a, (True, True),
                  np.array([5.5, -1.5, 2.0]), np.array([2.0, 0.7, -0.9])),
    "hardswish": (lambda T, x: T.nn.functional.hardswish(x) * x, (True,), _X),
    "logsigmoid": (lambda T, x: T.nn.functional.logsigmoid(x), (True,), _X),
    "mish": (lambda T, x: T.nn.functional.mish(x), (True,), _X),
    # linalg: every node was refused (a Hessian through logdet, inv, solve, diagonal)
    "det": (lambda T, a: T.linalg.det(a), (True,), _M),
    "inv": (lambda T, a: T.linalg.inv(a) ** 2, (True,), _M),
    "slogdet": (lambda T, a: T.linalg.slogdet(a)[1], (True,), _M),
    "logdet": (lambda T, a: T.logdet(a @ a.mT), (True,), _M),
    "solve vector": (lambda T, a, b: T.linalg.solve(a, b) ** 2, (True, True), _M, _M[:, 0]),
    "solve broadcast": (lambda T, a, b: T.linalg.solve(a, b) ** 2, (True, True), _M[0],
                        np.stack([_M[1][:, :2], _M[0][:, 1:]])),
    "solve_triangular": (lambda T, a, b: T.linalg.solve_triangular(a, b, upper=True) ** 2,
                         (True, True), _M, _M[:, :, :2]),
    "solve_triangular unit": (lambda T, a, b: T.linalg.solve_triangular(
        a, b, upper=False, unitriangular=True) ** 2, (True, True), _M, _M[:, :, 1:]),
    "diagonal": (lambda T, a: (a.diagonal(1, 0, 2) ** 3), (True,), _M.transpose(1, 0, 2)),
}


@pytest.mark.parametrize("name", list(_DOUBLE))
def test_third_derivatives_as_torch(name):
    f, diff, *vals = _DOUBLE[name]
    ours, theirs = (_three_orders(lib, f, diff, *vals) for lib in LIBS)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


# ---- cdist / pdist with p = inf: ties ------------------------------------------------------
def test_inf_distance_gradient_at_ties_as_torch():
    got = []
    for lib in LIBS:
        a = lib.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]], dtype=lib.float64,
                       requires_grad=True)
        b = lib.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=lib.float64, requires_grad=True)
        d = lib.cdist(a, b, p=float("inf"))
        (d * lib.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=lib.float64)).sum().backward()
        c = lib.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]], dtype=lib.float64,
                       requires_grad=True)
        p1 = lib.pdist(c, p=float("inf"))
        p2 = lib.nn.functional.pdist(c, p=float("inf"))
        (p1.sum() + 2 * p2.sum()).backward()
        got.append([_np(d), _np(a.grad), _np(b.grad), _np(p1), _np(c.grad)])
    for x, y in zip(*got):
        np.testing.assert_array_equal(x, y)


# ---- autograd.functional's strict ----------------------------------------------------------
_STRICT = {
    "jacobian const": lambda T, AF, x, y: AF.jacobian(lambda x: T.ones(2), x, strict=True),
    "jacobian unused": lambda T, AF, x, y: AF.jacobian(lambda x, y: x * 2, (x, y), strict=True),
    "jacobian linear cg": lambda T, AF, x, y: AF.jacobian(lambda x, y: x * 2, (x, y),
                                                          strict=True, create_graph=True),
    "jacobian vectorize": lambda T, AF, x, y: AF.jacobian(lambda x: x * 2, x, strict=True,
                                                          vectorize=True),
    "jacobian 2nd output": lambda T, AF, x, y: AF.jacobian(lambda x, y: (x * y, y.exp()),
                                                           (x, y), strict=True),
    "vjp unused": lambda T, AF, x, y: AF.vjp(lambda x, y: x * 2, (x, y), T.ones(2), strict=True),
    "vjp const": lambda T, AF, x, y: AF.vjp(lambda x: T.ones(2), x, T.ones(2), strict=True),
    "jvp unused": lambda T, AF, x, y: AF.jvp(lambda x, y: x * 2, (x, y),
                                             (T.ones(2), T.ones(2)), strict=True),
    "hessian linear": lambda T, AF, x, y: AF.hessian(lambda x: x.sum() * 2, x, strict=True),
    "hessian unused": lambda T, AF, x, y: AF.hessian(lambda x, y: (x ** 3).sum(), (x, y),
                                                     strict=True),
    "vhp linear": lambda T, AF, x, y: AF.vhp(lambda x: x.sum() * 2, x, T.ones(2), strict=True),
    "vhp unused": lambda T, AF, x, y: AF.vhp(lambda x, y: (x ** 3).sum(), (x, y),
                                             (T.ones(2), T.ones(2)), strict=True),
    "jacobian ok": lambda T, AF, x, y: AF.jacobian(lambda x, y: x * y, (x, y), strict=True),
    "hessian ok cg": lambda T, AF, x, y: AF.hessian(lambda x: (x ** 2).sum(), x, strict=True,
                                                    create_graph=True),
    "hvp ok": lambda T, AF, x, y: AF.hvp(lambda x: (x ** 3).sum(), x, T.ones(2), strict=True),
}


def test_autograd_functional_strict_as_torch():
    for name, f in _STRICT.items():
        said = []
        for lib in LIBS:
            x = lib.tensor([1.0, 2.0], dtype=lib.float64)
            y = lib.tensor([3.0, -1.0], dtype=lib.float64)
            try:
                f(lib, lib.autograd.functional, x, y)
                said.append("ok")
            except RuntimeError as e:
                said.append(str(e))
        assert said[0] == said[1], name
    # and without strict the unused input's block is zeros, as before
    J = skiff.autograd.functional.jacobian(lambda x, y: x * 2, (skiff.ones(2), skiff.ones(2)))
    np.testing.assert_array_equal(_np(J[1]), np.zeros((2, 2)))


# ---- custom autograd.Function ---------------------------------------------------------------
def _functions(lib, log):
    class Linear(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b=None, scale=1.0):
            ctx.save_for_backward(x, w, b)
            ctx.scale = scale
            out = x @ w.t()
            return (out if b is None else out + b) * scale

        @staticmethod
        def backward(ctx, g):
            x, w, b = ctx.saved_tensors
            log.append(tuple(ctx.needs_input_grad))
            g = g * ctx.scale
            gx = g @ w if ctx.needs_input_grad[0] else None
            gw = g.t() @ x if ctx.needs_input_grad[1] else None
            gb = g.sum(0) if b is not None and ctx.needs_input_grad[2] else None
            return gx, gw, gb, None  # always four: torch drops the extra Nones

    class Pair(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            log.append((g1 is None, g2 is None))
            return g1 if g2 is None else g2 if g1 is None else g1 + g2

    class Wide(lib.autograd.Function):  # a gradient broadcast from the input: summed back
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.unsqueeze(0).expand(3, *g.shape) * 2

    class Bad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.sum(0)

    class TooMany(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    return Linear, Pair, Wide, Bad, TooMany


def test_custom_function_gradients_and_checks_as_torch():
    rng = np.random.default_rng(5)
    X, W, B = rng.standard_normal((4, 3)), rng.standard_normal((2, 3)), rng.standard_normal(2)
    res, logs, errors = [], [], []
    for lib in LIBS:
        log = []
        Linear, Pair, Wide, Bad, TooMany = _functions(lib, log)
        x = lib.tensor(X, requires_grad=True)
        w = lib.tensor(W, requires_grad=True)
        y = Linear.apply(x, w, lib.tensor(B), 0.5)
        y.pow(2).sum().backward()
        w2 = lib.tensor(W, requires_grad=True)
        Linear.apply(lib.tensor(X), w2).sum().backward()  # two inputs, four gradients
        x3 = lib.tensor(X, requires_grad=True)
        a, _ = Pair.apply(x3)
        a.sum().backward()
        x4 = lib.tensor(X, requires_grad=True)
        Wide.apply(x4).sum().backward()
        res.append([_np(y), _np(x.grad), _np(w.grad), _np(w2.grad), _np(x3.grad), _np(x4.grad)])
        logs.append(log)
        said = []
        for fn in (Bad, TooMany):
            with pytest.raises(RuntimeError) as e:
                fn.apply(lib.tensor(X, requires_grad=True)).sum().backward()
            said.append(str(e.value))
        errors.append(said)
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
    assert logs[0] == logs[1] == [(True, True, False, False), (False, True), (False, True)]
    assert errors[0] == errors[1]
    assert "returned an invalid gradient at index 0 - got [3]" in errors[0][0]
    assert "incorrect number of gradients (expected 1, got 2)" in errors[0][1]


def test_a_checkpoint_with_shapes_and_dtypes_loads_back_as_torch(tmp_path):
    got = []
    for lib in LIBS:
        x = lib.zeros(2, 3, dtype=lib.float64)
        ckpt = {"shape": x.shape, "size": x.size(), "tail": x.shape[1:], "dtype": x.dtype, "w": x}
        lib.save(ckpt, tmp_path / f"{lib.__name__}.pt")
        back = lib.load(tmp_path / f"{lib.__name__}.pt")  # weights_only=True in both
        got.append((repr(back["shape"]), repr(back["size"]), repr(back["tail"]),
                    str(back["dtype"]).removeprefix("torch."), tuple(back["w"].shape)))
    assert got[0] == got[1]


def test_creators_take_the_size_keyword_as_torch():
    for name in ("zeros", "ones", "empty", "rand", "randn"):
        shapes = []
        for lib in LIBS:
            make = getattr(lib, name)
            x = lib.zeros(4, 1)
            shapes.append((tuple(make(size=(2, 3)).shape), tuple(make(size=x.shape).shape),
                           tuple(make(size=[5]).shape)))
            with pytest.raises(TypeError):
                make(2, size=(2,))
        assert shapes[0] == shapes[1], name
    got = [(_np(lib.full(size=(2, 3), fill_value=1.5)), str(lib.full(size=[2], fill_value=True)
                                                           .dtype).removeprefix("torch."))
           for lib in LIBS]
    np.testing.assert_array_equal(got[0][0], got[1][0])
    assert got[0][1] == got[1][1] == "bool"


def test_finfo_as_torch():
    import json

    fields = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")
    for name in ("float16", "float32", "float64", "bfloat16"):
        ours, theirs = skiff.finfo(getattr(skiff, name)), torch.finfo(getattr(torch, name))
        assert repr(ours) == repr(theirs)
        for f in fields:
            assert getattr(ours, f) == getattr(theirs, f) and type(getattr(ours, f)) is type(
                getattr(theirs, f)), (name, f)
    x = skiff.zeros(2)
    assert json.loads(json.dumps({"eps": skiff.finfo(x.dtype).eps}))["eps"] == torch.finfo().eps
