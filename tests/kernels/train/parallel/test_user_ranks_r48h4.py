"""Round 48 (h4): ``Trainer(model, strategy="auto")`` on 2 real ranks as a user runs it,
against torch 2.13 in one process (float64, the same initial weights and global batches).

One launch (``scripts/user_ranks_r48h4_check.py``) checks:

- a classifier with class weights, ``grad_accum=2`` and 37 rows at batch 8: the epoch's last
  batch of 5 rows falls 3 / 2 on the ranks and its window holds that one micro-batch; a
  validation set each epoch, early stopping (patience 1) that both ranks agree on, and
  ``evaluate(per_class=True)`` after. The oracle is skiff's documented rule for class weights
  over parts (DDP's: each rank's weighted mean; the uneven batch's ranks weighted by their
  rows, a window by its micro-batches), written as a torch loop; the validation is torch's
  ``CrossEntropyLoss(weight=w)`` over the whole validation set, the confusion matrix counted
  from its argmax;
- a user's NAdam and ASGD of two parameter groups of other settings under a cosine schedule
  with ``eta_min`` (auto picks zero2; round 47 checked them only in one process): a run cut
  after step 3 on the 2 ranks and resumed in this process, and this process's run cut after
  step 3 resumed on the 2 ranks: torch's optimizer of the same groups, 3 and 6 steps;
- the same optimizers (no schedule) through two ``train(steps=3)`` calls on the 2 ranks:
  torch's one optimizer through 6 steps (a fix: the second call started afresh).
"""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402

from .mpi_util import HERE, run_mpi  # noqa: E402

sys.path.insert(0, str(HERE / "scripts"))
import user_ranks_r48h4_check as check  # noqa: E402

# float64 throughout: the ranks sum their halves in another order than one process (~1e-16
# seen); 1e-10 on losses and weights leaves a wide margin for another machine's BLAS
TOL = 1e-10


def _in_process(fn, *args, **kwargs):
    """A run in this process, the global generators left as they were (a resume restores
    the ones its checkpoint saved)."""
    saved = np.random.get_state(), random.getstate(), torch.get_rng_state()
    try:
        with skiff.random.fork_rng():
            return fn(*args, **kwargs)
    finally:
        np.random.set_state(saved[0])
        random.setstate(saved[1])
        torch.set_rng_state(saved[2])


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("user_ranks")
    for kind in check.GROUPS:  # the one-process cuts the ranks resume
        _in_process(check.run_groups, kind, folder / f"one-{kind}")
    got = run_mpi(2, "user_ranks_r48h4_check.py", folder, timeout=300)
    resumed = {kind: _in_process(check.run_groups, kind, folder / f"two-{kind}", resume=True)
               for kind in check.GROUPS}
    return got, resumed


def _torch_classifier():
    """Steps' losses, validations (step, loss, accuracy), the best step, the weights the
    model ends with, and the confusion matrix of the validation set."""
    (x, y), (vx, vy) = check.class_data()
    t = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(),
                            torch.nn.Linear(16, 3)).double()
    t.load_state_dict({k: torch.tensor(np.asarray(v))
                       for k, v in check.classifier().state_dict().items()})
    opt = torch.optim.SGD(t.parameters(), lr=check.LR, momentum=0.9)
    crit = torch.nn.CrossEntropyLoss(weight=torch.tensor(check.CLASS_WEIGHT,
                                                          dtype=torch.float64))
    window = check.BATCH * check.ACCUM
    losses, vals, best, step = [], [], None, 0
    for epoch in range(check.EPOCHS):
        order = np.random.default_rng([check.SEED, epoch]).permutation(check.N)
        for i in range(0, check.N, window):
            micro = [order[j:j + check.BATCH] for j in range(i, min(i + window, check.N),
                                                             check.BATCH)]
            # each rank's weighted mean over its rows r::2, weighted by its share of the
            # micro-batch's rows; the window's micro-batches averaged
            loss = sum(crit(t(torch.tensor(x[mb[r::2]])), torch.tensor(y[mb[r::2]]))
                       * (len(mb[r::2]) / len(mb)) for mb in micro for r in (0, 1)) / len(micro)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            step += 1
        with torch.no_grad():
            out = t(torch.tensor(vx))
            val = crit(out, torch.tensor(vy)).item()
            acc = float((out.argmax(1).numpy() == vy).mean())
        vals.append((step, val, acc))
        if best is None or val < best[1] - 1e-4 * abs(best[1]):  # skiff's min_delta
            best = (step, val, {k: v.clone() for k, v in t.state_dict().items()})
        else:  # patience 1: stop, the best weights back
            t.load_state_dict(best[2])
            break
    with torch.no_grad():
        out = t(torch.tensor(vx))
        pred = out.argmax(1).numpy()
        val = crit(out, torch.tensor(vy)).item()
    confusion = np.zeros((3, 3), dtype=int)
    np.add.at(confusion, (vy, pred), 1)
    return losses, vals, best[0], {k: v.numpy() for k, v in t.state_dict().items()}, \
        val, confusion


@pytest.mark.mpi
def test_class_weights_accumulation_uneven_batch_and_early_stopping_on_two_ranks(ranks):
    losses, vals, best_step, weights, val, confusion = _torch_classifier()
    assert best_step < len(losses)  # it stopped early and went back to an earlier step
    got = [r["cw"] for r in ranks[0]]
    assert got[0]["strategy"] in ("dp", "zero1", "zero2")
    for r in got:
        np.testing.assert_allclose(r["losses"], losses, rtol=TOL, atol=TOL)
        assert [v["step"] for v in r["val"]] == [v[0] for v in vals]
        np.testing.assert_allclose([v["val_loss"] for v in r["val"]], [v[1] for v in vals],
                                   rtol=TOL)
        assert [v["val_accuracy"] for v in r["val"]] == [v[2] for v in vals]
        assert r["best_step"] == best_step
        for k, v in weights.items():
            np.testing.assert_allclose(np.asarray(r["w"][k]), v, rtol=0, atol=TOL, err_msg=k)
        np.testing.assert_allclose(r["evaluate"]["val_loss"], val, rtol=TOL)
        assert r["evaluate"]["confusion"] == confusion.tolist()
    assert got[0] == got[1]  # the ranks agree on everything, bit for bit


def torch_run(kind, steps, schedule=True):
    """torch's weights and groups' lrs after ``steps`` steps of the user's optimizer (and
    scheduler), the MSE of the batches of 8 rows in order, cycling."""
    x, y = (torch.tensor(a) for a in check.group_data())
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                            torch.nn.Linear(8, 2)).double()
    t.load_state_dict({k: torch.tensor(np.asarray(v))
                       for k, v in check.group_net().state_dict().items()})
    opt = check.groups_of(torch, kind, list(t.named_parameters()))
    sched = check.schedule(torch, opt) if schedule else None
    for s in range(steps):
        lo = s % (len(x) // 8) * 8
        loss = torch.nn.functional.mse_loss(t(x[lo:lo + 8]), y[lo:lo + 8])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
    return ({k: v.detach().numpy() for k, v in t.state_dict().items()},
            [g["lr"] for g in opt.param_groups])


@pytest.fixture(scope="module")
def torch_groups():
    """torch's weights and groups' lrs after CUT and STEPS steps, per optimizer."""
    return {(kind, steps): torch_run(kind, steps) for kind in check.GROUPS
            for steps in (check.CUT, check.STEPS)}


def _close(got, want, what):
    weights, group_lrs = want
    for k, v in weights.items():
        np.testing.assert_allclose(np.asarray(got["w"][k]), v, rtol=0, atol=1e-12,
                                   err_msg=f"{what} {k}")
    np.testing.assert_allclose(got["lrs"], group_lrs, rtol=1e-12, err_msg=what)


@pytest.mark.mpi
@pytest.mark.parametrize("kind", sorted(check.GROUPS))
def test_zero_groups_cut_and_resumed_between_one_and_two_ranks(ranks, torch_groups, kind):
    got, resumed = ranks
    for r in got:
        assert r[f"cut:{kind}"]["strategy"] == "zero2"
        _close(r[f"cut:{kind}"], torch_groups[kind, check.CUT], f"{kind} 2 ranks to step 3")
        _close(r[f"resumed:{kind}"], torch_groups[kind, check.STEPS], f"{kind} 1 -> 2 ranks")
    _close(resumed[kind], torch_groups[kind, check.STEPS], f"{kind} 2 ranks -> 1")


@pytest.mark.mpi
@pytest.mark.parametrize("kind", sorted(check.GROUPS))
def test_a_second_train_call_under_zero_goes_on_with_the_users_optimizer(ranks, kind):
    """``train(steps=3)`` twice under zero2: torch's one optimizer through 6 steps. The
    second call's new ZeRO slice got a fresh optimizer of the user's class before (the
    built-in AdamW's state was carried over since round 27, a user's was not): losses
    3e-3 (NAdam) and 2e-9 (ASGD) off one process, whose optimizer goes on."""
    want = torch_run(kind, check.STEPS, schedule=False)
    for r in ranks[0]:
        assert r[f"twice:{kind}"]["strategy"] == "zero2"
        _close(r[f"twice:{kind}"], want, f"{kind} train() twice")
