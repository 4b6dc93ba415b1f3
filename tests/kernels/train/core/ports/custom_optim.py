"""A hand-written optimizer and schedule, as research code has them: a subclass of
torch.optim.Optimizer (``super().__init__(params, defaults)``, per-parameter ``self.state[p]``
filled on first use, an update of in-place tensor ops under ``@torch.no_grad()``, a closure) and
a warmup schedule subclassing ``_LRScheduler`` (``get_lr`` from ``last_epoch`` and
``base_lrs``)."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import _LRScheduler


class AdaBeliefLike(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.0):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_var"] = torch.zeros_like(p)
                state["step"] += 1
                if group["weight_decay"] != 0:
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                exp_avg, exp_avg_var = state["exp_avg"], state["exp_avg_var"]
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                diff = grad - exp_avg
                exp_avg_var.mul_(beta2).addcmul_(diff, diff, value=1 - beta2)
                bias1 = 1 - beta1 ** state["step"]
                bias2 = 1 - beta2 ** state["step"]
                denom = (exp_avg_var.add_(group["eps"]).sqrt() / bias2 ** 0.5).add_(group["eps"])
                p.addcdiv_(exp_avg, denom, value=-group["lr"] / bias1)
        return loss


class Warmup(_LRScheduler):
    def __init__(self, optimizer, warmup, last_epoch=-1):
        self.warmup = warmup
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        scale = min(1.0, (self.last_epoch + 1) / self.warmup)
        return [base * scale for base in self.base_lrs]


def main(X, y, init=None, epochs=3, batch=16):
    X = torch.tensor(X)
    y = torch.tensor(y)
    model = nn.Sequential(nn.Linear(X.shape[1], 10), nn.SiLU(), nn.Linear(10, 3)).double()
    if init is not None:
        model.load_state_dict(init)
    opt = AdaBeliefLike(model.parameters(), lr=0.02, weight_decay=0.01)
    sched = Warmup(opt, warmup=4)
    losses, lrs = [], []
    for _epoch in range(epochs):
        for i in range(0, len(X), batch):
            def closure(i=i):
                opt.zero_grad()
                loss = F.cross_entropy(model(X[i:i + batch]), y[i:i + batch])
                loss.backward()
                return loss
            losses.append(opt.step(closure).item())
            sched.step()
            lrs.append(sched.get_last_lr()[0])
    return model, losses, lrs, len(opt.state)
