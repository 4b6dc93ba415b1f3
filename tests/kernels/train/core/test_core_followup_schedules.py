"""Two (or three) schedules stepped on one optimizer without ChainedScheduler, as torch 2.13
composes them: the chainable ones (StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR,
CosineAnnealingLR) scale the lr the others set; LambdaLR sets it outright. The lr at every step
against torch's, float64."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

PAIRS = {
    "warmup_linear+step": lambda S, o: [S.LinearLR(o, start_factor=0.1, total_iters=4),
                                        S.StepLR(o, step_size=3, gamma=0.5)],
    "exponential+step": lambda S, o: [S.ExponentialLR(o, 0.9), S.StepLR(o, 4, 0.3)],
    "step+exponential": lambda S, o: [S.StepLR(o, 4, 0.3), S.ExponentialLR(o, 0.9)],
    "warmup_linear+cosine_eta_min": lambda S, o: [
        S.LinearLR(o, start_factor=0.25, total_iters=3),
        S.CosineAnnealingLR(o, T_max=5, eta_min=1e-3)],
    "constant+multistep": lambda S, o: [S.ConstantLR(o, factor=0.5, total_iters=3),
                                        S.MultiStepLR(o, [2, 6, 6, 9], 0.5)],
    "lambda+step": lambda S, o: [S.LambdaLR(o, lambda e: 1.0 / (1 + e)), S.StepLR(o, 2, 0.5)],
    "step+lambda": lambda S, o: [S.StepLR(o, 2, 0.5), S.LambdaLR(o, lambda e: 0.9 ** e)],
    "three": lambda S, o: [S.LinearLR(o, start_factor=0.2, total_iters=5),
                           S.ExponentialLR(o, 0.95), S.MultiStepLR(o, [4, 8], 0.1)],
}


def _lrs(lib, plan, chained=False, steps=16):
    torch.manual_seed(0)
    layer = lib.nn.Linear(3, 2)
    opt = lib.optim.SGD([{"params": [layer.weight]}, {"params": [layer.bias], "lr": 0.3}],
                        lr=0.1, momentum=0.9)
    S = lib.optim.lr_scheduler
    parts = PAIRS[plan](S, opt)
    scheds = [S.ChainedScheduler(parts)] if chained else parts
    seen = [[g["lr"] for g in opt.param_groups]]
    for _ in range(steps):
        opt.step()
        for s in scheds:
            s.step()
        seen.append([g["lr"] for g in opt.param_groups])
        assert scheds[-1].get_last_lr() == seen[-1]
    return np.array(seen)


@pytest.mark.parametrize("plan", sorted(PAIRS))
def test_schedules_side_by_side_equal_torch(plan):
    ours, theirs = _lrs(skiff, plan), _lrs(torch, plan)
    np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-17)
    assert not np.allclose(ours[1:, 0], ours[1, 0])  # the lr did change


@pytest.mark.parametrize("plan", ["warmup_linear+cosine_eta_min", "lambda+step", "three"])
def test_chained_scheduler_equals_stepping_side_by_side_and_torch(plan):
    ours = _lrs(skiff, plan, chained=True)
    np.testing.assert_allclose(ours, _lrs(torch, plan, chained=True), rtol=1e-13, atol=1e-17)
    np.testing.assert_allclose(ours, _lrs(skiff, plan), rtol=0, atol=0)


def test_single_chainable_schedule_still_its_closed_form():
    """Alone, the recursive form is the closed form (past T_max the cosine rises again)."""
    for make in (lambda S, o: S.CosineAnnealingLR(o, T_max=4, eta_min=0.01),
                 lambda S, o: S.LinearLR(o, start_factor=0.3, total_iters=3),
                 lambda S, o: S.MultiStepLR(o, [2, 5], 0.5)):
        opt = skiff.optim.SGD(skiff.nn.Linear(2, 2).parameters(), lr=0.2)
        sched = make(skiff.optim.lr_scheduler, opt)
        for step in range(1, 12):
            sched.step()
            assert opt.param_groups[0]["lr"] == pytest.approx(sched.lr_at(step, 0.2), rel=1e-12)


def test_constant_lr_defaults_are_torchs():
    seen = []
    for lib in (skiff, torch):
        opt = lib.optim.SGD(lib.nn.Linear(2, 2).parameters(), lr=0.3)
        sched = lib.optim.lr_scheduler.ConstantLR(opt)
        lrs = [opt.param_groups[0]["lr"]]
        for _ in range(7):
            opt.step()
            sched.step()
            lrs.append(opt.param_groups[0]["lr"])
        seen.append(lrs)
    np.testing.assert_allclose(seen[0], seen[1], rtol=1e-15)
    opt = skiff.optim.SGD(skiff.nn.Linear(2, 2).parameters(), lr=0.3)
    with pytest.raises(ValueError, match="between 0 and 1"):
        skiff.optim.lr_scheduler.ConstantLR(opt, factor=1.5)
