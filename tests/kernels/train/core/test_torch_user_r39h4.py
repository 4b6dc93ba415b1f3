"""Round 39 (h4): a user porting torch training scripts: ``lr=torch.tensor(...)`` (refused
by every skiff optimizer), the 3x3 Winograd convolution keeping its input (no padded copy;
an in-place write to that input after the forward is torch's error now), and a small ResNet
step (BatchNorm, Nesterov SGD with decay groups, LinearLR -> cosine SequentialLR, label
smoothing, clipping, reflect-padded random crops, flips) against torch 2.13 in float64."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

R = np.random.default_rng(3904)
X = R.normal(size=(8, 3, 8, 8))
Y = R.integers(0, 5, 8)


def _net(t):
    nn = t.nn
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16),
                         nn.ReLU(inplace=True), nn.Conv2d(16, 16, 3, padding=1, bias=False),
                         nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(16, 5))


def _pair():
    torch.manual_seed(0)
    tm, sm = _net(torch).double(), _net(skiff).double()
    sm.load_state_dict({k: skiff.tensor(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    return tm, sm


@pytest.mark.parametrize("name,kw", [("SGD", {"momentum": 0.9, "nesterov": True}),
                                     ("Adam", {}), ("AdamW", {"weight_decay": 0.1}),
                                     ("RMSprop", {"centered": True}), ("Adagrad", {}),
                                     ("NAdam", {}), ("RAdam", {}), ("Adamax", {})])
def test_a_tensor_lr_trains_as_torchs(name, kw):
    tm, sm = _pair()
    out = []
    for t, m in ((torch, tm), (skiff, sm)):
        # a float64 lr: torch computes Adam's step size of a float32 one in float32 (1e-9)
        opt = getattr(t.optim, name)(m.parameters(), lr=t.tensor(0.01, dtype=t.float64), **kw)
        sched = t.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
        for _ in range(2):
            loss = t.nn.functional.cross_entropy(m(t.tensor(X)), t.tensor(Y))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        out.append((m[0].weight.detach().numpy(), float(opt.param_groups[0]["lr"])))
    assert np.abs(out[0][0] - np.asarray(out[1][0])).max() < 1e-12
    assert out[1][1] == pytest.approx(out[0][1], rel=1e-15)


def test_a_tensor_lr_of_more_than_one_element_is_refused_as_torchs():
    p = skiff.nn.Parameter(skiff.zeros(2))
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        skiff.optim.Adam([p], lr=skiff.tensor([0.1, 0.2]))


def test_winograd_conv_keeps_its_input_and_an_inplace_write_to_it_is_torchs_error():
    x = skiff.tensor(R.normal(size=(2, 16, 6, 6)), requires_grad=True)
    conv = skiff.nn.Conv2d(16, 16, 3, padding=1).double()
    h = x * 1.0
    y = conv(h)
    assert type(y._node).__name__ == "Conv3x3WinogradFn"
    assert np.shares_memory(y._node.saved[0], h._data)  # no padded copy of the input
    th = torch.tensor(R.normal(size=(2, 16, 6, 6)), requires_grad=True) * 1.0
    ty = torch.nn.functional.conv2d(th, torch.tensor(conv.weight.detach().numpy()), padding=1)
    for t_h, t_y in ((th, ty), (h, y)):
        with torch.no_grad() if t_h is th else skiff.no_grad():
            t_h.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            t_y.sum().backward()


def test_small_resnet_step_as_torchs():
    tm, sm = _pair()
    res = []
    for t, m in ((torch, tm), (skiff, sm)):
        F = t.nn.functional
        decay = [p for p in m.parameters() if p.ndim > 1]
        rest = [p for p in m.parameters() if p.ndim <= 1]
        opt = t.optim.SGD([{"params": decay, "weight_decay": 5e-4},
                           {"params": rest, "weight_decay": 0.0}], lr=0.1, momentum=0.9,
                          nesterov=True)
        warm = t.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=2)
        cos = t.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2, eta_min=1e-4)
        sched = t.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[2])
        crit = t.nn.CrossEntropyLoss(label_smoothing=0.1)
        rng = np.random.default_rng(0)
        losses = []
        for _ in range(4):
            xb = F.pad(t.tensor(X), (2, 2, 2, 2), mode="reflect")
            i, j = rng.integers(0, 5, 2)
            xb = xb[:, :, i:i + 8, j:j + 8]
            if rng.random() < 0.5:
                xb = t.flip(xb, dims=[3])
            m.train()
            opt.zero_grad(set_to_none=True)
            loss = crit(m(xb), t.tensor(Y))
            loss.backward()
            t.nn.utils.clip_grad_norm_(m.parameters(), max_norm=1.0)
            opt.step()
            sched.step()
            losses.append(loss.item())
        m.eval()
        with t.no_grad():
            out = m(t.tensor(X))
        res.append((losses, out.numpy().copy(), m[1].running_var.numpy().copy()))
    assert np.allclose(res[0][0], res[1][0], rtol=0, atol=1e-12)
    for a, b in zip(res[0][1:], res[1][1:]):
        assert np.abs(a - np.asarray(b)).max() < 1e-10


def test_continuous_bernoulli_gradient_at_zero_logits_is_torchs():
    # a VAE decoder with a zero-initialized last layer: every logit is 0 at the first step
    v = np.array([0.2, 0.5, 0.9, 0.0])
    grads = []
    for t in (torch, skiff):
        z = t.zeros(4, dtype=t.float64, requires_grad=True)
        t.distributions.ContinuousBernoulli(logits=z).log_prob(t.tensor(v)).sum().backward()
        grads.append(z.grad.numpy())
    assert np.abs(grads[0] - np.asarray(grads[1])).max() < 1e-12
