"""Round 33: a torch user's programs, eleventh pass. torch 2.13 on CPU is the oracle (float64,
values to 1e-10): torch 2's ``autograd.Function`` with ``setup_context``, ``mark_dirty``
handing back the input itself, a param group whose ``params`` is one tensor,
``inference_mode(False)`` and a plain ``set_grad_enabled(False)`` call,
``scaled_dot_product_attention(enable_gqa=True)``, average pooling with ``ceil_mode``,
``nn.utils.get_total_norm`` / ``clip_grads_with_norm_``."""

import itertools

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(33)


def _close(got, ref, tol=1e-10):
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), ref.detach().numpy(),
                               rtol=tol, atol=1e-12)


def _setup_context_fn(T):
    class Cube(T.autograd.Function):
        @staticmethod
        def forward(x, p):
            return x ** p

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, p = inputs
            ctx.save_for_backward(x)
            ctx.p = p

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.p * x ** (ctx.p - 1), None

    return Cube


def test_function_with_setup_context():
    x = RNG.standard_normal(5)
    out = []
    for T in (torch, skiff):
        t = T.tensor(x, requires_grad=True)
        y = _setup_context_fn(T).apply(t, 3)
        (y * T.tensor(np.arange(5.0))).sum().backward()
        out.append((y, t.grad))
    _close(out[1][0], out[0][0])
    _close(out[1][1], out[0][1])


def test_mark_dirty_returns_the_input_in_the_graph():
    a0 = RNG.standard_normal(4)
    res = []
    for T in (torch, skiff):
        class Double(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                x.mul_(2)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        a = T.tensor(a0, requires_grad=True)
        b = a.clone()
        c = Double.apply(b)
        assert c is b
        (c * c).sum().backward()
        res.append((b, a.grad))
    _close(res[1][0], res[0][0])
    _close(res[1][1], res[0][1])


def test_param_group_of_one_tensor_and_optimizer_of_one_tensor():
    w0, b0 = RNG.standard_normal((2, 3)), RNG.standard_normal(2)
    x = RNG.standard_normal((4, 3))
    res = []
    for T in (torch, skiff):
        w, b = T.tensor(w0, requires_grad=True), T.tensor(b0, requires_grad=True)
        opt = T.optim.SGD([{"params": w, "lr": 0.1}, {"params": [b]}], lr=0.05, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            ((T.tensor(x) @ w.T + b) ** 2).mean().backward()
            opt.step()
        res.append((w, b))
        with pytest.raises(TypeError, match="iterable of Tensors"):
            T.optim.SGD(w, lr=0.1)
    _close(res[1][0], res[0][0])
    _close(res[1][1], res[0][1])


def test_grad_mode_switches():
    for T in (torch, skiff):
        x = T.ones(2, requires_grad=True)
        with T.inference_mode():
            assert not (x * 2).requires_grad
            with T.inference_mode(False):
                assert T.is_grad_enabled()  # torch: grad mode on inside
            with T.inference_mode(False):
                assert (x * 2).requires_grad

        @T.inference_mode
        def f(z):
            return z * 2

        assert not f(x).requires_grad
        T.set_grad_enabled(False)  # a plain call takes effect at once
        try:
            assert not (x * 3).requires_grad
        finally:
            T.set_grad_enabled(True)
        assert (x * 3).requires_grad

        @T.set_grad_enabled(False)
        def g(z):
            return z * 2

        assert T.is_grad_enabled() and not g(x).requires_grad


def test_sdpa_enable_gqa():
    q, k, v = (RNG.standard_normal(s) for s in ((2, 6, 5, 4), (2, 2, 7, 4), (2, 2, 7, 4)))
    w = RNG.standard_normal((2, 6, 5, 4))
    res = []
    for T in (torch, skiff):
        ts = [T.tensor(a, requires_grad=True) for a in (q, k, v)]
        o = T.nn.functional.scaled_dot_product_attention(*ts, is_causal=True, enable_gqa=True)
        (o * T.tensor(w)).sum().backward()
        res.append([o] + [t.grad for t in ts])
    for g, r in zip(res[1], res[0]):
        _close(g, r)
    with pytest.raises(ValueError, match="multiple"):
        skiff.nn.functional.scaled_dot_product_attention(
            *(skiff.tensor(a) for a in (q[:, :5], k, v)), enable_gqa=True)


@pytest.mark.parametrize("nd,size,k,s,p,cip", [
    c for c in itertools.product((1, 2, 3), (5, 6), (3,), (2,), (0, 1), (True, False))
    if c[0] < 3 or c[1] == 5] + [(2, 7, 2, 3, 1, True), (1, 6, 3, 3, 0, False)])
def test_avg_pool_ceil_mode(nd, size, k, s, p, cip):
    x = RNG.standard_normal((2, 3) + (size,) * nd)
    res = []
    for T in (torch, skiff):
        t = T.tensor(x, requires_grad=True)
        y = getattr(T.nn.functional, f"avg_pool{nd}d")(t, k, s, p, ceil_mode=True,
                                                       count_include_pad=cip)
        (y * T.tensor(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape)))).sum().backward()
        res.append((y, t.grad))
    assert tuple(res[1][0].shape) == tuple(res[0][0].shape)
    _close(res[1][0], res[0][0])
    _close(res[1][1], res[0][1])


@pytest.mark.parametrize("norm_type", [2.0, 1.0, "inf", 3.0])
def test_get_total_norm_and_clip_grads_with_norm(norm_type):
    ws = [RNG.standard_normal((3, 2)), RNG.standard_normal(4)]
    res = []
    for T in (torch, skiff):
        ps = [T.tensor(w, requires_grad=True) for w in ws]
        (ps[0].sin().sum() * ps[1].pow(3).sum()).backward()
        total = T.nn.utils.get_total_norm([p.grad for p in ps], norm_type=norm_type)
        T.nn.utils.clip_grads_with_norm_(ps, 0.5, total)
        n2 = T.nn.utils.clip_grad_norm_(ps, 0.1, norm_type=norm_type, foreach=True)
        res.append([total, n2] + [p.grad for p in ps])
    for g, r in zip(res[1], res[0]):
        _close(g, r)


def test_poisson_nll_full_differentiates_the_target():
    x, t = np.array([-1.0, 0.3, 2.0, 0.5, 1.5]), np.array([0.5, 0.5, 1.0, 3.0, 7.5])
    res = []
    for T in (torch, skiff):
        a, b = T.tensor(x, requires_grad=True), T.tensor(t, requires_grad=True)
        T.nn.functional.poisson_nll_loss(a, b, full=True).backward()
        res.append((a.grad, b.grad))
    _close(res[1][0], res[0][0])
    _close(res[1][1], res[0][1])


@pytest.mark.parametrize("sa,sb", [((4,), (4,)), ((4,), (4, 3)), ((3, 4), (4,)),
                                   ((2, 3, 4), (4,)), ((4,), (2, 4, 3))])
def test_matmul_of_vectors_differentiated_twice(sa, sb):
    A, B = RNG.standard_normal(sa), RNG.standard_normal(sb)
    res = []
    for T in (torch, skiff):
        a, b = T.tensor(A, requires_grad=True), T.tensor(B, requires_grad=True)
        y = a @ b
        ga, gb = T.autograd.grad((y * y).sum(), [a, b], create_graph=True)
        res.append((ga, gb) + T.autograd.grad(ga.sin().sum() + gb.pow(2).sum(), [a, b]))
    for g, r in zip(res[1], res[0]):
        _close(g, r)


def test_forward_ad_of_a_vector_dot():
    x, v = RNG.standard_normal(4), RNG.standard_normal(4)
    res = []
    for T in (torch, skiff):
        fw = T.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(T.tensor(x), T.tensor(v))
            res.append(fw.unpack_dual(d @ d + (d.sin() * d).sum()))
    _close(res[1][0], res[0][0])
    _close(res[1][1], res[0][1])


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
@pytest.mark.parametrize("bi,layers,h0,bf,sortd", [(False, 1, False, True, True),
                                                   (True, 2, True, False, False)])
def test_packed_rnn_in_one_node(kind, bi, layers, h0, bf, sortd):
    """Packed sequences run the fused recurrence (the state carried past each end): outputs,
    final states, gradients and gradients of gradients equal torch's."""
    res = []
    for T in (torch, skiff):
        rnn = T.nn.utils.rnn
        m = getattr(T.nn, kind)(3, 5, num_layers=layers, bidirectional=bi, batch_first=bf,
                                dtype=T.float64)
        rng = np.random.default_rng(0)
        with T.no_grad():
            for p in m.parameters():
                p.copy_(T.tensor(rng.standard_normal(tuple(p.shape)) * 0.5))
        lens = [6, 4, 4, 1] if sortd else [2, 6, 3, 5]
        x = T.tensor(rng.standard_normal((4, 6, 3)), requires_grad=True)
        pk = rnn.pack_padded_sequence(x if bf else x.transpose(0, 1), T.tensor(lens),
                                      batch_first=bf, enforce_sorted=sortd)
        st = hh = None
        if h0:
            hh = T.tensor(rng.standard_normal((layers * (1 + bi), 4, 5)), requires_grad=True)
            st = hh if kind == "GRU" else (hh, T.tensor(rng.standard_normal(tuple(hh.shape))))
        out, fin = m(pk, st)
        o, _ = rnn.pad_packed_sequence(out, batch_first=bf)
        f = fin if kind == "GRU" else fin[0] + 2 * fin[1]
        loss = (o * T.tensor(rng.standard_normal(tuple(o.shape)))).sum() + (f ** 2).sum()
        ins = [x] + list(m.parameters()) + ([hh] if h0 else [])
        gs = T.autograd.grad(loss, ins, create_graph=True)
        g2 = T.autograd.grad(sum((g ** 2).sum() for g in gs[:3]), [x, ins[2]])
        res.append([o, f, *gs, *g2])
    for g, r in zip(res[1], res[0]):
        _close(g, r)


def _containers(T):
    import collections

    nn = T.nn
    out = []
    s = nn.Sequential(collections.OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.ReLU()),
                                               ("out", nn.Linear(3, 1))]))
    out += [list(s.state_dict()), type(s.fc).__name__]
    out.append([n for n, _ in s[1:].named_children()])
    del s[1]
    out.append([n for n, _ in s.named_children()])
    s.insert(0, nn.Tanh())
    s.pop(0)
    s.append(nn.Sigmoid())
    out.append([(n, type(m).__name__) for n, m in s.named_children()])
    out += [len(s + nn.Sequential(nn.ReLU())), len(s * 2)]
    s[0] = nn.Identity()
    out.append(type(s[0]).__name__)
    q = nn.Sequential()
    q.add_module("a", nn.Linear(2, 3))
    q.append(nn.ReLU())
    q.extend([nn.Linear(3, 1)])
    q.insert(1, nn.Identity())  # numbered entries move up, "a" stays
    out.append([(n, type(m).__name__) for n, m in q.named_children()])
    ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    ml += [nn.Sigmoid()]
    ml.insert(1, nn.ELU())
    del ml[0]
    out.append([(n, type(m).__name__) for n, m in (ml + nn.ModuleList([nn.ReLU()]))
                .named_children()])
    md = nn.ModuleDict({"a": nn.ReLU()})
    md.update({"b": nn.Tanh()})
    md.update([("c", nn.ELU())])
    out += [type(md.pop("a")).__name__, list(md)]
    del md["b"]
    out.append(list(md.keys()))
    with pytest.raises(TypeError, match="not a Module subclass"):
        nn.Sequential().add_module("x", 3)
    return out


def test_module_containers_as_torch():
    assert _containers(skiff) == _containers(torch)


def _step_hooks(T, register_global):
    w = T.nn.Parameter(T.ones(2, dtype=T.float64))
    opt = T.optim.SGD([w], lr=0.5)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", len(a), o is opt)))
    opt.register_step_post_hook(lambda o, a, k: calls.append(("post", len(a))))
    glob = register_global(lambda o, a, k: calls.append("global"))

    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    h1.remove()
    glob.remove()
    w.grad = T.ones(2, dtype=T.float64)
    opt.step()
    return calls, w.detach().numpy().tolist()


def test_optimizer_step_hooks():
    from torch.optim.optimizer import register_optimizer_step_post_hook as torch_global

    from skiff.optim.optimizer import register_optimizer_step_post_hook as skiff_global

    assert _step_hooks(skiff, skiff_global) == _step_hooks(torch, torch_global)


def _offloaded_training_step(T, hooks):
    nn = T.nn
    rng = np.random.default_rng(5)
    m = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3)).double()
    lstm = nn.LSTM(3, 5, batch_first=True, dtype=T.float64)
    for p in [*m.parameters(), *lstm.parameters()]:
        with T.no_grad():
            p.copy_(T.tensor(rng.standard_normal(tuple(p.shape)) * 0.4))
    x = T.tensor(rng.standard_normal((2, 6, 4)))
    store, count = {}, [0, 0]

    def pack(t):
        count[0] += 1
        store[count[0]] = t.clone()  # "to disk": a copy kept aside, a key in the graph
        return count[0]

    def unpack(k):
        count[1] += 1
        return store.pop(k)

    ctx = (T.autograd.graph.saved_tensors_hooks(pack, unpack) if hooks == "hooks" else
           T.autograd.graph.save_on_cpu())
    with ctx:
        out, (h, c) = lstm(m(x))
        loss = (out ** 2).sum() + (h * c).sum()
    loss.backward()
    if hooks == "hooks":
        assert count[0] > 0 and count[0] == count[1] and not store
    return [loss] + [p.grad for p in [*m.parameters(), *lstm.parameters()]]


@pytest.mark.parametrize("hooks", ["hooks", "save_on_cpu"])
def test_saved_tensors_hooks(hooks):
    ref = _offloaded_training_step(torch, hooks)
    got = _offloaded_training_step(skiff, hooks)
    for g, r in zip(got, ref):
        _close(g, r)


@pytest.mark.parametrize("call", [
    "F.interpolate(x1, size=3, mode='area')",
    "F.interpolate(x2, size=(3, 4), mode='area')",
    "F.interpolate(x3, size=(2, 5, 3), mode='area')",
    "F.interpolate(x1, scale_factor=2.5, mode='nearest-exact')",
    "F.interpolate(x2, scale_factor=0.7, mode='nearest-exact')",
    "F.adaptive_avg_pool2d(x2, (3, 4))",
    "F.adaptive_avg_pool2d(x2, (None, 3))",
    "F.adaptive_avg_pool2d(x2[0], 3)",
])
def test_area_nearest_exact_and_adaptive_bins(call):
    arrays = [RNG.standard_normal(s) for s in ((1, 2, 5), (2, 1, 5, 7), (1, 1, 3, 7, 4))]
    res = []
    for T in (torch, skiff):
        xs = [T.tensor(a, requires_grad=True) for a in arrays]
        y = eval(call, {"F": T.nn.functional, "x1": xs[0], "x2": xs[1], "x3": xs[2]})
        (y * T.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))).sum().backward()
        res.append([y] + [x.grad if x.grad is not None else T.zeros(1) for x in xs])
    assert tuple(res[1][0].shape) == tuple(res[0][0].shape)
    for g, r in zip(res[1], res[0]):
        _close(g, r)


@pytest.mark.parametrize("bias_kv,zero_attn,kdim,masks,need", [
    (True, False, None, "kpm", True), (False, True, None, "attn", False),
    (True, True, 5, "both", True), (True, True, None, None, False)])
def test_mha_add_bias_kv_and_zero_attn(bias_kv, zero_attn, kdim, masks, need):
    rng = np.random.default_rng(7)
    q, k = rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 3, kdim or 8))
    res, names = [], []
    for T in (torch, skiff):
        m = T.nn.MultiheadAttention(8, 2, batch_first=True, kdim=kdim, vdim=kdim,
                                    add_bias_kv=bias_kv, add_zero_attn=zero_attn,
                                    dtype=T.float64)
        with T.no_grad():
            for p in m.parameters():
                p.copy_(T.tensor(np.random.default_rng(p.numel()).standard_normal(
                    tuple(p.shape)) * 0.4))
        kw = {}
        if masks in ("kpm", "both"):
            kw["key_padding_mask"] = T.tensor([[False, False, True], [False] * 3])
        if masks in ("attn", "both"):
            kw["attn_mask"] = T.tensor(rng.standard_normal((4, 3)) * 0 + np.triu(
                np.full((4, 3), -1.5), 1))
        o, w = m(T.tensor(q), T.tensor(k), T.tensor(k), need_weights=need, **kw)
        (o.sum() + (w.pow(2).sum() if need else 0)).backward()
        names.append([n for n, _ in m.named_parameters()])
        res.append([o] + ([w] if need else []) + [p.grad for p in m.parameters()])
    assert names[0] == names[1]
    for g, r in zip(res[1], res[0]):
        _close(g, r)


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_with_zeros(include_self):
    src = np.array([[0.5, 0.0, -2.0, 1.5, 0.0], [3.0, -1.0, 0.0, 2.0, 0.25]])
    base = np.array([[2.0, 0.0, -1.0], [0.0, 1.5, 4.0]])
    idx = np.array([[0, 1, 1, 2, 2], [2, 0, 0, 1, 2]])
    res = []
    for T in (torch, skiff):
        s, b = T.tensor(src, requires_grad=True), T.tensor(base, requires_grad=True)
        r = b.scatter_reduce(1, T.tensor(idx), s, reduce="prod", include_self=include_self)
        (r * T.tensor(np.arange(1.0, 7.0).reshape(2, 3))).sum().backward()
        ints = T.tensor([[2, 3, 1]]).scatter_reduce(1, T.tensor([[0, 0, 2]]),
                                                    T.tensor([[4, 5, 6]]), reduce="prod",
                                                    include_self=include_self)
        res.append([r, s.grad, b.grad, ints])
    for g, r in zip(res[1], res[0]):
        _close(g, r)
