"""Round 41 (h9): a user's optimizer instance under tp, pp and ep on 2 ranks.

``opt = AdamW([{decay}, {no decay, another lr}], lr=...)`` (nanoGPT's groups) with a
``StepLR(opt, ...)`` instance: under tp the split layers' slices are new tensors, so the
instance was rebuilt as a flat slice's one group: two groups of other settings were refused
("steps one flat slice", which tp does not), and in ``bf16-mixed`` the masters of the split
layers found no group and were never stepped (the loss 0.78 off one process's after 8
steps). Now each stepped tensor finds its group by the model's name for it. And a split
model's checkpoint named the optimizer's state by index in the model's order, which an
instance's groups do not keep: under tp and pp the resume failed ("the pieces of
'optim/h.0.attn.c_attn.bias/exp_avg' cover 32 of the 16 positions"; pp: IndexError, the
instance holds every stage's parameters), under ep it loaded moments onto the wrong
parameters (5.7e-3 off the uninterrupted run's losses). Now the checkpoint names them by
the optimizer's own order. tp, pp and ep here are cut at step 5 and resumed.

Then ``keep_best=2`` (the two best checkpoints, round 41 h9) with the ranks' sharded
checkpoints under tp and pp, SIGTERMed mid-run and resumed: the same checkpoints kept, the
same scores, as the uninterrupted run, and the same two best as one process (whose scores
are its validation rows': the two smallest).

Round 42 (h5): ep in ``bf16-mixed`` (refused before), its gradients clipped to norm 0.5,
cut at step 5 and resumed, against torch's GPT MoE loop (a top-2-of-4 router with each
expert's capacity and the Switch balancing loss, written in torch); ep in fp32 against it too
(it was compared with one skiff process only). ep's bf16 checkpoint read by one process, one
process's resumed under ep (the masters by name), and dp's resumed under tp (an instance's
groups' moments by name).

Oracle: torch 2.13's GPT-2 loop (the same initial weights, batches in order, AdamW groups,
StepLR) in float64, and one skiff process on the same run. The ranks write their losses, lrs
and full weights to files.
"""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff.kernels.train.models.gpt import GPT, GPTConfig

from .mpi_util import run_mpi

torch = pytest.importorskip("torch")

V, T, C, H, L = 16, 8, 16, 2, 2


def _tokens():
    x = np.random.default_rng(0).integers(0, V, (32, T))
    return x, (x + 1) % V


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.attn = nn.Module()
        self.attn.c_attn, self.attn.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.mlp = nn.Module()
        self.mlp.c_fc, self.mlp.c_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        B, n, _ = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.reshape(B, n, H, C // H).transpose(1, 2) for t in (q, k, v))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn.c_proj(a.transpose(1, 2).reshape(B, n, C))
        if hasattr(self.mlp, "moe"):
            return x + self.mlp.moe(self.ln_2(x))
        h = torch.nn.functional.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp.c_proj(h)


class _TorchGPT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.h = nn.ModuleList([_Block() for _ in range(L)])
        self.ln_f, self.lm_head = nn.LayerNorm(C), nn.Linear(C, V, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


class _Expert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.proj = torch.nn.Linear(C, 16), torch.nn.Linear(16, C)

    def forward(self, x):
        return self.proj(torch.nn.functional.gelu(self.fc(x), approximate="tanh"))


class _TorchMoE(torch.nn.Module):
    """Round 42 (h5): top-2 of 4 experts, each taking at most ceil(1.25 n k / E) slots,
    earlier tokens first (Switch / GShard), gates the router's probabilities, and the Switch
    load-balancing loss E * sum_e f_e P_e kept in ``aux``: written from those papers'
    formulas in torch (``torch.topk``, one-hot cumulative counts), not from skiff's code."""

    E, K = 4, 2

    def __init__(self):
        super().__init__()
        self.router = torch.nn.Linear(C, self.E, bias=False)
        self.experts = torch.nn.ModuleList([_Expert() for _ in range(self.E)])

    def forward(self, x):
        shape, x = x.shape, x.reshape(-1, C)
        n, E, K = x.shape[0], self.E, self.K
        probs = torch.softmax(self.router(x), dim=-1)
        exp = torch.topk(probs, K, dim=-1).indices.reshape(-1)  # slots, token by token
        tok = torch.arange(n).repeat_interleave(K)
        onehot = torch.nn.functional.one_hot(exp, E)
        keep = (onehot.cumsum(0) - 1).gather(1, exp[:, None])[:, 0] < int(
            np.ceil(1.25 * n * K / E))
        out = torch.zeros_like(x)
        for e in range(E):
            t = tok[keep & (exp == e)]
            out = out.index_add(0, t, self.experts[e](x[t]) * probs[t, e][:, None])
        self.aux = E * (probs.mean(0) * onehot.sum(0).to(probs.dtype) / (n * K)).sum()
        return out.reshape(shape)


def _torch_run(init, moe=False, clip=None):
    tm = _TorchGPT().double()
    if moe:  # a GPT MoE: each block's MLP is a _TorchMoE (skiff's names: mlp.moe.*)
        for b in tm.h:
            b.mlp = torch.nn.Module()
            b.mlp.moe = _TorchMoE().double()
    tm.load_state_dict({k: torch.tensor(v) for k, v in init.items()})  # strict: same names
    named = list(tm.named_parameters())
    opt = torch.optim.AdamW(
        [{"params": [p for _, p in named if p.ndim >= 2], "weight_decay": 0.1},
         {"params": [p for _, p in named if p.ndim < 2], "weight_decay": 0.0, "lr": 0.005}],
        lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, 3, 0.5)
    x, y = (torch.tensor(a) for a in _tokens())
    losses, norms = [], []
    for _ in range(2):
        for i in range(0, len(x), 8):
            logits = tm(x[i:i + 8])
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), y[i:i + 8].reshape(-1))
            if moe:  # gpt_moe's loss: aux_coef 0.01 x each layer's balancing loss
                loss = loss + 0.01 * sum(b.mlp.moe.aux for b in tm.h)
            loss.backward()
            if clip is not None:  # torch's total norm before clipping, as skiff reports it
                norms.append(float(torch.nn.utils.clip_grad_norm_(tm.parameters(), clip)))
            opt.step()
            opt.zero_grad()
            sched.step()
            losses.append(loss.item())
    weights = {k: v.detach().numpy() for k, v in tm.state_dict().items()}
    return (np.array(losses), weights) if clip is None else (np.array(losses), weights, norms)


@pytest.fixture(scope="module")
def ranks_run(tmp_path_factory):
    """One launch for both tests (mpiexec's start, the imports of 2 ranks, paid once)."""
    folder = tmp_path_factory.mktemp("ranks")
    run_mpi(2, "optimizer_split_r41h9_check.py", folder, timeout=240)
    return folder


@pytest.mark.mpi
def test_the_k_best_sharded_checkpoints_survive_a_sigterm_and_resume(ranks_run):
    """keep_best=2 with early stopping (patience 2): validations every 2 steps, the best at
    step 6, the run stops at step 10 with step 6's weights put back (round 31's case, now
    with the K best kept: it replaces test_early_split_resume_r31's tp and pp runs)."""
    import json

    one = json.loads((ranks_run / "keep-rank0.json").read_text())["one"]
    val = one["val"]  # validations at steps 2, 4, ...
    steps = [2 * (i + 1) for i in range(len(val))]
    top = sorted(steps, key=lambda s: val[s // 2 - 1])[:2]
    assert one["record"]["best_steps"] == top and top[0] not in (2, one["steps"]), one
    assert (one["steps"], one["best_step"]) == (10, top[0]), one
    # the final checkpoint holds the best's weights again: no second candidate (round 41 h9)
    assert sorted(map(int, one["record"]["scores"])) == top
    ref = np.load(ranks_run / "one-w0.npz")
    for r in (0, 1):
        res = json.loads((ranks_run / f"keep-rank{r}.json").read_text())
        for kind in ("tp", "pp"):
            whole, cut, resumed = (res[kind][n] for n in ("whole", "cut", "resumed"))
            assert cut["stopped"] == "cancelled" and cut["steps"] < one["steps"], cut
            for got in (whole, resumed):
                assert (got["steps"], got["best_step"]) == (10, top[0]), (kind, got)
                assert got["stopped"].startswith("early stopping"), (kind, got)
                assert got["kept"] == [f"step-{s:08d}" for s in sorted({*top, 10})], got
                assert got["best"] == f"step-{top[0]:08d}"
            assert resumed["record"] == whole["record"], kind
            for s, v in whole["record"]["scores"].items():
                assert abs(v - one["record"]["scores"][s]) < 1e-5, (kind, s)
    for kind in ("tp", "pp"):
        whole, resumed = (np.load(ranks_run / f"{kind}-{n}.npz") for n in ("whole-w0", "cut-w1"))
        for k in ref.files:  # early stopping's weights: the resumed run's are the whole run's,
            np.testing.assert_array_equal(resumed[k], whole[k], err_msg=k)
            # and one process's (Adam at lr 0.03 moves a weight ~0.1 in the 4 steps after
            # the best; float32 sums of tp/pp: 3e-3 apart)
            assert np.abs(whole[k] - ref[k]).max() < 1e-2, (kind, k)


@pytest.mark.mpi
def test_an_optimizer_instance_of_two_groups_under_tp_pp_ep(ranks_run):
    tmp_path = ranks_run
    ranks = [np.load(tmp_path / f"rank{r}.npz") for r in (0, 1)]
    skiff.seed(0)
    init = {k: np.asarray(v, np.float64) for k, v in GPT(GPTConfig(
        block_size=T, vocab_size=V, n_layer=L, n_head=H, n_embd=C)).state_dict().items()}
    want, want_w = _torch_run(init)
    lrs = [0.01 * 0.5 ** (i // 3) for i in range(8)]  # the first group's, as StepLR steps
    for case, tol_loss, tol_w in (("tp", 2e-5, 3e-3), ("pp", 2e-5, 3e-3),
                                  ("tp-bf16", 2e-2, 6e-2), ("dp-to-tp", 2e-5, 3e-3),
                                  # round 42 (h13): one process cut at 5, resumed split
                                  ("one-to-tp", 2e-5, 3e-3), ("one-to-pp", 2e-5, 3e-3)):
        for got in ranks:
            np.testing.assert_allclose(got[f"{case}/loss"], want, atol=tol_loss, err_msg=case)
            np.testing.assert_allclose(got[f"{case}/lr"], lrs, rtol=1e-12, err_msg=case)
        for k, v in want_w.items():
            moved = np.abs(v - init[k]).max()
            # Adam's first steps move each weight ~lr: float32 sums of rounding-sized
            # gradients move some of them otherwise (one process: up to 1.4e-3 off torch)
            assert np.abs(ranks[0][f"{case}/w/{k}"] - v).max() < min(tol_w, 0.5 * moved), \
                (case, k)
    for got in ranks:  # round 42 (h13): one bf16 process's checkpoint read under tp: each
        # rank's masters are the one process's, cut (bit-equal); the run goes on as tp's own
        assert float(got["one-to-tp-bf16/masters_off"]) == 0.0
        np.testing.assert_allclose(got["one-to-tp-bf16/loss"], got["tp-bf16/loss"], atol=5e-3)
    # ep (round 42 h5: against torch, where it was one skiff process), fp32 and bf16-mixed,
    # each cut at step 5 and resumed
    from skiff.kernels.train.parallel.moe import gpt_moe

    skiff.seed(0)
    m = gpt_moe(vocab_size=V, block_size=T, n_embd=C, n_head=H, expert_hidden=16)
    init = {k: np.asarray(v, np.float64) for k, v in m.state_dict().items()}
    want, want_w = _torch_run(init, moe=True)
    want_bf16, want_bf16_w, norms = _torch_run(init, moe=True, clip=0.5)
    # ep's norm in bf16: the dense part once, the experts of both ranks, the same on both
    # (each rank's own norm before: 5e-3 under torch's, and the ranks apart from step 6)
    np.testing.assert_array_equal(ranks[0]["ep-bf16/norm"], ranks[1]["ep-bf16/norm"])
    np.testing.assert_allclose(ranks[0]["ep-bf16/norm"], norms, rtol=3e-3)  # bf16: 1.3e-3
    assert min(norms) > 0.5  # each step clipped
    for case, tol_loss, tol_w in (("ep", 2e-5, 3e-3), ("ep-bf16", 2e-2, 6e-2)):
        want, want_w = (want_bf16, want_bf16_w) if case == "ep-bf16" else (want, want_w)
        for got in ranks:
            np.testing.assert_allclose(got[f"{case}/loss"], want, atol=tol_loss, err_msg=case)
            np.testing.assert_allclose(got[f"{case}/lr"], lrs, rtol=1e-12, err_msg=case)
        for k, v in want_w.items():
            moved = np.abs(v - init[k]).max()
            assert np.abs(ranks[0][f"{case}/w/{k}"] - v).max() < min(tol_w, 0.5 * moved), \
                (case, k)


def _by_name(npz, prefix):
    return {k[len(prefix):]: npz[k] for k in npz.files if k.startswith(prefix)}


@pytest.mark.mpi
def test_ep_bf16_masters_cross_world_sizes(ranks_run):
    """Round 42 (h5): ep's bf16 checkpoint (each rank's experts' float32 masters in its
    pieces) read by one process gives every master of both ranks, bit-equal; one process's
    bf16 checkpoint (an instance of two groups) read by each ep rank gives that rank's
    masters of the one process, bit-equal, and the run resumed under ep goes on. Before: the
    ep checkpoint held rank 0's masters only (the resume 0.53 off in weights), and one
    process's was refused ("55 saved arrays for 39 parameters") or, its groups' moments
    taken by the model's order, crashed in the optimizer."""
    ranks = [np.load(ranks_run / f"rank{r}.npz") for r in (0, 1)]
    ep = {**_by_name(ranks[0], "ep-bf16/m/"), **_by_name(ranks[1], "ep-bf16/m/")}
    read = _by_name(ranks[0], "read1/m/")
    assert set(read) == set(ep) and any(".experts.3." in k for k in ep)  # both ranks' experts
    for k, v in read.items():
        np.testing.assert_array_equal(v, ep[k], err_msg=k)
    one = _by_name(ranks[0], "one5/m/")
    for got in ranks:
        mine = _by_name(got, "read2/m/")
        assert len(mine) < len(one)  # a rank's experts only
        for k, v in mine.items():
            np.testing.assert_array_equal(v, one[k], err_msg=k)
        # the resumed run (one process's first 5 steps, ep's last 3) and ep's whole run
        np.testing.assert_allclose(got["one-to-ep/loss"], got["ep-bf16/loss"], atol=5e-3)


@pytest.mark.mpi
def test_augmentations_from_the_global_generators_resume_on_ranks(ranks_run):
    """Round 42 (h13): each rank's numpy and Python generators (a dataset's random flips
    and noise) go in its part of the sharded checkpoint and come back on resume: the run
    cut at step 3 and resumed has the uninterrupted run's losses on both ranks (0.04 off
    before, from step 4)."""
    for r in (0, 1):
        got = np.load(ranks_run / f"rank{r}.npz")
        assert len(got["aug/whole"]) == len(got["aug/resumed"]) > 4
        np.testing.assert_array_equal(got["aug/resumed"], got["aug/whole"])
