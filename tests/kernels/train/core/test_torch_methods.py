"""More of torch's tensor methods, functions and modules in skiff (tensor_more.py,
ops_einsum.py, nn/init.py, optim.Adam/StepLR, padded max pooling): each against torch in
float64, value and input gradient."""

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
X = rng.standard_normal((3, 4, 5))
XZ = X.copy()
XZ[1, 2, 3] = 0.0  # a zero: prod's gradient there is the others' product
IDX = rng.integers(0, 4, (3, 2, 5))
A, B = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
IMG = rng.standard_normal((2, 3, 7, 6))

CASES = {  # name: (inputs, skiff, torch)
    "gather": ((X,), lambda x: x.gather(1, IDX), lambda x: x.gather(1, torch.tensor(IDX))),
    "topk": ((X,), lambda x: x.topk(2, dim=1)[0], lambda x: x.topk(2, dim=1)[0]),
    "topk-small": ((X,), lambda x: x.topk(3, largest=False).values,
                   lambda x: x.topk(3, largest=False).values),
    "sort": ((X,), lambda x: x.sort(1, descending=True)[0],
             lambda x: x.sort(1, descending=True)[0]),
    "cumsum": ((X,), lambda x: x.cumsum(1), lambda x: x.cumsum(1)),
    "cumsum-dim": ((X,), lambda x: x.cumsum(dim=-1), lambda x: x.cumsum(dim=-1)),
    "prod": ((XZ,), lambda x: x.prod(2), lambda x: x.prod(2)),
    "prod-keep": ((XZ,), lambda x: x.prod(dim=0, keepdim=True),
                  lambda x: x.prod(dim=0, keepdim=True)),
    "prod-all": ((X[0, :2],), lambda x: x.prod(), lambda x: x.prod()),
    "flip": ((X,), lambda x: x.flip(0, 2), lambda x: x.flip(0, 2)),
    "tril": ((X,), lambda x: x.tril(), lambda x: x.tril()),
    "triu": ((X,), lambda x: x.triu(1), lambda x: x.triu(1)),
    "norm": ((X,), lambda x: x.norm(), lambda x: x.norm()),
    "norm-1": ((X,), lambda x: x.norm(1, dim=2), lambda x: x.norm(1, dim=2)),
    "norm-3": ((X,), lambda x: x.norm(3, dim=1, keepdim=True),
               lambda x: x.norm(3, dim=1, keepdim=True)),
    "amax": ((X,), lambda x: x.amax((0, 2)), lambda x: x.amax((0, 2))),
    "clone": ((X,), lambda x: x.clone() * 2, lambda x: x.clone() * 2),
    "squeeze": ((X[:, :1],), lambda x: x.squeeze(0).squeeze(dim=1),
                lambda x: x.squeeze(0).squeeze(dim=1)),
    "unsqueeze": ((X,), lambda x: x.unsqueeze(dim=1), lambda x: x.unsqueeze(dim=1)),
    "split": ((X,), lambda x: x.split(2, dim=2)[1], lambda x: x.split(2, dim=2)[1]),
    "einsum-bmm": ((A, B), lambda a, b: skiff.einsum("bij,bjk->bik", a, b),
                   lambda a, b: torch.einsum("bij,bjk->bik", a, b)),
    "einsum-implicit": ((A, B), lambda a, b: skiff.einsum("bij,bjk", a, b),
                        lambda a, b: torch.einsum("bij,bjk", a, b)),
    "einsum-sum": ((A,), lambda a: skiff.einsum("bij->j", a),
                   lambda a: torch.einsum("bij->j", a)),
    "einsum-ellipsis": ((A, B[0]), lambda a, b: skiff.einsum("...ij,jk->...ik", a, b),
                        lambda a, b: torch.einsum("...ij,jk->...ik", a, b)),
    "einsum-outer": ((A[0, 0], B[0, 0]), lambda a, b: skiff.einsum("i,j->ij", [a, b]),
                     lambda a, b: torch.einsum("i,j->ij", [a, b])),
    "max_pool2d-pad": ((IMG,), lambda x: F.max_pool2d(x, 3, 2, 1),
                       lambda x: TF.max_pool2d(x, 3, 2, 1)),
    "MaxPool2d-pad": ((IMG,), lambda x: nn.MaxPool2d(2, 2, padding=1)(x),
                      lambda x: torch.nn.MaxPool2d(2, 2, padding=1)(x)),
    "Softmax-dim": ((X,), lambda x: nn.Softmax(dim=1)(x), lambda x: torch.nn.Softmax(dim=1)(x)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_equal_to_torch(name):
    arrays, ours, theirs = CASES[name]
    xs = [Tensor(a, dtype=np.float64, requires_grad=True) for a in arrays]
    xt = [torch.tensor(a, requires_grad=True) for a in arrays]
    got, want = ours(*xs), theirs(*xt)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **TOL)
    w = np.random.default_rng(1).standard_normal(tuple(want.shape))
    (got * Tensor(w, dtype=np.float64)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    for a, b in zip(xs, xt):
        np.testing.assert_allclose(a.grad, b.grad.numpy(), **TOL)


def test_indices_and_logical_reductions():
    xs, xt = Tensor(X, dtype=np.float64), torch.tensor(X)
    for ours, theirs in [
        (xs.topk(2, dim=1).indices, xt.topk(2, dim=1).indices),
        (xs.sort(dim=2).indices, xt.sort(dim=2, stable=True).indices),
        (xs.argsort(1, descending=True), xt.argsort(1, descending=True)),
        ((xs > 0).any(), (xt > 0).any()), ((xs > 0).all(1), (xt > 0).all(1)),
        ((xs > -3).all(), (xt > -3).all()), ((xs > 0).any(dim=2, keepdim=True),
                                             (xt > 0).any(dim=2, keepdim=True)),
    ]:
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert xs.squeeze(1).shape == (3, 4, 5)  # a dim that is not 1 stays, as torch's
    t = Tensor([3, 1, 3, 2])
    np.testing.assert_array_equal(t.sort(descending=True).indices.numpy(),
                                  torch.tensor([3, 1, 3, 2]).sort(descending=True,
                                                                   stable=True).indices)
    with pytest.raises(ValueError, match="half the kernel"):
        F.max_pool2d(Tensor(IMG), 2, 2, 2)


@pytest.mark.parametrize("name,args", [
    ("xavier_uniform_", {}), ("xavier_normal_", {"gain": 2.0}),
    ("kaiming_uniform_", {"a": 0.2}), ("kaiming_normal_", {"mode": "fan_out",
                                                           "nonlinearity": "relu"}),
    ("uniform_", {"a": -0.3, "b": 0.5}), ("normal_", {"mean": 1.0, "std": 0.1}),
])
def test_init_draws_torch_distributions(name, args):
    from skiff import nn as public_nn

    w = nn.Parameter(np.zeros((200, 30, 3, 3)), dtype=np.float64)
    assert getattr(public_nn.init, name)(w, **args) is w
    tw = getattr(torch.nn.init, name)(torch.empty(200, 30, 3, 3, dtype=torch.float64), **args)
    ours, theirs = w.numpy(), tw.numpy()
    assert abs(ours.mean() - theirs.mean()) < 0.02 * max(theirs.std(), 1)
    assert ours.std() == pytest.approx(theirs.std(), rel=0.02)
    if "uniform" in name:
        assert ours.min() >= theirs.min() - 0.01 * theirs.std()
        assert ours.max() <= theirs.max() + 0.01 * theirs.std()
    for f in ("zeros_", "ones_"):
        np.testing.assert_array_equal(getattr(nn.init, f)(w).data,
                                      getattr(torch.nn.init, f)(tw).numpy())
    assert nn.init.calculate_gain("leaky_relu", 0.2) == torch.nn.init.calculate_gain(
        "leaky_relu", 0.2)


@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_adam_and_step_lr_equal_torch(wd):
    ours = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to("float64")
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                 torch.nn.Linear(8, 2)).double()
    theirs.load_state_dict({k: torch.tensor(v) for k, v in ours.state_dict().items()})
    opt, topt = optim.Adam(ours.parameters(), lr=0.05, weight_decay=wd), \
        torch.optim.Adam(theirs.parameters(), lr=0.05, weight_decay=wd)
    sched = skiff.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    tsched = torch.optim.lr_scheduler.StepLR(topt, step_size=3, gamma=0.5)
    x, y = rng.standard_normal((16, 4)), rng.standard_normal((16, 2))
    for _ in range(8):
        opt.zero_grad()
        topt.zero_grad()
        F.mse_loss(ours(Tensor(x, dtype=np.float64)), Tensor(y, dtype=np.float64)).backward()
        TF.mse_loss(theirs(torch.tensor(x)), torch.tensor(y)).backward()
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        assert opt.param_groups[0]["lr"] == pytest.approx(topt.param_groups[0]["lr"])
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k], v.numpy(), rtol=1e-7, atol=1e-9)
