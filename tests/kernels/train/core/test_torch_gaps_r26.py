"""Round 26's torch gaps in the training core, each against torch 2.x on the same inputs:
RMSNorm in 16 bits, ``//``/``%``/``fmod``/``div(rounding_mode=)``/``__index__``, the
``pad`` modes, ``hardtanh``/``relu6``/``mish``, ``skiff.autograd.gradcheck`` and the LR
schedulers' ``last_epoch`` in their state."""

import operator
import warnings

import numpy as np
import pytest

import skiff
import skiff.nn as snn
import skiff.nn.functional as SF

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _s(a, grad=False, dtype="float64"):
    return skiff.tensor(np.array(a), dtype=dtype, requires_grad=grad)


def _t(a, grad=False):
    return torch.tensor(np.array(a), dtype=torch.float64, requires_grad=grad)


def _np(t):
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") and not isinstance(
        t, skiff.Tensor) else t)


# ---- 1. RMSNorm in bfloat16 / float16 -------------------------------------------------------
@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_rms_norm_16_bit_as_torch(dt):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 256)) * 3
    w = rng.standard_normal(256)
    g = rng.standard_normal((16, 256))
    tdt = getattr(torch, dt)
    tx = torch.tensor(x).to(tdt).requires_grad_()
    tw = torch.tensor(w).to(tdt).requires_grad_()
    out_t = torch.nn.RMSNorm(256, eps=1e-6).to(tdt)
    with torch.no_grad():
        out_t.weight.copy_(tw)
    out_t.weight.requires_grad_(False)
    yt = TF.rms_norm(tx, (256,), tw, 1e-6)
    assert torch.equal(yt, out_t(tx))
    sx = skiff.tensor(tx.detach().float().numpy(), dtype=dt, requires_grad=True)
    sw = skiff.tensor(tw.detach().float().numpy(), dtype=dt, requires_grad=True)
    ys = SF.rms_norm(sx, sw, 1e-6)
    assert ys.dtype == np.dtype(sx.dtype)
    # forward: the same bits as torch's (statistics in float32, one rounding)
    np.testing.assert_array_equal(np.asarray(ys).astype(np.float32), yt.detach().float().numpy())
    yt.backward(torch.tensor(g).to(tdt))
    ys.backward(skiff.tensor(g.astype(np.float32), dtype=dt))
    # backward: within one 16-bit rounding of torch's
    gx, gtx = np.asarray(sx.grad).astype(np.float64), tx.grad.double().numpy()
    gw, gtw = np.asarray(sw.grad).astype(np.float64), tw.grad.double().numpy()
    ulp = 2.0 ** -7 if dt == "bfloat16" else 2.0 ** -10
    assert np.all(np.abs(gx - gtx) <= ulp * np.abs(gtx) + 1e-6)
    assert np.all(np.abs(gw - gtw) <= ulp * np.abs(gtw) + 1e-6)


def test_rms_norm_float64_unchanged():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((4, 8)), rng.standard_normal(8)
    sx, sw, tx, tw = _s(x, True), _s(w, True), _t(x, True), _t(w, True)
    ys, yt = SF.rms_norm(sx, sw, 1e-6), TF.rms_norm(tx, (8,), tw, 1e-6)
    np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-12, atol=1e-14)
    (ys * ys).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(np.asarray(sx.grad), _np(tx.grad), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(sw.grad), _np(tw.grad), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dt", ["float64", "float32", "bfloat16"])
def test_rms_norm_torch_signature_and_default_eps(dt):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4, 5)) * 1e-3  # small: the default eps shows
    w = rng.standard_normal((4, 5))
    tdt = getattr(torch, dt)
    tx, tw = torch.tensor(x).to(tdt), torch.tensor(w).to(tdt)
    sx = skiff.tensor(tx.float().numpy() if dt == "bfloat16" else tx.numpy(), dtype=dt)
    sw = skiff.tensor(tw.float().numpy() if dt == "bfloat16" else tw.numpy(), dtype=dt)
    tol = {"float64": 1e-12, "float32": 1e-6, "bfloat16": 0}[dt]
    for args_s, args_t in [(((5,),), ((5,),)), ((5, sw[0]), ((5,), tw[0])),
                           (((4, 5), sw), ((4, 5), tw)), (((4, 5), sw, 1e-3), ((4, 5), tw, 1e-3))]:
        got = np.asarray(SF.rms_norm(sx, *args_s)).astype(np.float64)
        want = TF.rms_norm(tx, *args_t).double().numpy()
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 1e-3)
    ts = torch.nn.RMSNorm((4, 5), elementwise_affine=False).to(tdt)
    ss = snn.RMSNorm((4, 5), eps=None, elementwise_affine=False)
    np.testing.assert_allclose(np.asarray(ss(sx)).astype(np.float64), ts(tx).double().numpy(),
                               rtol=tol, atol=tol * 1e-3)
    assert list(dict(ss.named_parameters())) == list(dict(ts.named_parameters())) == []
    with pytest.raises(ValueError, match="last axes of the input"):
        SF.rms_norm(sx, (4,))


# ---- 2. //, %, fmod, div(rounding_mode), __index__ ------------------------------------------
A = [-7.5, -3.0, 2.0, 5.5, 7.0, -0.0, 5.0, np.inf, -5.0, 1.0, 3.0]
B = [2.0, -2.0, -3.0, 2.0, 3.0, 1.0, 0.0, 2.0, np.inf, -0.0, -3.0]


def _same(s, t):
    sv, tv = np.asarray(s), _np(t)
    assert sv.dtype == tv.dtype, (sv.dtype, tv.dtype)
    np.testing.assert_array_equal(sv, tv)
    num = ~np.isnan(tv) if tv.dtype.kind == "f" else np.ones(tv.shape, bool)
    assert np.array_equal(np.signbit(sv)[num], np.signbit(tv)[num]), (sv, tv)  # signed zeros


def test_floordiv_mod_floats_as_torch():
    sa, sb, ta, tb = _s(A), _s(B), _t(A), _t(B)
    with np.errstate(all="ignore"):
        _same(sa // sb, ta // tb)
        _same(sa % sb, ta % tb)
        _same(sa.fmod(sb), torch.fmod(ta, tb))
        _same(skiff.remainder(sa, sb), torch.remainder(ta, tb))
        _same(skiff.floor_divide(sa, sb), torch.floor_divide(ta, tb))
        _same(sa.div(sb, rounding_mode="trunc"), ta.div(tb, rounding_mode="trunc"))
        _same(sa.div(sb, rounding_mode="floor"), ta.div(tb, rounding_mode="floor"))
        _same(7 // sb, 7 // tb)
        _same(7.5 % sb, 7.5 % tb)
        _same(sa // 2, ta // 2)
        _same(sa % -2.5, ta % -2.5)


def test_floordiv_mod_integers_and_promotion():
    a, b = [-7, -3, 2, 5, 7, 0], [2, -2, -3, 2, 3, 4]
    sa, sb = skiff.tensor(a), skiff.tensor(b)
    ta, tb = torch.tensor(a), torch.tensor(b)
    for fs, ft in [(lambda x, y: x // y, lambda x, y: x // y),
                   (lambda x, y: x % y, lambda x, y: x % y),
                   (lambda x, y: x.fmod(y), torch.fmod),
                   (lambda x, y: x.div(y, rounding_mode="trunc"),
                    lambda x, y: x.div(y, rounding_mode="trunc")),
                   (lambda x, y: x // 2.5, lambda x, y: x // 2.5),
                   (lambda x, y: x % 3, lambda x, y: x % 3),
                   (lambda x, y: 9 // y, lambda x, y: 9 // y)]:
        _same(fs(sa, sb), ft(ta, tb))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        skiff.tensor([3]) // 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        skiff.tensor([3]) % skiff.tensor([0])


def test_inplace_floordiv_mod():
    s, t = skiff.tensor([7, -7, 9]), torch.tensor([7, -7, 9])
    s //= 2
    t //= 2
    _same(s, t)
    s %= 3
    t %= 3
    _same(s, t)
    with pytest.raises(RuntimeError, match="cannot be stored"):
        s //= 2.5
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        s %= 0
    sf, tf = _s([7.5, -7.5, 3.0]), _t([7.5, -7.5, 3.0])
    sf %= -1.5
    tf %= -1.5
    _same(sf, tf)
    # in a graph: the result takes the tensor's place, the gradient is remainder's
    x, y = _s([7.5, -2.5, 4.0], True), _t([7.5, -2.5, 4.0], True)
    u, v = x * 1.0, y * 1.0
    u %= 1.5
    v %= 1.5
    (u * u).sum().backward()
    (v * v).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), _np(y.grad), rtol=1e-12)


def test_remainder_fmod_gradients_as_torch():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((3, 4)) * 5, rng.standard_normal(4) + 0.5 * np.sign(
        rng.standard_normal(4))
    for fs, ft in [(lambda x, y: x % y, lambda x, y: x % y),
                   (lambda x, y: x.fmod(y), torch.fmod),
                   (lambda x, y: x.div(y, rounding_mode="floor"),
                    lambda x, y: x.div(y, rounding_mode="floor"))]:
        sa, sb, ta, tb = _s(a, True), _s(b, True), _t(a, True), _t(b, True)
        ws = fs(sa, sb)
        wt = ft(ta, tb)
        np.testing.assert_allclose(np.asarray(ws), _np(wt), rtol=1e-12, atol=1e-12)
        (ws * ws).sum().backward()
        (wt * wt).sum().backward()
        np.testing.assert_allclose(np.asarray(sa.grad), _np(ta.grad), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(sb.grad), _np(tb.grad), rtol=1e-12, atol=1e-12)
    sa = _s(a, True)
    with pytest.raises(RuntimeError, match="floor_divide"):
        (sa // 2.0).sum().backward()
    ta = _t(a, True)
    with pytest.raises(RuntimeError, match="floor_divide"):
        (ta // 2.0).sum().backward()


def test_index_and_number_conversions():
    items = [10, 20, 30]
    assert items[skiff.tensor(2)] == items[torch.tensor(2)]
    assert items[skiff.tensor([1])] == items[torch.tensor([1])]
    assert list(range(skiff.tensor(3))) == list(range(torch.tensor(3)))
    assert operator.index(skiff.tensor(5, dtype="int32")) == 5
    for bad in (skiff.tensor(2.0), skiff.tensor([1, 2])):
        with pytest.raises(TypeError, match="only integer tensors of a single element"):
            operator.index(bad)
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        operator.index(torch.tensor(2.0))
    assert int(skiff.tensor(-2.7)) == int(torch.tensor(-2.7))
    assert float(skiff.tensor(3)) == float(torch.tensor(3))


# ---- 3. pad modes, hardtanh / relu6 / mish ---------------------------------------------------
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", [((2, 3, 7), (2, 3)), ((3, 7), (3, 0)),
                                       ((2, 2, 5, 6), (1, 2, 3, 0)), ((2, 4, 5), (0, 2, 2, 1)),
                                       ((1, 2, 4, 5, 3), (1, 1, 2, 0, 0, 3)),
                                       ((2, 3, 7), (-1, 2)), ((2, 3, 7), (2, -3))])
def test_pad_modes_as_torch(mode, shape, pad):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    sx, tx = _s(x, True), _t(x, True)
    ys, yt = SF.pad(sx, pad, mode=mode), TF.pad(tx, pad, mode=mode)
    np.testing.assert_array_equal(np.asarray(ys), _np(yt))
    w = rng.standard_normal(tuple(yt.shape))
    (ys * _s(w)).sum().backward()
    (yt * _t(w)).sum().backward()
    np.testing.assert_allclose(np.asarray(sx.grad), _np(tx.grad), rtol=1e-12, atol=1e-12)


def test_pad_mode_errors_name_the_limit():
    x = _s(np.zeros((1, 2, 3)))
    with pytest.raises(ValueError, match="less than the axis' size 3"):
        SF.pad(x, (3, 0), mode="reflect")
    with pytest.raises(ValueError, match="2-D or 3-D input"):
        SF.pad(_s(np.zeros(3)), (1, 1), mode="replicate")
    with pytest.raises(ValueError, match="'constant', 'reflect'"):
        SF.pad(x, (1, 1), mode="symmetric")


def test_pad_layers_as_torch():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 5, 6))
    for name, args in [("ReflectionPad2d", (2,)), ("ReplicationPad2d", ((1, 0, 2, 3),)),
                       ("CircularPad2d", (1,)), ("ZeroPad2d", ((1, 2, 0, 1),)),
                       ("ConstantPad2d", (2, 0.5)), ("ReflectionPad1d", ((2, 1),)),
                       ("ReplicationPad1d", (3,)), ("ConstantPad1d", ((1, 2), -1.0)),
                       ("CircularPad1d", (2,))]:
        xs = x[0] if name.endswith("1d") else x
        np.testing.assert_array_equal(np.asarray(getattr(snn, name)(*args)(_s(xs))),
                                      _np(getattr(torch.nn, name)(*args)(_t(xs))), err_msg=name)


@pytest.mark.parametrize("name,kw", [("hardtanh", {}), ("hardtanh", {"min_val": -0.5,
                                                                     "max_val": 2.0}),
                                     ("relu6", {}), ("mish", {})])
def test_clamped_activations_as_torch(name, kw):
    x = np.concatenate([np.linspace(-30, 30, 61), [-1.0, 1.0, 0.0, 6.0, -0.5, 2.0, 45.0]])
    sx, tx = _s(x, True), _t(x, True)
    ys, yt = getattr(SF, name)(sx, **kw), getattr(TF, name)(tx, **kw)
    np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-13, atol=1e-15)
    w = np.cos(np.arange(x.size))
    (ys * _s(w)).sum().backward()
    (yt * _t(w)).sum().backward()
    np.testing.assert_allclose(np.asarray(sx.grad), _np(tx.grad), rtol=1e-12, atol=1e-14)
    layer = {"hardtanh": "Hardtanh", "relu6": "ReLU6", "mish": "Mish"}[name]
    np.testing.assert_allclose(np.asarray(getattr(snn, layer)(**kw)(_s(x))),
                               _np(getattr(torch.nn, layer)(**kw)(_t(x))), rtol=1e-13,
                               atol=1e-15)


# ---- 4. skiff.autograd.gradcheck / gradgradcheck as torch's ----------------------------------
def _both(fn_s, fn_t, x, y):
    return (fn_s, (_s(x, True), _s(y, True))), (fn_t, (_t(x, True), _t(y, True)))


class _WrongTorch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x * 2.1  # off by 5%


class _WrongSkiff(skiff.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x * 2.1


def test_gradcheck_agrees_with_torch():
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal(3) + 2.0
    cases = [
        (lambda a, b: (a * b).exp().sum(-1), lambda a, b: (a * b).exp().sum(-1)),
        (lambda a, b: (a / b, a.tanh()), lambda a, b: (a / b, a.tanh())),
        (lambda a, b: _WrongSkiff.apply(a) + b, lambda a, b: _WrongTorch.apply(a) + b),
    ]
    for fs, ft in cases:
        (fs, ins_s), (ft, ins_t) = _both(fs, ft, x, y)
        want = torch.autograd.gradcheck(ft, ins_t, raise_exception=False)
        assert skiff.autograd.gradcheck(fs, ins_s, raise_exception=False) is want
        assert skiff.autograd.gradgradcheck(fs, ins_s, raise_exception=False) is \
            torch.autograd.gradgradcheck(ft, ins_t, raise_exception=False)
    with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to "
                                           "input 0"):
        skiff.autograd.gradcheck(_WrongSkiff.apply, _s(x, True))
    assert issubclass(skiff.autograd.GradcheckError, RuntimeError)


# ---- 5. LR schedulers' state: torch's keys, torch's state loads ------------------------------
SCHEDULES = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("MultiStepLR", {"milestones": [2, 5], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 7, "eta_min": 0.001}),
    ("LinearLR", {"start_factor": 0.2, "total_iters": 6}),
    ("ConstantLR", {"factor": 0.5, "total_iters": 4}),
    ("LambdaLR", {"lr_lambda": lambda s: 0.9 ** s + 0.01 * s}),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": 20}),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.2, "step_size_up": 3}),
]


def _opts(lr=0.1):
    sp = skiff.nn.Parameter(np.zeros(2))
    tp = torch.nn.Parameter(torch.zeros(2))
    return (skiff.optim.SGD([sp], lr=lr, momentum=0.9),
            torch.optim.SGD([tp], lr=lr, momentum=0.9))


@pytest.mark.parametrize("name,kw", SCHEDULES, ids=[n for n, _ in SCHEDULES])
def test_torch_scheduler_state_loads_into_skiff(name, kw):
    so, to = _opts()
    ts = getattr(torch.optim.lr_scheduler, name)(to, **kw)
    for _ in range(5):
        to.step()
        ts.step()
    state = ts.state_dict()
    so2, _ = _opts()
    ss = getattr(skiff.optim.lr_scheduler, name)(so2, **kw)
    for gs, gt in zip(so2.param_groups, to.param_groups):  # what the optimizer's state brings
        gs["lr"] = gt["lr"]
    ss.load_state_dict(state)
    assert ss.last_epoch == ts.last_epoch
    for _ in range(6):
        to.step()
        ts.step()
        ss.step()
        assert so2.param_groups[0]["lr"] == pytest.approx(to.param_groups[0]["lr"], rel=1e-12)
    mine = ss.state_dict()
    assert mine["last_epoch"] == ts.state_dict()["last_epoch"]
    assert mine["base_lrs"] == pytest.approx(ts.state_dict()["base_lrs"], rel=1e-12)


def test_skiff_scheduler_state_loads_into_torch_and_old_key_still_loads():
    so, to = _opts()
    ss = skiff.optim.lr_scheduler.StepLR(so, step_size=2, gamma=0.5)
    for _ in range(3):
        ss.step()
    ts = torch.optim.lr_scheduler.StepLR(to, step_size=2, gamma=0.5)
    to.param_groups[0]["lr"] = so.param_groups[0]["lr"]
    ts.load_state_dict(ss.state_dict())
    assert ts.last_epoch == 3 and ts.get_last_lr() == pytest.approx(ss.get_last_lr())
    so_old, _ = _opts()
    old = skiff.optim.lr_scheduler.CosineAnnealingLR(so_old, T_max=10)
    old.load_state_dict({"last_step": 4, "base_lrs": [0.1]})  # saved before round 26
    assert old.last_epoch == 4
    with pytest.raises(KeyError, match="last_epoch"):
        old.load_state_dict({"base_lrs": [0.1]})


def test_sequential_and_plateau_states_from_torch():
    so, to = _opts()
    parts_t = [torch.optim.lr_scheduler.LinearLR(to, 0.1, total_iters=3),
               torch.optim.lr_scheduler.ExponentialLR(to, 0.8)]
    ts = torch.optim.lr_scheduler.SequentialLR(to, parts_t, milestones=[3])
    for _ in range(5):
        to.step()
        ts.step()
    parts_s = [skiff.optim.lr_scheduler.LinearLR(so, 0.1, total_iters=3),
               skiff.optim.lr_scheduler.ExponentialLR(so, 0.8)]
    ss = skiff.optim.lr_scheduler.SequentialLR(so, parts_s, milestones=[3])
    so.param_groups[0]["lr"] = to.param_groups[0]["lr"]
    ss.load_state_dict(ts.state_dict())
    for _ in range(3):
        ts.step()
        ss.step()
        assert so.param_groups[0]["lr"] == pytest.approx(to.param_groups[0]["lr"], rel=1e-12)
    so, to = _opts()
    tp = torch.optim.lr_scheduler.ReduceLROnPlateau(to, patience=1)
    for m in (1.0, 0.9, 0.95, 0.96):
        tp.step(m)
    sp = skiff.optim.lr_scheduler.ReduceLROnPlateau(so, patience=1)
    so.param_groups[0]["lr"] = to.param_groups[0]["lr"]
    sp.load_state_dict(tp.state_dict())
    assert sp.state_dict()["last_epoch"] == tp.last_epoch
    for m in (0.97, 0.98, 0.99):
        tp.step(m)
        sp.step(m)
        assert so.param_groups[0]["lr"] == pytest.approx(to.param_groups[0]["lr"], rel=1e-12)


# ---- more activations (a second probe round) ------------------------------------------------
MORE_ACTS = [("hardswish", {}, "Hardswish", {}), ("hardsigmoid", {}, "Hardsigmoid", {}),
             ("selu", {}, "SELU", {}), ("celu", {"alpha": 0.5}, "CELU", {"alpha": 0.5}),
             ("softsign", {}, "Softsign", {}), ("logsigmoid", {}, "LogSigmoid", {}),
             ("glu", {"dim": -1}, "GLU", {}), ("softmin", {"dim": -1}, "Softmin", {"dim": -1}),
             ("threshold", {"threshold": 0.5, "value": -2.0}, "Threshold",
              {"threshold": 0.5, "value": -2.0})]


@pytest.mark.parametrize("name,kw,layer,lkw", MORE_ACTS, ids=[m[0] for m in MORE_ACTS])
def test_more_activations_as_torch(name, kw, layer, lkw):
    x = np.concatenate([np.linspace(-40, 40, 81), [-3.0, 3.0, 0.0, 0.5, 0.25, -0.25, 1.5,
                                                    -1.5, 2.5]]).reshape(9, 10)
    sx, tx = _s(x, True), _t(x, True)
    ys, yt = getattr(SF, name)(sx, **kw), getattr(TF, name)(tx, **kw)
    np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-13, atol=1e-15)
    w = np.cos(np.arange(yt.numel())).reshape(tuple(yt.shape))
    (ys * _s(w)).sum().backward()
    (yt * _t(w)).sum().backward()
    # torch's hardsigmoid backward multiplies by 1/6 rounded to float32, even in float64
    rtol = 1e-7 if name == "hardsigmoid" else 1e-12
    np.testing.assert_allclose(np.asarray(sx.grad), _np(tx.grad), rtol=rtol, atol=1e-14)
    np.testing.assert_allclose(np.asarray(getattr(snn, layer)(**lkw)(_s(x))),
                               _np(getattr(torch.nn, layer)(**lkw)(_t(x))), rtol=1e-13,
                               atol=1e-15)


@pytest.mark.parametrize("channels", [1, 3])
def test_prelu_as_torch(channels):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 4))
    x[0, 0, 0] = 0.0
    w = rng.standard_normal(channels)
    sx, sw, tx, tw = _s(x, True), _s(w, True), _t(x, True), _t(w, True)
    ys, yt = SF.prelu(sx, sw), TF.prelu(tx, tw)
    np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-14)
    (ys * ys).sum().backward()
    (yt * yt).sum().backward()
    np.testing.assert_allclose(np.asarray(sx.grad), _np(tx.grad), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(sw.grad), _np(tw.grad), rtol=1e-12)
    sm, tm = snn.PReLU(channels, dtype=np.float64), torch.nn.PReLU(channels).double()
    assert list(dict(sm.named_parameters())) == list(dict(tm.named_parameters()))
    np.testing.assert_allclose(np.asarray(sm(_s(x))), _np(tm(_t(x))), rtol=1e-14)


def test_log1p_expm1_elu_exact_for_tiny_values():
    x = np.array([1e-12, -3e-10, 2e-8, 0.3, -0.7, 5.0])
    for fs, ft in [(lambda t: t.log1p(), torch.log1p), (lambda t: t.expm1(), torch.expm1),
                   (lambda t: SF.elu(-t, 0.9), lambda t: TF.elu(-t, 0.9))]:
        sx, tx = _s(x, True), _t(x, True)
        ys, yt = fs(sx), ft(tx)
        np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-14)
        (gs,) = skiff.autograd.grad(ys.sum(), [sx], create_graph=True)
        (gt,) = torch.autograd.grad(yt.sum(), [tx], create_graph=True)
        np.testing.assert_allclose(np.asarray(gs), _np(gt), rtol=1e-14)
        (gs * gs).sum().backward()
        (gt * gt).sum().backward()
        np.testing.assert_allclose(np.asarray(sx.grad), _np(tx.grad), rtol=1e-12)
    assert skiff.tensor([1, 2]).log1p().dtype == np.float32  # integers: float32, as torch


# ---- more tensor methods (a second probe round) ---------------------------------------------
_R = np.random.default_rng(8)
_X = _R.uniform(-0.9, 0.9, (3, 4))
_Y = _R.uniform(0.2, 2.0, (3, 4))
METHODS = [
    ("clamp_min", lambda t, u: t.clamp_min(0.1)), ("clamp_max", lambda t, u: t.clamp_max(0.1)),
    ("lerp", lambda t, u: t.lerp(u, 0.3)), ("addcmul", lambda t, u: t.addcmul(t, u, value=0.5)),
    ("addcdiv", lambda t, u: t.addcdiv(t, u, value=2)), ("where", lambda t, u: t.where(t > 0, u)),
    ("frac", lambda t, u: (t * 3).frac()), ("trunc", lambda t, u: (t * 3).trunc() + t),
    ("ceil", lambda t, u: (t * 3).ceil() * t), ("erf", lambda t, u: t.erf()),
    ("asin", lambda t, u: t.asin()), ("acos", lambda t, u: t.acos()),
    ("atan", lambda t, u: t.atan()), ("sinh", lambda t, u: t.sinh()),
    ("cosh", lambda t, u: t.cosh()), ("atan2", lambda t, u: t.atan2(u - 1)),
    ("hypot", lambda t, u: t.hypot(u)), ("log2", lambda t, u: u.log2()),
    ("log10", lambda t, u: u.log10()), ("exp2", lambda t, u: t.exp2()),
    ("roll", lambda t, u: t.roll(1, 1) * u), ("roll2", lambda t, u: t.roll((1, -2), (0, 1)) * u),
    ("roll_flat", lambda t, u: t.roll(5) * u), ("tile", lambda t, u: t.tile((2, 1, 2))),
    ("movedim", lambda t, u: t.reshape(3, 2, 2).movedim(0, -1) * t.reshape(2, 2, 3)),
    ("unflatten", lambda t, u: t.unflatten(1, (2, 2)) * t.reshape(3, 2, 2)),
    ("repeat_interleave", lambda t, u: t.repeat_interleave(2, dim=1)),
    ("repeat_interleave_flat", lambda t, u: t.repeat_interleave(3)),
    ("outer", lambda t, u: t[0].outer(u[1])), ("diag", lambda t, u: t[:, :3].diag(1)),
    ("trace", lambda t, u: (t[:, :3] * u[:, :3]).trace()),
    ("nan_to_num", lambda t, u: (t.log() * u).nan_to_num(nan=0.5, neginf=-3.0)),
]


@pytest.mark.parametrize("name,fn", METHODS, ids=[m[0] for m in METHODS])
def test_more_methods_as_torch(name, fn):
    sx, sy, tx, ty = _s(_X, True), _s(_Y, True), _t(_X, True), _t(_Y, True)
    ys, yt = fn(sx, sy), fn(tx, ty)
    np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-13, atol=1e-15)
    w = np.cos(np.arange(yt.numel())).reshape(tuple(yt.shape))
    (ys * _s(w)).sum().backward()
    (yt * _t(w)).sum().backward()
    for s, t in ((sx, tx), (sy, ty)):
        want = np.zeros(_X.shape) if t.grad is None else _np(t.grad)
        got = np.zeros(_X.shape) if s.grad is None else np.asarray(s.grad)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_more_methods_without_gradients_and_top_level():
    x = np.array([[0.0, 1.5, -2.0], [3.0, 0.0, np.nan]])
    s, t = _s(x), _t(x)
    assert s.count_nonzero().item() == t.count_nonzero().item()
    np.testing.assert_array_equal(np.asarray(s.count_nonzero(dim=1)), _np(t.count_nonzero(1)))
    assert s.is_floating_point() and not skiff.tensor([1]).is_floating_point()
    assert s.half().dtype == np.float16 and str(s.bfloat16().dtype) == "bfloat16"
    r = _s([0.5, 1.0]).relu_()
    assert np.asarray(r).tolist() == [0.5, 1.0]
    np.testing.assert_array_equal(np.asarray(skiff.eye(3, 2)), _np(torch.eye(3, 2)))
    assert skiff.finfo(skiff.float32).min == torch.finfo(torch.float32).min
    assert skiff.finfo(skiff.bfloat16).eps == torch.finfo(torch.bfloat16).eps
    assert skiff.iinfo(skiff.int64).max == torch.iinfo(torch.int64).max
    np.testing.assert_allclose(np.asarray(skiff.atan2(_s(_X), _s(_Y))),
                               _np(torch.atan2(_t(_X), _t(_Y))), rtol=1e-14)
    p = skiff.nn.Parameter(np.ones(2))
    with pytest.raises(RuntimeError):
        p.sigmoid_()  # a leaf that requires grad, outside no_grad: refused, as torch
    with pytest.raises(RuntimeError):
        torch.nn.Parameter(torch.ones(2)).sigmoid_()


# ---- PolynomialLR, CosineAnnealingWarmRestarts ------------------------------------------------
@pytest.mark.parametrize("name,kw,epochs", [
    ("PolynomialLR", {"total_iters": 6, "power": 2.0}, None),
    ("CosineAnnealingWarmRestarts", {"T_0": 3, "T_mult": 2, "eta_min": 0.01}, None),
    ("CosineAnnealingWarmRestarts", {"T_0": 4}, None),
    ("CosineAnnealingWarmRestarts", {"T_0": 2, "T_mult": 2},
     [0.5, 1.25, 2.0, 3.5, 6.1, 9.0, 15.5]),
])
def test_more_schedules_as_torch(name, kw, epochs):
    so, to = _opts()
    ss = getattr(skiff.optim.lr_scheduler, name)(so, **kw)
    ts = getattr(torch.optim.lr_scheduler, name)(to, **kw)
    assert so.param_groups[0]["lr"] == pytest.approx(to.param_groups[0]["lr"], rel=1e-13)
    for i in range(12 if epochs is None else len(epochs)):
        to.step()
        if epochs is None:
            ts.step()
            ss.step()
        else:
            ts.step(epochs[i])
            ss.step(epochs[i])
        assert so.param_groups[0]["lr"] == pytest.approx(to.param_groups[0]["lr"], rel=1e-12,
                                                         abs=1e-15), i
    so2, _ = _opts()
    ss2 = getattr(skiff.optim.lr_scheduler, name)(so2, **kw)
    so2.param_groups[0]["lr"] = to.param_groups[0]["lr"]
    ss2.load_state_dict(ts.state_dict())
    to.step()
    ts.step()
    ss2.step()
    assert so2.param_groups[0]["lr"] == pytest.approx(to.param_groups[0]["lr"], rel=1e-12,
                                                      abs=1e-15)


# ---- 1-D functional forms, distances ---------------------------------------------------------
@pytest.mark.parametrize("batched", [True, False])
def test_conv1d_pools_as_torch(batched):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 11) if batched else (3, 11))
    w, b = rng.standard_normal((4, 3, 3)), rng.standard_normal(4)
    cases = [
        (lambda F_, x_, w_, b_: F_.conv1d(x_, w_, b_, stride=2, padding=1)),
        (lambda F_, x_, w_, b_: F_.conv1d(x_, w_, None, padding="same", dilation=1, groups=1)),
        (lambda F_, x_, w_, b_: F_.max_pool1d(x_, 3, 2, 1)),
        (lambda F_, x_, w_, b_: F_.avg_pool1d(x_, 2)),
    ]
    for fn in cases:
        args_s = [_s(a, True) for a in (x, w, b)]
        args_t = [_t(a, True) for a in (x, w, b)]
        ys, yt = fn(SF, *args_s), fn(TF, *args_t)
        np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-12, atol=1e-12)
        g = np.cos(np.arange(yt.numel())).reshape(tuple(yt.shape))
        (ys * _s(g)).sum().backward()
        (yt * _t(g)).sum().backward()
        for s, t in zip(args_s, args_t):
            if t.grad is not None:
                np.testing.assert_allclose(np.asarray(s.grad), _np(t.grad), rtol=1e-12,
                                           atol=1e-12)
    with pytest.raises(ValueError, match="dilation and groups"):
        SF.conv1d(_s(x), _s(w), dilation=2)


def test_pairwise_distance_cosine_similarity_modules_as_torch():
    rng = np.random.default_rng(10)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    for ms, mt in [(snn.PairwiseDistance(), torch.nn.PairwiseDistance()),
                   (snn.PairwiseDistance(p=1.5, keepdim=True),
                    torch.nn.PairwiseDistance(p=1.5, keepdim=True)),
                   (snn.CosineSimilarity(dim=1), torch.nn.CosineSimilarity(dim=1))]:
        sa, sb, ta, tb = _s(a, True), _s(b, True), _t(a, True), _t(b, True)
        ys, yt = ms(sa, sb), mt(ta, tb)
        np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-12)
        ys.sum().backward()
        yt.sum().backward()
        np.testing.assert_allclose(np.asarray(sa.grad), _np(ta.grad), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(sb.grad), _np(tb.grad), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("batch_first,side", [(False, "right"), (True, "right"), (True, "left")])
def test_pad_sequence_as_torch(batch_first, side):
    from skiff.nn.utils.rnn import pad_sequence

    rng = np.random.default_rng(11)
    seqs = [rng.standard_normal((n, 3)) for n in (4, 1, 6)]
    ss = [_s(a, True) for a in seqs]
    ts = [_t(a, True) for a in seqs]
    ys = pad_sequence(ss, batch_first=batch_first, padding_value=-1.0, padding_side=side)
    yt = torch.nn.utils.rnn.pad_sequence(ts, batch_first=batch_first, padding_value=-1.0,
                                         padding_side=side)
    np.testing.assert_array_equal(np.asarray(ys), _np(yt))
    g = np.cos(np.arange(yt.numel())).reshape(tuple(yt.shape))
    (ys * _s(g)).sum().backward()
    (yt * _t(g)).sum().backward()
    for s, t in zip(ss, ts):
        np.testing.assert_allclose(np.asarray(s.grad), _np(t.grad), rtol=1e-14)
    assert skiff.nn.utils.rnn.pad_sequence is pad_sequence


# ---- interpolate: torch's argument order, any nearest size, the linear modes ----------------
INTERP = [
    ((2, 3, 5), {"scale_factor": 2, "mode": "linear"}),
    ((2, 3, 5), {"size": 7, "mode": "linear", "align_corners": True}),
    ((1, 2, 4, 5), {"scale_factor": 2, "mode": "bilinear"}),
    ((1, 2, 4, 5), {"size": (7, 3), "mode": "bilinear"}),
    ((1, 2, 4, 5), {"size": (7, 9), "mode": "bilinear", "align_corners": True}),
    ((1, 2, 4, 5), {"scale_factor": 1.5, "mode": "bilinear"}),
    ((1, 2, 4, 5), {"scale_factor": (0.5, 1.7), "mode": "bilinear",
                    "recompute_scale_factor": True}),
    ((1, 1, 3, 4, 2), {"size": (5, 6, 3), "mode": "trilinear"}),
    ((1, 2, 4, 5), {"size": (6, 7)}),
    ((1, 2, 4, 5), {"scale_factor": 0.5}),
    ((2, 3, 5), {"size": 8}),
    ((1, 2, 4, 5), {"size": (8, 10)}),
]


@pytest.mark.parametrize("shape,kw", INTERP, ids=[str(i) for i in range(len(INTERP))])
def test_interpolate_as_torch(shape, kw):
    x = np.random.default_rng(12).standard_normal(shape)
    sx, tx = _s(x, True), _t(x, True)
    ys, yt = SF.interpolate(sx, **kw), TF.interpolate(tx, **kw)
    assert tuple(ys.shape) == tuple(yt.shape)
    np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-12, atol=1e-14)
    g = np.cos(np.arange(yt.numel())).reshape(tuple(yt.shape))
    (ys * _s(g)).sum().backward()
    (yt * _t(g)).sum().backward()
    np.testing.assert_allclose(np.asarray(sx.grad), _np(tx.grad), rtol=1e-12, atol=1e-13)


def test_interpolate_positional_size_is_torch_order():
    x = np.random.default_rng(13).standard_normal((1, 1, 2, 3))
    np.testing.assert_array_equal(np.asarray(SF.interpolate(_s(x), (4, 6))),
                                  _np(TF.interpolate(_t(x), (4, 6))))


# ---- more losses --------------------------------------------------------------------------------
def _loss_inputs():
    rng = np.random.default_rng(14)
    a, b, c = (rng.standard_normal((5, 4)) for _ in range(3))
    sign = np.where(rng.standard_normal(5) > 0, 1.0, -1.0)
    sign4 = np.where(rng.standard_normal((5, 4)) > 0, 1.0, -1.0)
    labels = (rng.random((5, 4)) > 0.5).astype(np.float64)
    var = rng.uniform(0.5, 2.0, (5, 4))
    var[0, 0] = 1e-9  # below eps: clamped, no gradient, as torch
    counts = rng.integers(0, 5, (5, 4)).astype(np.float64)
    return a, b, c, sign, sign4, labels, var, counts


LOSSES = [  # z: a, b, c, sign per row, sign per element, 0/1 labels, variances, counts
    ("margin_ranking_loss", "MarginRankingLoss", lambda z: (z[0][:, 0], z[1][:, 0], z[3]),
     {"margin": 0.3}),
    ("hinge_embedding_loss", "HingeEmbeddingLoss", lambda z: (z[0], z[4]), {"margin": 0.8}),
    ("soft_margin_loss", "SoftMarginLoss", lambda z: (z[0], z[4]), {}),
    ("cosine_embedding_loss", "CosineEmbeddingLoss", lambda z: (z[0], z[1], z[3]),
     {"margin": 0.1}),
    ("triplet_margin_loss", "TripletMarginLoss", lambda z: z[:3], {"margin": 0.5}),
    ("triplet_margin_loss", "TripletMarginLoss", lambda z: z[:3], {"p": 1.0, "swap": True}),
    ("multilabel_soft_margin_loss", "MultiLabelSoftMarginLoss", lambda z: (z[0], z[5]), {}),
    ("poisson_nll_loss", "PoissonNLLLoss", lambda z: (z[0], z[7]), {"full": True}),
    ("poisson_nll_loss", "PoissonNLLLoss", lambda z: (np.abs(z[0]), z[7]),
     {"log_input": False}),
    ("gaussian_nll_loss", "GaussianNLLLoss", lambda z: (z[0], z[1], z[6]), {"full": True}),
    ("gaussian_nll_loss", "GaussianNLLLoss", lambda z: (z[0], z[1], z[6][:, 0]), {}),
]


@pytest.mark.parametrize("fname,mname,pick,kw", LOSSES,
                         ids=[f"{x[0]}-{i}" for i, x in enumerate(LOSSES)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_more_losses_as_torch(fname, mname, pick, kw, reduction):
    arrays = pick(_loss_inputs())
    grads = {"margin_ranking_loss": 2, "cosine_embedding_loss": 2, "triplet_margin_loss": 3,
             "gaussian_nll_loss": 3}.get(fname, 1)  # targets: no gradient where torch has none
    ss = [_s(a, i < grads) for i, a in enumerate(arrays)]
    ts = [_t(a, i < grads) for i, a in enumerate(arrays)]
    ys = getattr(SF, fname)(*ss, **kw, reduction=reduction)
    yt = getattr(TF, fname)(*ts, **kw, reduction=reduction)
    np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-12, atol=1e-14)
    g = np.cos(np.arange(yt.numel())).reshape(tuple(yt.shape))
    (ys * _s(g)).sum().backward()
    (yt * _t(g)).sum().backward()
    for s, t in zip(ss, ts):
        if t.grad is not None:
            np.testing.assert_allclose(np.asarray(s.grad), _np(t.grad), rtol=1e-11, atol=1e-13)
    ms = getattr(snn, mname)(**kw, reduction=reduction)
    mt = getattr(torch.nn, mname)(**kw, reduction=reduction)
    np.testing.assert_allclose(np.asarray(ms(*[_s(a) for a in arrays])),
                               _np(mt(*[_t(a) for a in arrays])), rtol=1e-12, atol=1e-14)


# ---- Adamax, NAdam, RAdam -------------------------------------------------------------------
@pytest.mark.parametrize("name,kw", [
    ("Adamax", {"lr": 0.01}), ("Adamax", {"weight_decay": 0.1, "maximize": True}),
    ("NAdam", {"lr": 0.01}), ("NAdam", {"weight_decay": 0.1}),
    ("NAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True, "momentum_decay": 0.01}),
    ("RAdam", {"lr": 0.01}), ("RAdam", {"weight_decay": 0.05, "decoupled_weight_decay": True}),
])
def test_adam_family_as_torch(name, kw):
    rng = np.random.default_rng(15)
    w0, b0 = rng.standard_normal((3, 4)), rng.standard_normal(3)
    xs = rng.standard_normal((25, 6, 4))
    sw = skiff.nn.Parameter(w0.copy(), dtype="float64")
    sb = skiff.nn.Parameter(b0.copy(), dtype="float64")
    tw, tb = torch.nn.Parameter(torch.tensor(w0)), torch.nn.Parameter(torch.tensor(b0))
    so = getattr(skiff.optim, name)([sw, sb], **kw)
    to = getattr(torch.optim, name)([tw, tb], **kw)
    for x in xs:
        so.zero_grad()
        to.zero_grad()
        ((_s(x) @ sw.T + sb).tanh() ** 2).sum().backward()
        ((_t(x) @ tw.T + tb).tanh() ** 2).sum().backward()
        so.step()
        to.step()
    np.testing.assert_allclose(np.asarray(sw), _np(tw), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(sb), _np(tb), rtol=1e-12, atol=1e-13)


# ---- conv2d: dilation, groups, padding "same"/"valid", padding_mode ---------------------------
CONV = [
    ((2, 4, 7, 8), (6, 2, 3, 3), {"groups": 2, "padding": 1}),
    ((2, 4, 7, 8), (4, 1, 3, 3), {"groups": 4, "stride": 2, "padding": 1}),  # depthwise
    ((1, 3, 9, 9), (2, 3, 3, 3), {"dilation": 2, "padding": 2}),
    ((1, 3, 9, 10), (2, 3, 3, 2), {"dilation": (1, 3), "stride": (2, 1)}),
    ((1, 3, 8, 8), (2, 3, 4, 3), {"padding": "same", "dilation": (1, 2)}),
    ((1, 3, 8, 8), (2, 3, 3, 3), {"padding": "valid"}),
]


@pytest.mark.parametrize("xs,ws,kw", CONV, ids=[str(i) for i in range(len(CONV))])
def test_conv2d_dilation_groups_padding_as_torch(xs, ws, kw):
    rng = np.random.default_rng(16)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    args_s = [_s(a, True) for a in (x, w, b)]
    args_t = [_t(a, True) for a in (x, w, b)]
    ys, yt = SF.conv2d(*args_s, **kw), TF.conv2d(*args_t, **kw)
    np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-12, atol=1e-12)
    g = np.cos(np.arange(yt.numel())).reshape(tuple(yt.shape))
    (ys * _s(g)).sum().backward()
    (yt * _t(g)).sum().backward()
    for s, t in zip(args_s, args_t):
        np.testing.assert_allclose(np.asarray(s.grad), _np(t.grad), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("kw", [{"groups": 3, "padding": 1}, {"dilation": 2, "padding": 2},
                                {"padding": 2, "padding_mode": "reflect"},
                                {"padding": 1, "padding_mode": "circular", "groups": 3},
                                {"padding": (1, 2), "padding_mode": "replicate"}])
def test_conv2d_module_options_as_torch(kw):
    tm = torch.nn.Conv2d(3, 6, 3, **kw).double()
    sm = snn.Conv2d(3, 6, 3, dtype=np.float64, **kw)
    assert tuple(sm.weight.shape) == tuple(tm.weight.shape)
    sm.weight.data = _s(_np(tm.weight))
    sm.bias.data = _s(_np(tm.bias))
    x = np.random.default_rng(17).standard_normal((2, 3, 7, 6))
    np.testing.assert_allclose(np.asarray(sm(_s(x))), _np(tm(_t(x))), rtol=1e-12, atol=1e-12)


# ---- channel dropout: torch draws other random numbers, so its rules are what is compared ---
@pytest.mark.parametrize("name,shape", [("dropout2d", (4, 6, 3, 5)), ("dropout2d", (6, 3, 5)),
                                        ("dropout1d", (4, 6, 7)), ("dropout1d", (6, 7))])
def test_channel_dropout_follows_torch_rules(name, shape):
    rng = np.random.default_rng(18)
    x = rng.uniform(0.5, 1.5, shape)
    p = 0.4
    sx, tx = _s(x, True), _t(x, True)
    ys = getattr(SF, name)(sx, p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note on a 3-D input to dropout2d
        yt = getattr(TF, name)(tx, p)
    lead = len(shape) - (2 if name == "dropout2d" and len(shape) == 4 else 1)  # torch: a 3-D
    # input to dropout2d is (N, C, L)
    for y, inp in ((np.asarray(ys), x), (_np(yt), x)):  # each channel all dropped or all kept
        ratio = (y / inp).reshape(*shape[:lead], -1)
        assert np.all(np.isclose(ratio, 0) | np.isclose(ratio, 1 / (1 - p)))
        assert np.all(np.ptp(ratio, axis=-1) < 1e-12)
    ys.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(np.asarray(sx.grad), np.asarray(ys) / x, rtol=1e-12)
    np.testing.assert_allclose(_np(tx.grad), _np(yt) / x, rtol=1e-12)
    layer = {"dropout2d": "Dropout2d", "dropout1d": "Dropout1d"}[name]
    sm, tm = getattr(snn, layer)(p), getattr(torch.nn, layer)(p)
    sm.eval()
    tm.eval()
    np.testing.assert_array_equal(np.asarray(sm(_s(x))), _np(tm(_t(x))))
    # >= 2,000 channels a draw (50 were too few: a 2-D input's 150 draws missed 0.1 in ~13%
    # of random states); the mean's spread is now ~0.01
    kept = np.mean([np.asarray(getattr(SF, name)(_s(np.ones((2000, 4, 1, 1)[:len(shape)])), p)
                               ).mean() for _ in range(3)])
    assert abs(kept - 1.0) < 0.1  # expectation kept, as torch's scaling does
    with pytest.raises(ValueError, match="between 0 and 1"):
        getattr(SF, name)(sx, 1.5)


# ---- meshgrid, addmm, baddbmm, addbmm, tensordot, bernoulli -----------------------------------
FUNCS = [
    ("meshgrid_ij", lambda m, a, b, c: m.meshgrid(a[0], b[:, 0], indexing="ij")[1] * 2
     + m.meshgrid(a[0], b[:, 0], indexing="ij")[0]),
    ("meshgrid_xy", lambda m, a, b, c: m.meshgrid(a[0], b[:, 0], c[0, 0], indexing="xy")[0]
     * m.meshgrid(a[0], b[:, 0], c[0, 0], indexing="xy")[2]),
    ("addmm", lambda m, a, b, c: m.addmm(a[:, :2], a, b, beta=0.5, alpha=2.0)),
    ("baddbmm", lambda m, a, b, c: m.baddbmm(c[:, :, :2], c, c.transpose(1, 2)[:, :, :2],
                                             alpha=0.3)),
    ("addbmm", lambda m, a, b, c: m.addbmm(a[:2, :2], c[:, :2], c.transpose(1, 2)[:, :, :2])),
    ("tensordot_int", lambda m, a, b, c: m.tensordot(c, b, dims=1)),
    ("tensordot_lists", lambda m, a, b, c: m.tensordot(c, c, dims=([0, 2], [0, 2]))),
]


@pytest.mark.parametrize("name,fn", FUNCS, ids=[f[0] for f in FUNCS])
def test_more_functions_as_torch(name, fn):
    rng = np.random.default_rng(19)
    arrays = (rng.standard_normal((3, 4)), rng.standard_normal((4, 2)),
              rng.standard_normal((2, 3, 4)))
    ss = [_s(a, True) for a in arrays]
    ts = [_t(a, True) for a in arrays]
    ys, yt = fn(skiff, *ss), fn(torch, *ts)
    np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-12, atol=1e-13)
    g = np.cos(np.arange(yt.numel())).reshape(tuple(yt.shape))
    (ys * _s(g)).sum().backward()
    (yt * _t(g)).sum().backward()
    for s, t in zip(ss, ts):
        want = np.zeros(s.shape) if t.grad is None else _np(t.grad)
        got = np.zeros(s.shape) if s.grad is None else np.asarray(s.grad)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_bernoulli_draws_like_torch():
    probs = np.array([0.0, 1.0, 0.3, 0.9] * 500)
    s = np.asarray(skiff.bernoulli(_s(probs)))
    t = _np(torch.bernoulli(_t(probs)))
    for d in (s, t):  # certain where torch is certain, 0/1 of the input's dtype, right mean
        assert d.dtype == np.float64 and set(np.unique(d)) <= {0.0, 1.0}
        assert np.all(d[0::4] == 0) and np.all(d[1::4] == 1)
        assert abs(d[2::4].mean() - 0.3) < 0.06 and abs(d[3::4].mean() - 0.9) < 0.06


@pytest.mark.parametrize("zeros", [False, True])
def test_cumprod_as_torch(zeros):
    x = np.random.default_rng(20).uniform(0.5, 1.5, (3, 5)) * np.array([1, -1, 1, 1, -1])
    if zeros:
        x[0, 2] = 0.0
        x[1, 1] = x[1, 3] = 0.0
    for dim in (0, 1, -1):
        sx, tx = _s(x, True), _t(x, True)
        ys, yt = sx.cumprod(dim), tx.cumprod(dim)
        np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-13)
        g = np.cos(np.arange(yt.numel())).reshape(tuple(yt.shape))
        (ys * _s(g)).sum().backward()
        (yt * _t(g)).sum().backward()
        np.testing.assert_allclose(np.asarray(sx.grad), _np(tx.grad), rtol=1e-12, atol=1e-14)


def test_index_add_as_torch():
    rng = np.random.default_rng(21)
    a, src = rng.standard_normal((4, 3)), rng.standard_normal((4, 5))
    idx = [2, 0, 2, 1, 2]  # repeats add up
    sa, ss, ta, ts = _s(a, True), _s(src, True), _t(a, True), _t(src, True)
    ys = sa.index_add(1, skiff.tensor(idx), ss, alpha=0.5)
    yt = ta.index_add(1, torch.tensor(idx), ts, alpha=0.5)
    np.testing.assert_allclose(np.asarray(ys), _np(yt), rtol=1e-14)
    g = np.cos(np.arange(12)).reshape(4, 3)
    (ys * _s(g)).sum().backward()
    (yt * _t(g)).sum().backward()
    np.testing.assert_allclose(np.asarray(sa.grad), _np(ta.grad), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(ss.grad), _np(ts.grad), rtol=1e-14)
    z = skiff.zeros(3, 2)
    z.index_add_(0, skiff.tensor([0, 0]), skiff.ones(2, 2))
    np.testing.assert_array_equal(np.asarray(z), _np(torch.zeros(3, 2).index_add_(
        0, torch.tensor([0, 0]), torch.ones(2, 2))))
