"""Round 27's training-core additions on :mod:`.strictcupy` device arrays: the special
functions, scans, windows, ``searchsorted``, ``histc``, ``pdist``; ``F.unfold``/``F.fold``,
``EmbeddingBag``, ``scatter_reduce`` (amax/amin go through ``cupyx.scatter_max``), packed
sequences, the decoder layer and the distributions' samplers. Each program runs in torch (the
oracle), in skiff on the CPU (equal to torch) and on the strict fake ``cuda:0`` (equal to the
CPU run, no implicit move to numpy: see :mod:`.test_strict_device_training`); the host reads
each device run makes are counted and compared with what torch's CUDA path needs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

from . import strictcupy
from .test_strict_device_ops import arr, idx
from .test_strict_device_training import SKIFF, TORCH, host, run_three, twin

READS: dict = {}  # program name -> the device run's host reads


def counted(name, program):
    """``program`` with the device run's host reads recorded under ``name``."""
    def wrapped(lib, dev):
        strictcupy.SYNCS.clear()
        out = program(lib, dev)
        if dev != "cpu":
            READS[name] = list(strictcupy.SYNCS)
        return out

    return wrapped


def test_special_functions_and_masked_forms_read_nothing_back(monkeypatch):
    """lgamma/digamma/erfinv/polygamma run on cupyx.scipy.special's names; xlogy (x = 0,
    y <= 0), sinc (0), logaddexp and maximum (ties), norms of zero rows, dist and renorm take
    their masked forms on the device without asking the host whether a mask is needed (each
    such ``bool(mask.any())`` was a read per call)."""
    def program(lib, dev):
        rng = np.random.default_rng(11)
        y = arr(lib, dev, rng.uniform(0.5, 3.0, (3, 4)), True)
        x = arr(lib, dev, np.r_[0.0, 0.0, rng.uniform(-0.9, 0.9, 10)].reshape(3, 4), True)
        z = arr(lib, dev, np.r_[np.zeros(4), rng.standard_normal(8)].reshape(3, 4), True)
        t = arr(lib, dev, rng.uniform(-1, 1, (3, 4)).round(1), True)
        outs = [y.lgamma(), y.digamma(), (x * 0.9).erfinv(), lib.mod.polygamma(2, y),
                x.xlogy(y), x.xlogy(x.detach()), x.sinc(), x.logaddexp(y), t.maximum(t.flip(1)),
                z.norm(dim=1), z.dist(y), z.renorm(2, 0, 1.0)]
        sum((o * o).sum() for o in outs).backward()
        return outs + [x.grad, y.grad, z.grad, t.grad]

    run_three(counted("special", program), monkeypatch)
    assert READS["special"] == []


def test_scans_windows_and_lookups_stay_on_the_device(monkeypatch):
    """cummax/take_along_dim (gathers by a device index: were refused, ``np.asarray`` of the
    index), Tensor.unfold/pdist/combinations (index_select by a device index: were refused),
    searchsorted/bucketize (ran on the host and returned a host tensor), histc (copied the
    whole tensor over), logcumsumexp (copied it over for a range check: now one flag),
    block_diag (zeros made on the host)."""
    def program(lib, dev):
        rng = np.random.default_rng(12)
        x = arr(lib, dev, rng.standard_normal((3, 5)), True)
        seq = arr(lib, dev, np.sort(rng.standard_normal((3, 6)), axis=1))
        v = arr(lib, dev, rng.standard_normal((3, 4)))
        cm = x.cummax(1)
        outs = [cm.values, x.cummin(0).values, x.take_along_dim(x.detach().argsort(1), 1),
                x.unfold(1, 2, 2), lib.mod.pdist(x), lib.mod.combinations(x[0], 2),
                x.logcumsumexp(1), lib.mod.block_diag(x, x[:2, :2])]
        sum((o * o).sum() for o in outs).backward()
        ints = [cm.indices, lib.mod.searchsorted(seq, v), lib.mod.searchsorted(seq, v, right=True),
                lib.mod.bucketize(v, seq[0]), x.detach().histc(4, -1.0, 1.0)]
        if dev != "cpu":
            assert all(isinstance(i._data, strictcupy.StrictArray) for i in ints)
        return outs + ints + [x.grad]

    run_three(counted("scans", program), monkeypatch)
    assert READS["scans"] == ["bool"]  # logcumsumexp's range flag


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_fold_embedding_bag_and_scatter_reduce(monkeypatch):
    """F.fold (zeros were made on the host: a device input was refused), EmbeddingBag (input
    and offsets were copied to the host each call: now a 2-D input reads nothing and offsets
    one small read), scatter_reduce amax/amin (cupyx.scatter_max/min)."""
    def program(lib, dev):
        skiff.manual_seed(0)
        ours = [skiff.nn.EmbeddingBag(10, 3, mode=m, padding_idx=p).double()
                for m, p in (("sum", 2), ("mean", None), ("max", None))]
        bags = ([b.to(dev) for b in ours] if lib is SKIFF else
                [twin(b, lambda b=b: TORCH.nn.EmbeddingBag(10, 3, mode=b.mode,
                                                           padding_idx=b.padding_idx))
                 for b in ours])
        rng = np.random.default_rng(13)
        img = arr(lib, dev, rng.standard_normal((2, 3, 5, 6)), True)
        cols = lib.mod.nn.functional.unfold(img, 3, padding=1, stride=2)
        back = lib.mod.nn.functional.fold(cols, (5, 6), 3, padding=1, stride=2)
        tokens = idx(lib, dev, [1, 2, 4, 5, 4, 3, 2, 9])
        offsets = idx(lib, dev, [0, 3, 3])
        psw = arr(lib, dev, np.arange(8) / 8, True)
        e = [bags[0](tokens, offsets, per_sample_weights=psw), bags[1](tokens, offsets),
             bags[2](tokens.reshape(2, 4))]
        src = arr(lib, dev, rng.standard_normal((3, 4)), True)
        base = arr(lib, dev, rng.standard_normal((3, 4)), True)
        where = idx(lib, dev, [[0, 1, 0, 2], [2, 2, 1, 0], [1, 0, 0, 0]])
        sc = [base.scatter_reduce(0, where, src, r, include_self=i)
              for r in ("amax", "amin", "mean") for i in (True, False)]
        outs = [back, *e, *sc]
        sum((o * o).sum() for o in outs).backward()
        return outs + [img.grad, psw.grad, src.grad, base.grad] + [b.weight.grad for b in bags]

    run_three(counted("fold_bag", program), monkeypatch)
    assert READS["fold_bag"] == ["asnumpy", "asnumpy"]  # the two 1-D bags' offsets checks


def test_packed_lstm_and_decoder_layer(monkeypatch):
    def program(lib, dev):
        skiff.manual_seed(0)
        lstm = skiff.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True).double()
        dec = skiff.nn.TransformerDecoderLayer(6, 2, 8, dropout=0.0, batch_first=True).double()
        if lib is SKIFF:
            lstm, dec = lstm.to(dev), dec.to(dev)
        else:
            lstm = twin(lstm, lambda: TORCH.nn.LSTM(3, 4, num_layers=2, bidirectional=True,
                                                    batch_first=True))
            dec = twin(dec, lambda: TORCH.nn.TransformerDecoderLayer(6, 2, 8, dropout=0.0,
                                                                     batch_first=True))
        rnn = lib.mod.nn.utils.rnn
        rng = np.random.default_rng(14)
        x = arr(lib, dev, rng.standard_normal((3, 5, 3)), True)
        packed = rnn.pack_padded_sequence(x, [3, 5, 2], batch_first=True, enforce_sorted=False)
        out, (h, c) = lstm(packed)
        out, _ = rnn.pad_packed_sequence(out, batch_first=True)
        tgt = arr(lib, dev, rng.standard_normal((2, 3, 6)), True)
        mem = arr(lib, dev, rng.standard_normal((2, 4, 6)), True)
        mask = lib.mod.nn.Transformer.generate_square_subsequent_mask(3)
        y = dec(tgt, mem, tgt_mask=mask.to(dev) if lib is SKIFF else mask)
        ((out * out).sum() + (h * c).sum() + (y * y).sum()).backward()
        return [out, h, c, y, x.grad, tgt.grad, mem.grad, lstm.weight_hh_l1_reverse.grad,
                dec.multihead_attn.in_proj_weight.grad]

    run_three(program, monkeypatch)


def test_distribution_samples_stay_on_the_device(monkeypatch):
    """Categorical and Bernoulli samples were drawn from probabilities copied to the host (a
    read per sample call, the samples on the host); now the seeded host draws go over and the
    comparison runs on the device: the same samples as the CPU run, no read. The oracle for
    the law: the frequencies of 4000 draws against the probabilities (5 standard errors)."""
    D = skiff.distributions
    probs = np.array([[0.1, 0.6, 0.3], [0.25, 0.25, 0.5]])

    def draw(dev):
        skiff.manual_seed(5)
        lg = skiff.tensor(np.log(probs), dtype=skiff.float64).to(dev)
        p = skiff.tensor(probs[:, 1], dtype=skiff.float64).to(dev)
        strictcupy.SYNCS.clear()
        out = (D.Categorical(logits=lg).sample((4000,)), D.Bernoulli(probs=p).sample((4000,)))
        return out, list(strictcupy.SYNCS)

    (cat_cpu, ber_cpu), _ = draw("cpu")
    strictcupy.install(monkeypatch)
    (cat, ber), reads = draw("cuda:0")
    assert reads == []
    assert isinstance(cat._data, strictcupy.StrictArray)
    assert isinstance(ber._data, strictcupy.StrictArray)
    np.testing.assert_array_equal(host(cat), host(cat_cpu))
    np.testing.assert_array_equal(host(ber), host(ber_cpu))
    c = host(cat)
    for k in range(3):
        freq, want = (c == k).mean(0), probs[:, k]
        assert np.all(np.abs(freq - want) < 5 * np.sqrt(want * (1 - want) / len(c)))
    assert np.all(np.abs(host(ber).mean(0) - probs[:, 1])
                  < 5 * np.sqrt(probs[:, 1] * (1 - probs[:, 1]) / 4000))
    # torch's own samplers draw the same law (an independent check of the oracle above)
    t = torch.distributions.Categorical(probs=torch.tensor(probs)).sample((4000,)).numpy()
    assert np.all(np.abs((t == 1).mean(0) - (c == 1).mean(0)) < 0.05)


def test_weighted_cross_entropy_steps_read_nothing_back(monkeypatch):
    """CrossEntropyLoss(weight=) copied its host weights to the device and F.cross_entropy
    read them back to check them, every step (a read and a copy per step; torch does
    neither): now the weights go over once and are checked only where they are host values."""
    def program(lib, dev):
        skiff.manual_seed(0)
        ours = skiff.nn.Linear(4, 3).double()
        lin = ours.to(dev) if lib is SKIFF else twin(ours, lambda: torch.nn.Linear(4, 3))
        w = arr(lib, dev, [1.0, 2.0, 0.5])
        ce = lib.mod.nn.CrossEntropyLoss(weight=w, label_smoothing=0.1)
        bce = lib.mod.nn.BCEWithLogitsLoss(weight=w, pos_weight=w * 2)
        opt = lib.optim.SGD(lin.parameters(), lr=0.1)
        rng = np.random.default_rng(15)
        x = arr(lib, dev, rng.standard_normal((5, 4)))
        y = idx(lib, dev, [0, 2, 1, 1, 0])
        out = []
        for step in range(3):
            strictcupy.SYNCS.clear()
            strictcupy.UPLOADS.clear()
            z = lin(x)
            loss = ce(z, y) + bce(z, (z.detach() > 0).double())
            opt.zero_grad()
            loss.backward()
            opt.step()
            if dev != "cpu":
                READS[f"ce{step}"] = (list(strictcupy.SYNCS), list(strictcupy.UPLOADS))
            out.append(loss)
        return out + list(lin.parameters())

    run_three(program, monkeypatch)
    assert READS["ce0"] == ([], [(3,)])  # the weights, once
    assert READS["ce1"] == READS["ce2"] == ([], [])


def test_alpha_dropout_draws_on_the_device(monkeypatch):
    """F.alpha_dropout drew a host mask of the input's size and copied two arrays of that size
    over per call; on the device it now draws there (F.dropout's way). The oracle: torch's
    alpha_dropout on the same input takes the same two values (kept: a x + b, dropped:
    alpha a + b), and the kept fraction is 1 - p (5 standard errors)."""
    from skiff.kernels.train.core.nn.layers_r27 import alpha_dropout

    p, n = 0.3, 20000
    theirs = np.unique(torch.nn.functional.alpha_dropout(
        torch.full((n,), 2.0, dtype=torch.float64), p, True).numpy())
    strictcupy.install(monkeypatch)
    skiff.manual_seed(3)
    x = skiff.tensor(np.full(n, 2.0), dtype=skiff.float64).to("cuda:0").requires_grad_()
    strictcupy.SYNCS.clear()
    strictcupy.UPLOADS.clear()
    y = alpha_dropout(x, p, True)
    assert strictcupy.SYNCS == [] and strictcupy.UPLOADS == []
    assert isinstance(y._data, strictcupy.StrictArray)
    y.sum().backward()
    got = host(y)
    np.testing.assert_allclose(np.unique(got), theirs, rtol=1e-12)
    kept = got == theirs.max()
    assert abs(kept.mean() - (1 - p)) < 5 * np.sqrt(p * (1 - p) / n)
    slope = torch.nn.functional.alpha_dropout(torch.full((n,), 3.0, dtype=torch.float64), p,
                                              True).max().item() - theirs.max()  # torch's a
    np.testing.assert_allclose(host(x.grad), np.where(kept, slope, 0.0), rtol=1e-12)


def test_bool_diff_and_equal_on_the_device(monkeypatch):
    """diff of a bool tensor took ``range`` indices (slices now); Tensor.equal copied both
    tensors to the host (now one flag read, torch's)."""
    def program(lib, dev):
        x = arr(lib, dev, [[0.1, 0.9, 0.8, 0.2, 0.7]])
        b = x > 0.5
        strictcupy.SYNCS.clear()
        same = [x.equal(x.clone()), x.equal(x * 2), x.equal(x[:, :2])]
        if dev != "cpu":
            READS["equal"] = list(strictcupy.SYNCS)
        return [b.diff(dim=1), b.diff(n=2, dim=-1), np.array(same)]

    run_three(program, monkeypatch)
    assert READS["equal"] == ["bool", "bool"]  # the third differs in shape: no read


def test_unfold_fold_index_goes_over_once(monkeypatch):
    """F.unfold/F.fold copied their position index (kh*kw*L int64: 3.6 MB for a 3x3 kernel
    over 224x224) to the GPU on every call; now once per geometry and device. Values vs
    torch on each call."""
    x0 = np.random.default_rng(16).standard_normal((1, 2, 7, 6))
    want = [torch.nn.functional.fold(torch.nn.functional.unfold(
        torch.tensor(x0 * s), (3, 2), padding=1, stride=(2, 1), dilation=(1, 2)), (7, 6),
        (3, 2), padding=1, stride=(2, 1), dilation=(1, 2)).numpy() for s in (1, 2, 3)]
    strictcupy.install(monkeypatch)
    F = skiff.nn.functional
    uploads = []
    for s, w in zip((1, 2, 3), want, strict=True):
        x = skiff.tensor(x0 * s, dtype=skiff.float64).to("cuda:0")
        strictcupy.UPLOADS.clear()
        y = F.fold(F.unfold(x, (3, 2), padding=1, stride=(2, 1), dilation=(1, 2)), (7, 6),
                   (3, 2), padding=1, stride=(2, 1), dilation=(1, 2))
        uploads.append(list(strictcupy.UPLOADS))
        np.testing.assert_allclose(host(y), w, rtol=1e-12, atol=1e-13)
    assert uploads[1] == uploads[2] == []
    assert len(uploads[0]) <= 1  # unfold's and fold's index are the same one


def test_cummax_cummin_scan_with_ties_and_nans(monkeypatch):
    """cummax/cummin as a log-step scan (were one step per position: n launches on a GPU):
    values, indices (the latest of equal values, a nan's own) and gradients equal torch's,
    on the CPU and on the device, over a long dim with ties and nans."""
    rng = np.random.default_rng(17)
    a = rng.integers(-3, 4, (3, 37)).astype(float)
    a[rng.random(a.shape) < 0.08] = np.nan

    def program(lib, dev):
        x = arr(lib, dev, a, True)
        b = arr(lib, dev, np.nan_to_num(a).T, True)
        mx, mn = x.cummax(1), b.cummin(0)
        (mx.values.nan_to_num() * 2 + 1).sum().backward()
        (mn.values ** 2).sum().backward()
        return [mx.values, mx.indices, mn.values, mn.indices, x.grad, b.grad]

    run_three(program, monkeypatch)
