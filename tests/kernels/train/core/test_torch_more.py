"""More of torch's training API a port reaches for, each against torch 2.x in float64:
``autograd.Function`` in the ctx form, ``autograd.grad``, ``add_param_group``, ``step(closure)``,
SGD's dampening and maximize, ``clip_grad_norm_`` with inf and p norms, ``ParameterList`` /
``ParameterDict``, ``detach_``, ``grad_fn``, ``isfinite``, a schedule's ``last_epoch``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.core import nn

rng = np.random.default_rng(5)
X = rng.standard_normal((6, 4))
W = rng.standard_normal((3, 4))


def make_fn(lib):
    class ClampExp(lib.autograd.Function):
        """exp(x) * scale with a straight-through clamp on the gradient (a custom backward)."""

        @staticmethod
        def forward(ctx, x, scale):
            y = x.exp() * scale
            ctx.save_for_backward(y)
            ctx.scale = scale
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            assert ctx.needs_input_grad[0] and not ctx.needs_input_grad[1]
            return (g * y).clamp(-1.0, 1.0), None

    return ClampExp


def test_ctx_style_autograd_function_equals_torch():
    got = []
    for lib in (skiff, torch):
        x = lib.tensor(X, requires_grad=True)
        w = lib.tensor(W, requires_grad=True)
        y = make_fn(lib).apply(x @ w.T, 0.7)
        (y * y).sum().backward()
        got.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_autograd_grad_leaves_grads_alone():
    got = []
    for lib in (skiff, torch):
        x = lib.tensor(X, requires_grad=True)
        w = lib.tensor(W, requires_grad=True)
        h = (x @ w.T).tanh()
        loss = (h ** 2).sum()
        gw, gh = lib.autograd.grad(loss, [w, h], retain_graph=True)
        assert x.grad is None and w.grad is None
        loss.backward()
        got.append((gw.numpy(), gh.numpy(), w.grad.numpy()))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    with pytest.raises(RuntimeError, match="allow_unused"):
        skiff.autograd.grad((skiff.tensor(X, requires_grad=True) * 2).sum(),
                            skiff.tensor(W, requires_grad=True))


def models():
    ours, theirs = nn.Linear(4, 3).double(), torch.nn.Linear(4, 3).double()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def loss_of(model, lib):
    return (model(lib.tensor(X)).sin() ** 2).mean()


@pytest.mark.parametrize("kw", [{"momentum": 0.9, "dampening": 0.3},
                                {"momentum": 0.5, "nesterov": True, "maximize": True},
                                {"weight_decay": 0.1, "maximize": True}])
def test_sgd_dampening_maximize_closure_and_param_groups_equal_torch(kw):
    (ours, theirs), (o2, t2) = models(), models()
    opts = []
    for m, m2, lib in ((ours, o2, skiff), (theirs, t2, torch)):
        opt = lib.optim.SGD(m.parameters(), lr=0.1, **kw)
        opt.add_param_group({"params": m2.parameters(), "lr": 0.03})
        opts.append(opt)
    with pytest.raises(ValueError):
        opts[0].add_param_group({"params": [ours.weight]})
    for _ in range(8):
        losses = []
        for m, m2, lib, opt in ((ours, o2, skiff, opts[0]), (theirs, t2, torch, opts[1])):
            def closure(m=m, m2=m2, lib=lib, opt=opt):
                opt.zero_grad()
                loss = loss_of(m, lib) + loss_of(m2, lib)
                loss.backward()
                return loss
            losses.append(opt.step(closure).item())
        assert losses[0] == pytest.approx(losses[1], rel=1e-12)
    for a, b in ((ours, theirs), (o2, t2)):
        np.testing.assert_allclose(a.weight.numpy(), b.weight.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("norm_type", [float("inf"), 1.0, 3.0, 2.0])
def test_clip_grad_norm_norm_types_equal_torch(norm_type):
    out = []
    for lib, m in zip((skiff, torch), models()):
        loss_of(m, lib).backward()
        total = lib.nn.utils.clip_grad_norm_(m.parameters(), 0.01, norm_type=norm_type)
        out.append((float(total), m.weight.grad.numpy().copy(), m.bias.grad.numpy().copy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_parameter_list_and_dict_register_like_torch():
    def build(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.ws = lib.nn.ParameterList([lib.nn.Parameter(lib.zeros(2, 3))
                                                for _ in range(2)])
                self.ws.append(lib.nn.Parameter(lib.ones(3)))
                self.named = lib.nn.ParameterDict({"a": lib.nn.Parameter(lib.zeros(1))})
                self.named["b"] = lib.nn.Parameter(lib.ones(2))

        return M()

    names = []
    for lib in (skiff, torch):
        m = build(lib)
        names.append(([n for n, _ in m.named_parameters()], list(m.state_dict()),
                      len(m.ws), "b" in m.named, tuple(m.ws[2].shape)))
    assert names[0] == names[1]


def test_detach_grad_fn_isfinite_last_epoch():
    for lib in (skiff, torch):
        x = lib.tensor(X, requires_grad=True)
        y = x * 2
        assert x.grad_fn is None and y.grad_fn is not None
        y.detach_()
        assert not y.requires_grad and y.grad_fn is None and y.is_leaf
        z = lib.tensor([1.0, float("inf"), float("nan")])
        assert lib.isfinite(z).tolist() == [True, False, False]
        assert z.isnan().tolist() == [False, False, True] and z.isinf().any().item()
        opt = lib.optim.SGD([x], lr=0.1)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        opt.step()
        sched.step()
        assert sched.last_epoch == 1


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize("kw", [{"amsgrad": True}, {"maximize": True, "weight_decay": 0.05},
                                {"amsgrad": True, "maximize": True, "weight_decay": 0.1}])
def test_adam_amsgrad_and_maximize_equal_torch(name, kw):
    ours, theirs = models()
    o = getattr(skiff.optim, name)(ours.parameters(), lr=0.05, **kw)
    t = getattr(torch.optim, name)(theirs.parameters(), lr=0.05, **kw)
    for _ in range(20):
        for m, lib, opt in ((ours, skiff, o), (theirs, torch, t)):
            opt.zero_grad()
            loss_of(m, lib).backward()
            opt.step()
        np.testing.assert_allclose(ours.weight.numpy(), theirs.weight.detach().numpy(),
                                   rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("plan", ["warmup_cosine", "three"])
def test_sequential_lr_equals_torch(plan):
    lrs = []
    for lib, m in zip((skiff, torch), models()):
        opt = lib.optim.AdamW(m.parameters(), lr=0.01)
        S = lib.optim.lr_scheduler
        if plan == "warmup_cosine":
            parts = [S.LinearLR(opt, start_factor=0.1, total_iters=3),
                     S.CosineAnnealingLR(opt, T_max=6, eta_min=1e-4)]
            miles = [3]
        else:
            parts = [S.ConstantLR(opt, factor=0.5, total_iters=2), S.ExponentialLR(opt, 0.8),
                     S.StepLR(opt, 2, 0.3)]
            miles = [2, 5]
        sched = S.SequentialLR(opt, parts, milestones=miles)
        seen = [sched.get_last_lr()[0]]
        for _ in range(10):
            opt.step()
            sched.step()
            seen.append(sched.get_last_lr()[0])
        lrs.append(seen)
    np.testing.assert_allclose(lrs[0], lrs[1], rtol=1e-12, atol=1e-15)


def test_sequential_slice_nonzero_masked_select_scatter_equal_torch():
    got = []
    for lib in (skiff, torch):
        seq = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2)).double()
        head = seq[:2]
        assert isinstance(head, lib.nn.Sequential) and head[0] is seq[0]
        x = lib.tensor(X, requires_grad=True)
        sel = x.masked_select(x > 0.3)
        (sel ** 2).sum().backward()
        nz = (x.detach() > 1).nonzero()
        rows, cols = (x.detach() > 1).nonzero(as_tuple=True)
        y = lib.tensor(np.array([2, 0, 1, 1, 0, 2]))
        onehot = lib.zeros(6, 3, dtype=lib.float64).scatter_(1, y.unsqueeze(1), 1.0)
        src = lib.tensor(np.arange(12.0).reshape(6, 2))
        idx = lib.tensor(np.array([[0, 2], [1, 1], [2, 0], [0, 0], [1, 2], [2, 1]]))
        added = lib.zeros(6, 3, dtype=lib.float64).scatter_add_(1, idx, src)
        put = lib.zeros(6, 3, dtype=lib.float64).scatter(1, idx, src)
        got.append((sel.detach().numpy(), x.grad.numpy(), nz.numpy(), rows.numpy(),
                    cols.numpy(), onehot.numpy(), added.numpy(), put.numpy()))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    # with a gradient (refused before round 27; ops_scatter.py): torch's value and gradient
    grads = []
    for lib in (skiff, torch):
        z = lib.zeros(2, 2, dtype=lib.float64, requires_grad=True)
        out = z.scatter(1, lib.tensor([[0], [1]]), 1.0)
        (out * lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64)).sum().backward()
        grads.append((out.detach().numpy(), z.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)


def _truncated_normal_mean_std(mean, std, a, b):
    """The mean and standard deviation of N(mean, std) cut to [a, b] (closed form: scipy's
    ``truncnorm`` gives the same, but importing ``scipy.stats`` cost 0.6 s of CPU)."""
    from scipy.special import ndtr

    lo, hi = (a - mean) / std, (b - mean) / std
    pdf = lambda z: np.exp(-z * z / 2) / np.sqrt(2 * np.pi)  # noqa: E731
    mass = ndtr(hi) - ndtr(lo)
    shift = (pdf(lo) - pdf(hi)) / mass
    var = std * std * (1 + (lo * pdf(lo) - hi * pdf(hi)) / mass - shift * shift)
    return mean + std * shift, np.sqrt(var)


def test_orthogonal_and_trunc_normal_init():

    for shape in ((3, 5), (5, 3), (4, 2, 3, 3)):
        w = skiff.nn.init.orthogonal_(skiff.empty(*shape, dtype=skiff.float64), gain=2.0)
        flat = w.numpy().reshape(shape[0], -1)
        small = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
        np.testing.assert_allclose(small, 4.0 * np.eye(len(small)), atol=1e-12)
        tw = torch.nn.init.orthogonal_(torch.empty(*shape, dtype=torch.float64), gain=2.0)
        tf = tw.numpy().reshape(shape[0], -1)
        np.testing.assert_allclose(np.linalg.svd(flat, compute_uv=False),
                                   np.linalg.svd(tf, compute_uv=False), rtol=1e-12)
    w = skiff.nn.init.trunc_normal_(skiff.empty(200, 500, dtype=skiff.float64), mean=0.1,
                                    std=0.5, a=-0.4, b=0.9).numpy()
    mean, std = _truncated_normal_mean_std(0.1, 0.5, -0.4, 0.9)
    assert w.min() >= -0.4 and w.max() <= 0.9
    assert abs(w.mean() - mean) < 0.005 and abs(w.std() - std) < 0.005


@pytest.mark.parametrize("plan", ["exp_step", "linear_cos_multistep"])
def test_chained_scheduler_equals_torch(plan):
    lrs = []
    for lib, m in zip((skiff, torch), models()):
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        S = lib.optim.lr_scheduler
        if plan == "exp_step":
            parts = [S.ExponentialLR(opt, 0.9), S.StepLR(opt, 3, 0.5)]
        else:
            parts = [S.LinearLR(opt, start_factor=0.2, total_iters=4),
                     S.CosineAnnealingLR(opt, T_max=12), S.MultiStepLR(opt, [5, 8], 0.3)]
        sched = S.ChainedScheduler(parts)
        seen = [opt.param_groups[0]["lr"]]
        for _ in range(11):
            opt.step()
            sched.step()
            seen.append(sched.get_last_lr()[0])
        lrs.append(seen)
    np.testing.assert_allclose(lrs[0], lrs[1], rtol=1e-12, atol=1e-16)
    opt = skiff.optim.SGD(models()[0].parameters(), lr=0.1)
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        skiff.optim.lr_scheduler.ChainedScheduler(
            [skiff.optim.lr_scheduler.ReduceLROnPlateau(opt)], optimizer=opt)


@pytest.mark.filterwarnings("ignore:To copy construct")
def test_tensor_copies_and_as_tensor_shares_as_torch():
    seen = []
    for lib in (skiff, torch):
        arr = np.ones(3)
        w = lib.ones(3, dtype=lib.float64, requires_grad=True)
        (w * 2.0).sum().backward()
        kept = lib.tensor(w.grad)  # torch warns: use clone().detach()
        made, shared = lib.tensor(arr), lib.as_tensor(arr)
        w.grad.zero_()
        arr[0] = 5.0
        seen.append((kept.numpy().tolist(), made.numpy().tolist(), shared.numpy().tolist()))
    assert seen[0] == seen[1] == ([2.0] * 3, [1.0, 1.0, 1.0], [5.0, 1.0, 1.0])
