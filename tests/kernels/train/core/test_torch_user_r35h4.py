"""Round 35 (h4): what a torch user's programs (a RealNVP flow, a message-passing graph net,
a SimCLR loss with a learned temperature, an adaptive-softmax LM head with GaussianNLL/
PoissonNLL/MultiLabelSoftMargin losses; /work/round35/h4/p1.py) found, against torch 2.13 in
float64: a 0-d parameter's gradient was a numpy scalar, so SGD's momentum buffer for it never
accumulated (a learned temperature drifted from torch's after two steps); ``tensor(np.log(.2))``
held a numpy scalar that ``load_state_dict`` could not write; ``nn.AdaptiveLogSoftmaxWithLoss``
was missing."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
import skiff.nn as snn  # noqa: E402

R = np.random.default_rng(355)

OPTS = {"sgd_nesterov": lambda L, p: L.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True),
        "sgd_wd_dampening": lambda L, p: L.optim.SGD(p, lr=0.05, momentum=0.8, weight_decay=0.1,
                                                     dampening=0.1),
        "rmsprop_momentum": lambda L, p: L.optim.RMSprop(p, lr=0.01, momentum=0.9),
        "adam": lambda L, p: L.optim.Adam(p, lr=0.01)}


@pytest.mark.parametrize("opt", sorted(OPTS))
def test_scalar_parameter_optimizer_state(opt):
    """A learned temperature (``nn.Parameter(tensor(log 0.2))``) under momentum."""
    a, w0 = R.standard_normal((6, 4)), R.standard_normal((4, 4))
    out = []
    for L in (skiff, torch):
        tau = L.nn.Parameter(L.tensor(np.log(0.2)))
        w = L.nn.Parameter(L.tensor(w0))
        o = OPTS[opt](L, [tau, w])
        taus = []
        for _ in range(4):
            o.zero_grad()
            z = L.nn.functional.normalize(L.tensor(a) @ w, dim=-1)
            L.logsumexp(z @ z.T / tau.exp(), dim=1).mean().backward()
            o.step()
            taus.append(float(tau.detach()))
        out.append((taus, {k: np.asarray(v, dtype=float) for k, v in o.state[tau].items()
                           if k != "step"}, np.asarray(w.detach())))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12)
    assert sorted(out[0][1]) == sorted(out[1][1])
    for k in out[1][1]:
        np.testing.assert_allclose(out[0][1][k], out[1][1][k], rtol=1e-12)
    np.testing.assert_allclose(out[0][2], out[1][2], rtol=1e-12)


def test_numpy_scalar_tensor_is_a_writable_0d_array():
    t = skiff.tensor(np.log(0.2))
    assert isinstance(t._data, np.ndarray) and t.shape == () and t.dtype == np.float64
    m = snn.Module()
    m.t = snn.Parameter(skiff.tensor(np.float64(1.5)))
    m.load_state_dict({"t": skiff.tensor(2.5)})  # it raised: a numpy scalar has no [...]
    assert float(m.t) == 2.5


def _asm_pair(head_bias):
    torch.manual_seed(4)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(12, 20, cutoffs=[4, 9, 15], div_value=2.0,
                                             head_bias=head_bias).double()
    sm = snn.AdaptiveLogSoftmaxWithLoss(12, 20, cutoffs=[4, 9, 15], div_value=2.0,
                                        head_bias=head_bias).double()
    assert sorted(sm.state_dict()) == sorted(tm.state_dict())
    for k, v in tm.state_dict().items():
        assert tuple(sm.state_dict()[k].shape) == tuple(v.shape), k
    sm.load_state_dict({k: skiff.tensor(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    return sm, tm


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_with_loss(head_bias):
    sm, tm = _asm_pair(head_bias)
    x = R.standard_normal((11, 12)) * 2
    y = np.array([0, 3, 4, 8, 9, 14, 15, 19, 2, 19, 5])
    sx, tx = skiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    so, to = sm(sx, skiff.tensor(y)), tm(tx, torch.tensor(y))
    np.testing.assert_allclose(np.asarray(so.output.detach()), to.output.detach().numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(float(so.loss), float(to.loss), rtol=1e-12)
    (so.loss + (so.output ** 2).sum() * 0.01).backward()
    (to.loss + (to.output ** 2).sum() * 0.01).backward()
    np.testing.assert_allclose(np.asarray(sx.grad), tx.grad.numpy(), rtol=1e-10, atol=1e-14)
    for (n, p), (n2, q) in zip(sm.named_parameters(), tm.named_parameters()):
        assert n == n2
        np.testing.assert_allclose(np.asarray(p.grad), q.grad.numpy(), rtol=1e-10, atol=1e-14)
    lp_s, lp_t = sm.log_prob(skiff.tensor(x)), tm.log_prob(torch.tensor(x))
    np.testing.assert_allclose(np.asarray(lp_s.detach()), lp_t.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.exp(np.asarray(lp_s.detach())).sum(1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(sm.predict(skiff.tensor(x))),
                                  tm.predict(torch.tensor(x)).numpy())
    # unbatched: a 1-D input with a 0-d target
    s1, t1 = sm(skiff.tensor(x[3]), skiff.tensor(np.int64(y[3]))), tm(torch.tensor(x[3]),
                                                                       torch.tensor(y[3]))
    np.testing.assert_allclose(float(s1.output.detach()), float(t1.output), rtol=1e-12)


def test_adaptive_log_softmax_errors():
    sm, tm = _asm_pair(False)
    for bad in ([4, 4, 9], [0, 5], [5, 20], [9, 4]):
        with pytest.raises(ValueError, match="cutoffs should be a sequence"):
            snn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs=bad)
        with pytest.raises(ValueError, match="cutoffs should be a sequence"):
            torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs=bad)
    x = R.standard_normal((3, 12))
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\]"):
        sm(skiff.tensor(x), skiff.tensor(np.array([0, 20, 3])))
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\]"):
        tm(torch.tensor(x), torch.tensor([0, 20, 3]))
    with pytest.raises(RuntimeError, match="same size in the batch"):
        sm(skiff.tensor(x), skiff.tensor(np.array([0, 1])))


SCHEDS = {
    "StepLR": lambda S, o: S.StepLR(o, 2, 0.5),
    "MultiStepLR": lambda S, o: S.MultiStepLR(o, [1, 3], 0.3),
    "ExponentialLR": lambda S, o: S.ExponentialLR(o, 0.8),
    "ConstantLR": lambda S, o: S.ConstantLR(o, 0.25, total_iters=3),
    "LinearLR": lambda S, o: S.LinearLR(o, 0.2, 1.0, total_iters=4),
    "PolynomialLR": lambda S, o: S.PolynomialLR(o, total_iters=4, power=2.0),
    "CosineAnnealingLR": lambda S, o: S.CosineAnnealingLR(o, 5, eta_min=0.01),
    "LambdaLR": lambda S, o: S.LambdaLR(o, lambda e: 0.9 ** e),
}


@pytest.mark.parametrize("name", sorted(SCHEDS))
def test_param_group_added_after_the_scheduler(name):
    """A group added with ``add_param_group`` after the schedule was made (a fine-tuning
    script unfreezing the backbone): torch's recursive schedules scale it too (skiff's left
    its lr alone); where torch's form zips the groups with base_lrs (LambdaLR, a
    CosineAnnealingLR step past T_max) both raise ValueError."""
    lrs = []
    for L in (skiff, torch):
        p, q = L.nn.Parameter(L.tensor(np.ones(3))), L.nn.Parameter(L.tensor(np.ones(2)))
        o = L.optim.SGD([p], lr=0.1)
        s = SCHEDS[name](L.optim.lr_scheduler, o)
        o.add_param_group({"params": [q], "lr": 0.04})
        got = []
        for _ in range(6):
            o.zero_grad()
            ((p ** 2).sum() + (q ** 2).sum()).backward()
            o.step()
            try:
                s.step()
            except ValueError:  # torch's zip(..., strict=True) of the groups and base_lrs:
                got.append("raised")  # LambdaLR at once, CosineAnnealingLR at T_max + 1
                break
            got.append([g["lr"] for g in o.param_groups])
        lrs.append(got)
    assert len(lrs[0]) == len(lrs[1]) and (lrs[0][-1] == "raised") == (lrs[1][-1] == "raised")
    for a, b in zip(*lrs):
        if a != "raised":
            np.testing.assert_allclose(a, b, rtol=1e-12)
