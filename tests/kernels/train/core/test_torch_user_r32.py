"""Round 32: a torch user's programs, tenth pass. torch 2.13 on CPU is the oracle: dtypes
equal, values to 1e-10 in float64 (``full`` of an int, uint8 wrap-around with out-of-range
Python ints, integer sums as int64, ``where``/``clamp``/``maximum`` promotion, Adam on a
float32 gradient whose square overflows, ``interpolate(mode="bicubic")``)."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")


def _same(got, ref):
    assert str(got.dtype).replace("torch.", "") == str(ref.dtype).replace("torch.", ""), (
        got.dtype, ref.dtype)
    np.testing.assert_allclose(np.asarray(got.detach().numpy(), dtype=complex),
                               np.asarray(ref.detach().numpy(), dtype=complex),
                               rtol=1e-10 if ref.dtype in (torch.float64, torch.complex128)
                               else 1e-6, atol=1e-12)


@pytest.mark.parametrize("value", [3, 3.0, True, 1 + 2j, -7])
def test_full_infers_the_dtype_from_the_value(value):
    _same(skiff.full((2, 1), value), torch.full((2, 1), value))
    if not isinstance(value, complex):
        _same(skiff.full((2,), value, dtype=skiff.float64),
              torch.full((2,), value, dtype=torch.float64))


EXPRS = [
    "u * 300", "u + 300", "u - 300", "300 - u", "u // 300", "u % 300", "i8 * 1000",
    "u > 300", "u == 44", "u * T.tensor(300)", "u + T.tensor(-1)",
    "i8 + T.tensor(1, dtype=T.uint8)", "i32 + T.tensor(5, dtype=T.uint8)",
    "u.sum()", "u.sum(0)", "T.sum(u)", "i32.sum()", "b.sum()", "u.prod()", "i32.prod()",
    "u.cumsum(0)", "b.cumsum(0)", "b.cumprod(0)", "u.cumprod(0)", "i8.cumprod(0)",
    "u.nansum()", "u.sum(dtype=T.uint8)", "T.prod(u, 0, dtype=T.int16)",
    "u.sum(dtype=T.float32)", "b.prod()", "i8.sum()",
    "T.where(c, 0.5, i)", "T.where(c, i, f)", "T.where(c, f, 2)", "T.where(c, h, 1.5)",
    "T.where(c, h, f)", "T.where(c, 1.0, 0.0)", "T.where(c, 1, 0)", "T.where(c, u, i)",
    "T.where(i > 1, i, 0.)", "T.where(c, i, T.tensor(2.5, dtype=T.float64))",
    "T.clamp(i, 0.5, 2.5)", "T.clamp(i, 1, 2)", "T.clamp(u, 1, 2)", "i.clamp_min(0.5)",
    "i.clamp(min=T.tensor(1.5))", "i.clamp(max=f)", "h.clamp(0.5, 1.5)",
    "T.maximum(i, f)", "T.minimum(u, i)", "T.maximum(h, f)", "T.fmax(i, f)",
    "T.maximum(i, i.flip(0))",
]


@pytest.mark.parametrize("expr", EXPRS)
def test_integer_and_mixed_dtype_corners_are_torchs(expr):
    def run(T):
        env = dict(T=T, u=T.tensor([250, 3, 4], dtype=T.uint8),
                   i8=T.tensor([100, -100, 7], dtype=T.int8),
                   i32=T.tensor([1, 5, 9], dtype=T.int32), b=T.tensor([True, True, False]),
                   i=T.tensor([1, 2, 3]), f=T.tensor([1.5, 2.5, 3.5]),
                   c=T.tensor([True, False, True]),
                   h=T.tensor([1, 2, 3], dtype=T.float16))
        return eval(expr, env)

    _same(run(skiff), run(torch))


def test_maximum_of_floats_still_shares_the_gradient_at_ties():
    def run(T):
        a = T.tensor([1.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
        b = T.tensor([1.0, 5.0, 0.0], dtype=T.float64, requires_grad=True)
        (T.maximum(a, b) * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum().backward()
        return a.grad, b.grad

    for g, r in zip(run(skiff), run(torch)):
        _same(g, r)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adamax", "NAdam", "RMSprop", "Adagrad"])
def test_adam_on_a_float32_gradient_whose_square_overflows(name):
    def run(T):
        p = T.nn.Parameter(T.tensor([2.0, 1.0, -0.5]))
        opt = getattr(T.optim, name)([p], lr=0.1)
        for g in ([1e30, 1e-30, 0.3], [0.5, -2.0, 1e-3]):
            p.grad = T.tensor(g)
            opt.step()
        return p

    _same(run(skiff), run(torch))


def test_adam_float32_steps_stay_torchs():
    rng = np.random.default_rng(0)
    w0, grads = rng.standard_normal(300), rng.standard_normal((5, 300)) * 10.0 ** rng.integers(
        -20, 18, (5, 300))

    def run(T):
        p = T.nn.Parameter(T.tensor(w0, dtype=T.float32))
        opt = T.optim.Adam([p], lr=1e-2)
        for g in grads:
            p.grad = T.tensor(g, dtype=T.float32)
            opt.step()
        return p.detach().numpy()

    np.testing.assert_allclose(run(skiff), run(torch), rtol=2e-6, atol=1e-7)


def test_bicubic_interpolate_values_and_gradients():
    x0 = np.random.default_rng(1).standard_normal((2, 3, 5, 6))

    def run(T):
        F = T.nn.functional
        x = T.tensor(x0, dtype=T.float64, requires_grad=True)
        outs = [F.interpolate(x, size=(8, 8), mode="bicubic", align_corners=True),
                F.interpolate(x, size=(9, 4), mode="bicubic", align_corners=False),
                F.interpolate(x, scale_factor=2, mode="bicubic"),
                F.interpolate(x, scale_factor=(0.5, 1.5), mode="bicubic"),
                F.interpolate(x, size=(1, 7), mode="bicubic", align_corners=True),
                F.interpolate(x, scale_factor=1.7, mode="bicubic",
                              recompute_scale_factor=True),
                T.nn.Upsample(scale_factor=3, mode="bicubic", align_corners=False)(x)]
        sum((o * (1 + o)).sum() for o in outs).backward()
        return outs + [x.grad]

    for g, r in zip(run(skiff), run(torch)):
        _same(g, r)


MORE = [
    "T.cat([i, f])", "T.cat([u, i])", "T.stack([i, f])", "T.cat([b, i])", "T.cat([h, d])",
    "T.hstack([i, f])", "T.vstack([i, d])", "T.column_stack([i, f])",
    "T.stack([T.tensor(1), T.tensor(2.5)])",
    "T.round(g, decimals=2)", "g.round(decimals=1)", "T.round(g, decimals=-2)",
    "T.round(g.double(), decimals=3)", "T.square(b)", "b.square()",
    "T.std_mean(g, unbiased=False)[0]", "T.var_mean(g, 0, True)[0]",
    "T.var_mean(g, correction=0)[0]", "T.var_mean(g, False)[0]",
    "T.ones(2, 3).swapdims(0, 1)",
]


@pytest.mark.parametrize("expr", MORE)
def test_joining_rounding_and_moments_are_torchs(expr):
    def run(T):
        env = dict(T=T, u=T.tensor([250, 3, 4], dtype=T.uint8), b=T.tensor([True, False, True]),
                   i=T.tensor([1, 2, 3]), f=T.tensor([1.5, 2.5, 3.5]),
                   d=T.tensor([1.0, 2.0, 3.0], dtype=T.float64),
                   h=T.tensor([1, 2, 3], dtype=T.float16),
                   g=T.tensor([1.2345, -2.5678, 0.125, 1250.0]))
        return eval(expr, env)

    _same(run(skiff), run(torch))


def test_cat_of_int_and_float_keeps_the_gradient():
    def run(T):
        w = T.tensor([0.5, -1.0], requires_grad=True)
        (T.cat([T.tensor([1, 2]), w]) ** 2).sum().backward()
        return w.grad

    _same(run(skiff), run(torch))


def test_special_functions_and_their_gradients():
    rng = np.random.default_rng(0)
    xs, zs = rng.uniform(0.1, 3, 6), rng.uniform(-9, 4, 6)
    ys, ps = rng.uniform(-0.5, 2, 6), rng.uniform(0.01, 0.99, 6)

    def run(T):
        S = T.special
        x, z, y, p = (T.tensor(a, dtype=T.float64, requires_grad=True) for a in (xs, zs, ys, ps))
        c = T.tensor([0.0, -1.0, 2.0], dtype=T.float64)
        outs = [S.entr(x), S.entr(c), S.xlog1py(x, y), S.xlog1py(c[:2], c[1:]),
                S.log_ndtr(z), S.log_ndtr(T.tensor([-40.0, 10.0], dtype=T.float64)),
                S.ndtri(p), S.erfcx(z), S.i0(z), S.i0e(z), S.i1(z), S.i1e(z),
                S.i1(T.tensor([0.0], dtype=T.float64)), S.multigammaln(x + 2, 3),
                S.xlog1py(2, y), S.xlog1py(x, 3.0)]
        values = [S.zeta(x.detach() + 1, y.detach() + 1), S.zeta(x.detach() + 1, 2.0),
                  S.bessel_j0(z.detach()), S.bessel_j1(z.detach()), S.bessel_y0(x.detach()),
                  S.bessel_y1(x.detach()), S.i0(T.tensor([1, 2]))]
        sum((o * (1 + o.detach())).sum() for o in outs).backward()
        return outs + [x.grad, z.grad, y.grad, p.grad], values

    (g, gv), (r, rv) = run(skiff), run(torch)
    for a, b in zip(g, r):
        _same(a, b)
    for a, b in zip(gv, rv):  # torch's cephes Bessel forms differ from scipy's by ~5e-10
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-9,
                                   rtol=1e-9 if b.dtype == torch.float64 else 1e-6)
        assert str(a.dtype) == str(b.dtype).replace("torch.", "")


def _init(T, m, seed=0):
    rng = np.random.default_rng(seed)
    with T.no_grad():
        for _, p in m.named_parameters():
            p.copy_(T.tensor(rng.standard_normal(tuple(p.shape)) * 0.3, dtype=T.float64))
    return m


def _data(T, *shape, seed=1):
    return T.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=T.float64)


@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("kdim", [None, 4])
def test_attention_weights_are_differentiable(average, kdim):
    """``MultiheadAttention``'s returned weights are in the graph (a penalty on them trains
    the projections); they were computed under no_grad."""
    def run(T):
        a = _init(T, T.nn.MultiheadAttention(6, 2, kdim=kdim, vdim=5 if kdim else None,
                                             batch_first=True).double())
        q, k = _data(T, 2, 3, 6), _data(T, 2, 4, kdim or 6, seed=2)
        v = _data(T, 2, 4, 5 if kdim else 6, seed=3)
        mask = T.tensor([[0.0, -1e9, 0.0, 0.0]] * 3, dtype=T.float64)
        o, w = a(q, k, v, attn_mask=mask, average_attn_weights=average)
        (o.sum() + w.pow(2).sum()).backward()
        qw = a.q_proj_weight if kdim else a.in_proj_weight
        return [o, w, qw.grad, a.out_proj.weight.grad]

    for g, r in zip(run(skiff), run(torch)):
        _same(g, r)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("kernel,mode,dilation", [
    ((3, 2), "reflect", 1), (3, "reflect", 1), (2, "replicate", 1), (4, "circular", 1),
    ((3, 2), "reflect", 2), (3, "zeros", 1)])
def test_conv_padding_same_with_a_padding_mode(kernel, mode, dilation):
    """``padding="same"`` with ``padding_mode`` reflect/replicate/circular padded zeros."""
    def run(T):
        c = _init(T, T.nn.Conv2d(3, 4, kernel, padding="same", padding_mode=mode,
                                 dilation=dilation).double())
        c1 = _init(T, T.nn.Conv1d(3, 2, 2 if kernel == 2 else 3, padding="same",
                                  padding_mode=mode).double())
        x, x1 = _data(T, 2, 3, 5, 6).requires_grad_(), _data(T, 2, 3, 7).requires_grad_()
        y, y1 = c(x), c1(x1)
        ((y ** 2).sum() + (y1 ** 3).sum()).backward()
        return [y, y1, x.grad, x1.grad, c.weight.grad, c1.weight.grad]

    for g, r in zip(run(skiff), run(torch)):
        _same(g, r)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3), "low", "complex"])
def test_pinv_gradient(shape):
    def run(T):
        if shape == "low":
            A = _data(T, 5, 2) @ _data(T, 2, 4, seed=3)
        elif shape == "complex":
            A = T.complex(_data(T, 3, 4), _data(T, 3, 4, seed=2))
        else:
            A = _data(T, *shape)
        A.requires_grad_()
        P = T.linalg.pinv(A)
        (P.abs() ** 2 + P.real * _data(T, *P.shape, seed=7)).sum().backward()
        return [P, A.grad]

    for g, r in zip(run(skiff), run(torch)):
        _same(g, r)


def test_bce_targets_that_need_a_gradient_get_one():
    """A soft target from a model (distillation) is differentiated as torch does; it was
    taken as a constant."""
    def run(T):
        x = _data(T, 3, 4).requires_grad_()
        y = _data(T, 3, 4, seed=2).sigmoid().detach().requires_grad_()
        F = T.nn.functional
        (F.binary_cross_entropy_with_logits(x, y, weight=_data(T, 4, seed=3).abs(),
                                            pos_weight=_data(T, 4, seed=4).abs())
         + F.binary_cross_entropy(x.sigmoid(), y, reduction="sum")).backward()
        return [x.grad, y.grad]

    for g, r in zip(run(skiff), run(torch)):
        _same(g, r)


def test_pdist_values_and_gradients():
    def run(T):
        a = _data(T, 5, 3)
        a = T.cat([a, a[:1]]).requires_grad_()  # a repeated row: distance 0, gradient 0
        outs = [T.nn.functional.pdist(a), T.nn.functional.pdist(a, p=1),
                T.nn.functional.pdist(a, p=3.5)]
        sum((o * o).sum() for o in outs[:2]).backward()
        return outs + [a.grad]

    for g, r in zip(run(skiff), run(torch)):
        _same(g, r)


OPTIMIZERS = [
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=1e-2)),
    ("Adam", dict(lr=1e-2, amsgrad=True, weight_decay=1e-2)),
    ("Adam", dict(lr=1e-2, weight_decay=0.5, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=1e-2, betas=(0.8, 0.99))), ("Adamax", dict(lr=1e-2)),
    ("NAdam", dict(lr=1e-2, decoupled_weight_decay=True, weight_decay=0.1)),
    ("RAdam", dict(lr=1e-2)), ("RMSprop", dict(lr=1e-2, momentum=0.5, centered=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)), ("Adadelta", dict(lr=1.0, rho=0.8)),
    ("Rprop", dict(lr=0.01)), ("ASGD", dict(lr=0.01, t0=2)),
]


@pytest.mark.parametrize("name,kw", OPTIMIZERS)
def test_optimizer_trajectories_and_state_dict_keys(name, kw):
    """Two param groups, six steps: the weights and torch's param-group keys (its
    implementation flags foreach/capturable/differentiable/fused too)."""
    def run(T):
        m = _init(T, T.nn.Sequential(T.nn.Linear(3, 5), T.nn.Tanh(), T.nn.Linear(5, 1))
                  .double())
        opt = getattr(T.optim, name)([{"params": m[0].parameters()},
                                      {"params": m[2].parameters(), "lr": kw["lr"] / 2}], **kw)
        x, y = _data(T, 8, 3), _data(T, 8, 1, seed=5)
        for _ in range(6):
            opt.zero_grad()
            ((m(x) - y) ** 2).mean().backward()
            opt.step()
        keys = [sorted(k for k in g if k != "params") for g in opt.state_dict()["param_groups"]]
        return m[0].weight, m[2].bias, keys

    (w, b, keys), (tw, tb, tkeys) = run(skiff), run(torch)
    _same(w, tw)
    _same(b, tb)
    assert keys == tkeys


def test_module_hooks_with_kwargs_and_aliased_modules():
    """``register_forward_pre_hook/forward_hook(with_kwargs=True)`` (they raised TypeError),
    ``named_modules(remove_duplicate=False)``, and a module held under two names written under
    both in ``state_dict`` (torch's; a second name's keys may be absent when loading, as in
    skiff's older state dicts)."""
    def run(T):
        nn = T.nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = nn.Linear(3, 4), nn.Linear(4, 2)
                self.c = self.a
                self.register_buffer("steps", T.zeros((), dtype=T.int64))

            def forward(self, x, scale=1.0):
                self.steps += 1
                return self.b(self.a(x).relu()) * scale

        m = _init(T, Net().double())
        h = m.register_forward_pre_hook(lambda mod, args, kw: (args, {**kw, "scale": 2.0}),
                                        with_kwargs=True)
        h2 = m.b.register_forward_hook(lambda mod, args, kw, out: out + 1, with_kwargs=True)
        y = m(_data(T, 2, 3), scale=1.0)
        h.remove()
        h2.remove()
        sd = m.state_dict()
        sd2 = {k: v.clone() for k, v in sd.items()}
        sd2["c.weight"] = sd2["c.weight"] * 2  # loaded after a.weight: it wins, as torch's
        m.load_state_dict(sd2)
        names = ([n for n, _ in m.named_modules()],
                 [n for n, _ in m.named_modules(remove_duplicate=False)],
                 [n for n, _ in m.named_parameters(remove_duplicate=False)])
        return y, m(_data(T, 2, 3)), m.a.weight, list(sd), names

    (y, y2, w, keys, names), (ty, ty2, tw, tkeys, tnames) = run(skiff), run(torch)
    _same(y, ty)
    _same(y2, ty2)
    _same(w, tw)
    assert keys == tkeys and names == tnames


def test_scalar_tensor_swapdims_mvlgamma_i0_functions():
    """torch's top-level functions, in ops_stats (skiff.<name> once skiff.api lists them)."""
    from skiff.kernels.train.core import ops_stats as S

    def run(T, F):
        return [F.scalar_tensor(3), F.swapdims(T.arange(6.0).reshape(2, 3), 0, 1),
                F.mvlgamma(T.tensor([2.5, 3.0], dtype=T.float64), 2),
                F.i0(T.tensor([1.0, 2.0], dtype=T.float64))]

    for g, r in zip(run(skiff, S), run(torch, torch)):
        _same(g, r)
