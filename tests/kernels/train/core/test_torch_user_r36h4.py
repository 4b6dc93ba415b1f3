"""Round 36 (h4): torch users' programs against torch 2.13 (a DCGAN with two optimizers and
``detach``, a WGAN-GP critic through ``autograd.grad(create_graph=True)`` with an EMA of the
generator) and what they found: ``AveragedModel(use_buffers=True)`` left integer buffers
(``num_batches_tracked``) at their first copy, reductions wrapped a dim out of range
(``x.sum(dim=3)`` of a matrix summed dim 1) and took ``dim=()`` as no reduction, a kernel
larger than the input and a pool too small gave empty tensors, BatchNorm trained on one value
per channel, ``binary_cross_entropy`` of values outside [0, 1]; numpy's broadcast errors were
ValueErrors (torch's RuntimeError and words now); ``is_cuda``/``is_sparse`` were missing."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")


def _close(a, b, rtol=1e-10):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=rtol, atol=1e-12)


def _copy(sm, tm):
    sm.load_state_dict({k: skiff.tensor(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})


def _nets(lib, critic=False):
    nn = lib.nn
    g = nn.Sequential(nn.ConvTranspose2d(4, 6, 4, 1, 0, bias=False, dtype=lib.float64),
                      nn.BatchNorm2d(6, dtype=lib.float64), nn.ReLU(True),
                      nn.ConvTranspose2d(6, 1, 4, 2, 1, bias=False, dtype=lib.float64),
                      nn.Tanh())
    norm = nn.LayerNorm([6, 4, 4], dtype=lib.float64) if critic else nn.BatchNorm2d(
        6, dtype=lib.float64)
    d = nn.Sequential(nn.Conv2d(1, 6, 4, 2, 1, bias=False, dtype=lib.float64),
                      nn.LeakyReLU(0.2, inplace=True), norm,
                      nn.Conv2d(6, 1, 4, 1, 0, bias=False, dtype=lib.float64), nn.Flatten(0))
    return g, d


RNG = np.random.default_rng(36)
REAL = np.tanh(RNG.standard_normal((4, 3, 1, 8, 8)))
Z = RNG.standard_normal((4, 3, 4, 1, 1))
ALPHA = RNG.random((4, 3, 1, 1, 1))


@pytest.fixture(scope="module")
def nets():
    torch.manual_seed(0)
    out = {}
    for critic in (False, True):
        tg, td = _nets(torch, critic)
        sg, sd = _nets(skiff, critic)
        _copy(sg, tg)
        _copy(sd, td)
        out[critic] = ((sg, sd), (tg, td))
    return out


def _state(m):
    return {k: np.asarray(v.detach().numpy()) for k, v in m.state_dict().items()}


def test_dcgan_two_optimizers_and_detach_follow_torch(nets):
    res = []
    for lib, (g, d) in zip((skiff, torch), nets[False]):
        crit = lib.nn.BCEWithLogitsLoss()
        od = lib.optim.Adam(d.parameters(), lr=2e-3, betas=(0.5, 0.999))
        og = lib.optim.Adam(g.parameters(), lr=2e-3, betas=(0.5, 0.999))
        rec = []
        for it in range(4):
            x, z = lib.tensor(REAL[it]), lib.tensor(Z[it])
            d.zero_grad()
            label = lib.full((3,), 1.0, dtype=lib.float64)
            err_real = crit(d(x), label)
            err_real.backward()
            fake = g(z)
            label.fill_(0.0)
            err_fake = crit(d(fake.detach()), label)
            err_fake.backward()
            od.step()
            g.zero_grad()
            label.fill_(1.0)
            err_g = crit(d(fake), label)
            err_g.backward()
            og.step()
            rec += [err_real.item(), err_fake.item(), err_g.item()]
        res.append((rec, _state(g), _state(d)))
    _close(res[0][0], res[1][0])
    for k in (1, 2):
        assert sorted(res[0][k]) == sorted(res[1][k])
        for name, v in res[1][k].items():
            _close(res[0][k][name], v)


def test_wgan_gp_with_ema_generators_follows_torch(nets):
    res = []
    for lib, (g, d) in zip((skiff, torch), nets[True]):
        su = lib.optim.swa_utils
        ema = su.AveragedModel(g, multi_avg_fn=su.get_ema_multi_avg_fn(0.9))
        ema_b = su.AveragedModel(g, avg_fn=su.get_ema_avg_fn(0.8), use_buffers=True)
        od = lib.optim.Adam(d.parameters(), lr=1e-3, betas=(0.0, 0.9))
        og = lib.optim.Adam(g.parameters(), lr=1e-3, betas=(0.0, 0.9))
        rec = []
        for it in range(4):
            x, z = lib.tensor(REAL[it]), lib.tensor(Z[it])
            od.zero_grad(set_to_none=True)
            fake = g(z).detach()
            a = lib.tensor(ALPHA[it])
            mix = (a * x + (1 - a) * fake).requires_grad_(True)
            out = d(mix)
            grad = lib.autograd.grad(out, mix, grad_outputs=lib.ones_like(out),
                                     create_graph=True, retain_graph=True)[0]
            gp = ((grad.view(grad.size(0), -1).norm(2, dim=1) - 1) ** 2).mean()
            loss_d = d(fake).mean() - d(x).mean() + 10 * gp
            loss_d.backward()
            od.step()
            og.zero_grad()
            loss_g = -d(g(z)).mean()
            loss_g.backward()
            og.step()
            g(z)  # one more batch-norm pass: num_batches_tracked moves by 2 a step
            ema.update_parameters(g)
            ema_b.update_parameters(g)
            rec += [loss_d.item(), gp.item(), loss_g.item()]
        res.append((rec, _state(ema), _state(ema_b)))
    _close(res[0][0], res[1][0])
    for k in (1, 2):
        for name, v in res[1][k].items():
            _close(res[0][k][name], v)
    # the EMA of the integer buffer, truncated as torch's copy_: 2 -> 3 (0.8 * 2 + 0.2 * 6 =
    # 2.8), not the first copy
    assert int(res[0][2]["module.1.num_batches_tracked"]) == int(
        res[1][2]["module.1.num_batches_tracked"]) != 2 * 1


@pytest.mark.parametrize("kind", ["swa", "ema_fn", "ema_multi", "user_fn"])
def test_averaged_model_averages_integer_buffers_as_torch(kind):
    res = []
    for lib in (skiff, torch):
        su = lib.optim.swa_utils
        kw = {"swa": {}, "ema_fn": {"avg_fn": su.get_ema_avg_fn(0.6)},
              "ema_multi": {"multi_avg_fn": su.get_ema_multi_avg_fn(0.6)},
              "user_fn": {"avg_fn": lambda a, c, n: a + (c - a) / (n + 1)}}[kind]
        m = lib.nn.BatchNorm1d(2, dtype=lib.float64)
        avg = su.AveragedModel(m, use_buffers=True, **kw)
        seen = []
        for i in range(5):
            for _ in range(i + 1):  # 1, 2, 3, ... batches between updates
                m(lib.tensor(np.arange(6.0).reshape(3, 2) * (i + 1)))
            avg.update_parameters(m)
            seen.append([float(v) for v in (avg.module.num_batches_tracked,
                                             avg.module.running_mean[0],
                                             avg.module.running_var[1], avg.n_averaged)])
        res.append(seen)
    _close(res[0], res[1], rtol=1e-12)


def test_ema_decay_out_of_range_refused_as_torch():
    for lib in (skiff, torch):
        for fn in (lib.optim.swa_utils.get_ema_avg_fn, lib.optim.swa_utils.get_ema_multi_avg_fn):
            with pytest.raises(ValueError, match="Invalid decay value 1.5"):
                fn(1.5)


REDUCTIONS = ["sum", "mean", "amax", "amin", "nansum", "std", "var", "norm", "logsumexp"]


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_dims_checked_as_torch(name):
    a = np.arange(6.0).reshape(2, 3)
    for dim in (3, -3, (0, 5)):  # wrapped silently before: sum(dim=3) summed dim 1
        for lib in (skiff, torch):
            with pytest.raises(IndexError, match="Dimension out of range"):
                getattr(lib.tensor(a), name)(dim=dim)
    for dim in ((0, 0), (1, -1)):
        for lib in (skiff, torch):
            with pytest.raises(RuntimeError, match="appears multiple times"):
                getattr(lib.tensor(a), name)(dim=dim)
    ok = [(-1, a), (0, np.float64(2.5))]  # a 0-d tensor's dim 0 and -1 as torch's
    if name != "logsumexp":  # torch's dim=(): every dim (logsumexp refuses it)
        ok.append(((), a))
    for dim, x in ok:
        for keep in (False, True):
            with np.errstate(all="ignore"):
                want = getattr(torch.tensor(x), name)(dim=dim, keepdim=keep)
                got = getattr(skiff.tensor(x), name)(dim=dim, keepdim=keep)
            assert tuple(got.shape) == tuple(want.shape), (dim, keep)
            _close(got.numpy(), want.numpy())


def test_numpy_axis_keeps_its_meaning():
    x = skiff.tensor(np.arange(6.0).reshape(2, 3))
    assert x.sum(axis=()).shape == (2, 3)  # numpy's: no axis reduced
    assert np.asarray(np.sum(x, axis=1)).tolist() == [3.0, 12.0]


def test_kernel_larger_than_input_and_empty_pools_raise_as_torch():
    cases = [
        lambda L: L.nn.functional.conv2d(L.ones(1, 3, 2, 5), L.ones(4, 3, 3, 3)),
        lambda L: L.nn.functional.conv2d(L.ones(1, 3, 5, 5), L.ones(4, 3, 3, 3), dilation=3),
        lambda L: L.nn.Conv2d(3, 4, 3)(L.ones(3, 2, 2)),
        lambda L: L.nn.functional.max_pool2d(L.ones(1, 2, 2, 5), 3),
        lambda L: L.nn.functional.avg_pool2d(L.ones(1, 2, 2, 5), 3),
    ]
    for case in cases:
        msgs = []
        for lib in (skiff, torch):
            with pytest.raises(RuntimeError) as e:
                case(lib)
            msgs.append(str(e.value).split("\n")[0])
        assert msgs[0] == msgs[1]
    # padding makes room, as torch's
    assert skiff.nn.functional.conv2d(skiff.ones(1, 3, 2, 2), skiff.ones(4, 3, 3, 3),
                                      padding=1).shape == (1, 4, 2, 2)


def test_batch_norm_refuses_one_value_per_channel_when_training():
    for shape in ((1, 3), (1, 3, 1), (1, 3, 1, 1)):
        for lib in (skiff, torch):
            m = (lib.nn.BatchNorm2d if len(shape) == 4 else lib.nn.BatchNorm1d)(3)
            with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
                m(lib.ones(*shape))
            m.eval()
            assert tuple(m(lib.ones(*shape)).shape) == shape  # eval: running statistics
    x = np.arange(6.0, dtype=np.float32).reshape(1, 3, 2)  # two values a channel: trains
    _close(skiff.nn.BatchNorm1d(3)(skiff.tensor(x)).detach(),
           torch.nn.BatchNorm1d(3)(torch.tensor(x)).detach(), rtol=1e-6)


@pytest.mark.parametrize("p,t,which", [([0.5, 1.5], [0.0, 1.0], "input"),
                                       ([0.5, 0.5], [0.0, -0.5], "target"),
                                       ([np.nan, 0.5], [0.0, 1.0], "input")])
def test_binary_cross_entropy_range_checked_as_torch(p, t, which):
    for lib in (skiff, torch):
        with pytest.raises(RuntimeError, match=f"all elements of {which} should be between"):
            lib.nn.functional.binary_cross_entropy(lib.tensor(p), lib.tensor(t))
    _close(skiff.nn.BCELoss()(skiff.tensor([0.0, 1.0]), skiff.tensor([1.0, 0.0])),
           torch.nn.BCELoss()(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.0])))


@pytest.mark.parametrize("case", [
    lambda L: L.ones(2) + L.ones(3),
    lambda L: L.ones(4, 2, 3) * L.ones(5, 1, 3),
    lambda L: L.ones(2, 3).expand(4, 3),
    lambda L: L.ones(2, 1, 3).expand(5, 3, 7, 3),
    lambda L: L.stack([L.ones(2, 3), L.ones(2, 3), L.ones(2, 4)]),
])
def test_shape_mismatches_are_runtime_errors_with_torch_words(case):
    msgs = []
    for lib in (skiff, torch):
        with pytest.raises(RuntimeError) as e:
            case(lib)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    with pytest.raises(ValueError):  # skiff's own except ValueError: still catches them
        case(skiff)


def test_device_and_layout_flags_as_torch():
    s, t = skiff.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    for name in ("is_cuda", "is_cpu", "is_sparse", "is_sparse_csr", "is_quantized", "is_meta",
                 "is_nested", "is_mkldnn"):
        assert getattr(s, name) is getattr(t, name), name
    emb = skiff.nn.Embedding(5, 2, sparse=True)
    emb(skiff.tensor([1, 3])).sum().backward()
    assert emb.weight.grad.is_sparse is False  # skiff's gradients are dense (same values)


@pytest.mark.parametrize("cap", [0, 32 << 20])
def test_strided_conv_keeps_its_columns_for_the_weight_gradient(cap, monkeypatch):
    """A stride-2 layer's 9.6 MB of columns (over KEEP_COLS) are kept up to KEEP_COLS_STRIDED
    (rebuilt with 0); gradients as torch's either way; nothing kept without a weight grad."""
    from skiff.kernels.train.core.nn.functional import conv as C

    monkeypatch.setattr(C, "KEEP_COLS_STRIDED", cap)
    g = torch.Generator().manual_seed(36)
    x = torch.randn(40, 32, 30, 30, generator=g, requires_grad=True)
    w = torch.randn(16, 32, 3, 3, generator=g, requires_grad=True)
    gy = torch.randn(40, 16, 15, 15, generator=g)
    sx, sw = skiff.tensor(x.detach().numpy(), requires_grad=True), skiff.tensor(
        w.detach().numpy(), requires_grad=True)
    torch.nn.functional.conv2d(x, w, stride=2, padding=1).backward(gy)
    y = skiff.nn.functional.conv2d(sx, sw, stride=2, padding=1)
    assert (y._node.cols is not None) == bool(cap)
    y.backward(skiff.tensor(gy.numpy()))
    np.testing.assert_allclose(sw.grad.numpy(), w.grad.numpy(), rtol=2e-4, atol=2e-3)
    np.testing.assert_allclose(sx.grad.numpy(), x.grad.numpy(), rtol=2e-4, atol=2e-4)
    frozen = skiff.tensor(w.detach().numpy())  # a frozen layer: no columns to keep
    assert skiff.nn.functional.conv2d(sx, frozen, stride=2, padding=1)._node.cols is None


WRAPPED = {  # each took ``dim % ndim`` (another axis, silently) where torch raises
    "unsqueeze": lambda L, x: x.unsqueeze(3), "unsqueeze_neg": lambda L, x: x.unsqueeze(-4),
    "squeeze": lambda L, x: x.squeeze(2), "flatten": lambda L, x: x.flatten(0, 5),
    "Flatten": lambda L, x: L.nn.Flatten(3)(x), "movedim": lambda L, x: x.movedim(2, 0),
    "cumprod": lambda L, x: x.cumprod(-3), "select": lambda L, x: x.select(2, 0),
    "scatter": lambda L, x: x.scatter(2, L.zeros(2, 3, dtype=L.long), 1.0),
    "scatter_grad": lambda L, x: x.requires_grad_().scatter(2, L.zeros(2, 3, dtype=L.long),
                                                            1.0),
    "index_fill": lambda L, x: x.index_fill(-3, L.tensor([0]), 2.0),
    "index_copy": lambda L, x: x.index_copy(2, L.tensor([0]), L.ones(2, 1, dtype=L.float64)),
    "renorm": lambda L, x: x.renorm(2, 2, 1.0), "unflatten": lambda L, x: x.unflatten(2, (1, 3)),
}


@pytest.mark.parametrize("name", sorted(WRAPPED))
def test_dims_out_of_range_raise_as_torch(name):
    msgs = []
    for lib in (skiff, torch):
        with pytest.raises(IndexError) as e:
            WRAPPED[name](lib, lib.tensor(np.arange(6.0).reshape(2, 3)))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("case", [lambda L, x: x.narrow(1, 3, 1), lambda L, x: x.narrow(1, 2, 2),
                                  lambda L, x: x.expand(-1, 2, 3)])
def test_narrow_past_the_end_and_leading_minus_one_raise_as_torch(case):
    msgs = []
    for lib in (skiff, torch):
        with pytest.raises(RuntimeError) as e:
            case(lib, lib.tensor(np.arange(6.0).reshape(2, 3)))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_in_range_dims_still_follow_torch():
    a = np.arange(6.0).reshape(2, 3)
    for f in (lambda L, x: x.narrow(1, -1, 1), lambda L, x: x.narrow(-1, 3, 0),
              lambda L, x: x.unsqueeze(-3), lambda L, x: x.unsqueeze(2), lambda L, x: x.squeeze(-2),
              lambda L, x: x.flatten(-2, -1), lambda L, x: x.movedim(-1, 0),
              lambda L, x: x.select(-1, 2), lambda L, x: x.cumprod(-2),
              lambda L, x: x.expand(4, -1, -1), lambda L, x: L.tensor(5.0).unsqueeze(-1),
              lambda L, x: L.tensor(5.0).flatten(0, -1)):
        want = f(torch, torch.tensor(a))
        got = f(skiff, skiff.tensor(a))
        assert tuple(got.shape) == tuple(want.shape)
        _close(got.numpy(), want.numpy())


def test_clamp_with_min_above_max_gives_max_as_torch():
    for lo, hi in ((3.0, 1.0), (1.0, 3.0)):
        res = []
        for lib in (skiff, torch):
            x = lib.tensor([0.0, 2.0, 5.0, 1.0], requires_grad=True)
            y = x.clamp(lo, hi)
            (y * lib.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
            res.append((y.detach().numpy(), x.grad.numpy()))
        _close(res[0][0], res[1][0])
        _close(res[0][1], res[1][1])


def test_maximum_and_minimum_propagate_nan_as_torch():
    a, b = [1.0, np.nan, 3.0, 2.0], [2.0, 0.0, np.nan, 2.0]
    for op in ("maximum", "minimum"):
        got = getattr(skiff, op)(skiff.tensor(a), skiff.tensor(b)).numpy()
        want = getattr(torch, op)(torch.tensor(a), torch.tensor(b)).numpy()
        np.testing.assert_array_equal(got, want)  # nan where either is (was: the other value)
    np.testing.assert_array_equal(skiff.fmax(skiff.tensor(a), skiff.tensor(b)).numpy(),
                                  torch.fmax(torch.tensor(a), torch.tensor(b)).numpy())


def test_descending_sort_and_topk_put_nan_first_as_torch():
    x = np.array([[2.0, np.nan, 1.0, np.inf, np.nan], [1.0, 5.0, 3.0, 4.0, 2.0]])
    for f in (lambda L, t: t.sort(dim=1, descending=True, stable=True),
              lambda L, t: t.topk(3, dim=1), lambda L, t: t.T.topk(2, dim=0),
              lambda L, t: t.sort(dim=1), lambda L, t: t.topk(2, largest=False),
              lambda L, t: (t.argsort(dim=1, descending=True),)):
        got, want = f(skiff, skiff.tensor(x)), f(torch, torch.tensor(x))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_dropout_with_p_one_drops_everything_as_torch():
    for lib in (skiff, torch):
        x = lib.ones(3, requires_grad=True)
        y = lib.nn.functional.dropout(x, 1.0)
        y.sum().backward()
        assert y.detach().numpy().tolist() == [0.0] * 3 and x.grad.numpy().tolist() == [0.0] * 3
        assert lib.nn.Dropout(1.0)(lib.ones(2)).numpy().tolist() == [0.0, 0.0]
        with pytest.raises(ValueError, match="has to be between 0 and 1, but got 1.5"):
            lib.nn.functional.dropout(x, 1.5)


NEGATIVE = {  # numpy's indexing counted -1 from the end, silently; torch refuses it
    "gather": lambda L: L.ones(2, 3).gather(1, L.tensor([[-1], [0]])),
    "index_select": lambda L: L.ones(2, 3).index_select(1, L.tensor([-1])),
    "scatter": lambda L: L.zeros(3).scatter(0, L.tensor([-1]), 1.0),
    "scatter_grad": lambda L: L.zeros(3, requires_grad=True).scatter(0, L.tensor([-1]), 1.0),
    "scatter_add": lambda L: L.zeros(3).scatter_add(0, L.tensor([-1]), L.ones(1)),
    "index_add": lambda L: L.zeros(3).index_add(0, L.tensor([-1]), L.ones(1)),
    "index_copy": lambda L: L.zeros(3).index_copy(0, L.tensor([-1]), L.ones(1)),
}


@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_negative_indices_refused_as_torch(name):
    for lib in (skiff, torch):  # torch: RuntimeError or IndexError; skiff's is both
        with pytest.raises(RuntimeError if name in ("gather", "index_select", "scatter",
                                                    "scatter_grad", "scatter_add")
                           else IndexError):
            NEGATIVE[name](lib)


def test_autograd_misuse_raises_runtime_errors_as_torch():
    cases = [lambda L: L.ones(2, dtype=L.int64).requires_grad_(),  # was accepted silently
             lambda L: L.tensor([1, 2], requires_grad=True),
             lambda L: (L.tensor([1.0, 2.0], requires_grad=True) * 2).backward(L.ones(3))]
    for case in cases:
        for lib in (skiff, torch):
            with pytest.raises(RuntimeError):
                case(lib)
    assert skiff.ones(2, dtype=skiff.int64).requires_grad_(False).requires_grad is False


def test_state_dict_prefix_keep_vars_destination_as_torch():
    res = []
    for lib in (skiff, torch):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
        kv = m.state_dict(keep_vars=True)
        dest = {"step": 3}
        out = m.state_dict(destination=dest, prefix="model.")
        assert out is dest
        res.append((list(m.state_dict(prefix="model.")), list(dest),
                    kv["0.weight"] is m[0].weight, kv["0.weight"].requires_grad,
                    kv["1.running_mean"] is m[1].running_mean))
    assert res[0] == res[1]


def test_batch_norm_of_an_empty_batch_is_empty_as_torch():
    for lib in (skiff, torch):
        m = lib.nn.BatchNorm1d(3)
        assert tuple(m(lib.ones(0, 3)).shape) == (0, 3)
        assert m.running_mean.numpy().tolist() == [0.0] * 3 and int(m.num_batches_tracked) == 1
        assert tuple(lib.nn.BatchNorm2d(3).eval()(lib.ones(0, 3, 2, 2)).shape) == (0, 3, 2, 2)
        w = lib.ones(3, requires_grad=True)
        lib.nn.functional.batch_norm(lib.ones(0, 3), None, None, w, None, True).sum().backward()
        assert w.grad.numpy().tolist() == [0.0] * 3


def test_expand_to_fewer_dims_raises_as_torch():
    for lib in (skiff, torch):
        with pytest.raises(RuntimeError, match="the number of sizes provided \\(1\\) must be "
                                               "greater or equal"):
            lib.ones(2, 3).expand(3)
