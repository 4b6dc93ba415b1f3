"""Round 32 (h13): torch.utils.data / torch.amp / torch.utils.checkpoint habits of ported
programs, against torch 2.13 on CPU (values to 1e-10 in float64, torch's errors for misuse,
distributions of the random samplers)."""

import collections
import warnings

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


@pytest.mark.parametrize("kw", [dict(num_workers=-1), dict(prefetch_factor=2),
                                dict(persistent_workers=True),
                                dict(batch_size=3, batch_sampler=[[0, 1]]),
                                dict(shuffle=True, batch_sampler=[[0, 1]]),
                                dict(drop_last=True, batch_sampler=[[0, 1]]),
                                dict(batch_size=None, drop_last=True),
                                dict(shuffle=True, sampler=[0, 1]),
                                dict(num_workers=0, worker_inti_fn=print)])
def test_dataloader_misuse_raises_torchs_error(kw):
    t = _err(lambda: torch.utils.data.DataLoader(list(range(6)), **kw))
    s = _err(lambda: skiff.utils.data.DataLoader(list(range(6)), **kw))
    assert t is not None and s is not None and s[0] is t[0]
    if t[0] is ValueError:
        assert s[1] == t[1]


def test_num_workers_gives_the_same_batches_in_process():
    ds = skiff.utils.data.TensorDataset(skiff.arange(10.0))
    base = [b[0].tolist() for b in skiff.utils.data.DataLoader(ds, batch_size=4)]
    dl = skiff.utils.data.DataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True,
                                     prefetch_factor=2, pin_memory=True, timeout=5)
    got = [b[0].tolist() for b in dl]
    tds = torch.utils.data.TensorDataset(torch.arange(10.0))
    want = [b[0].tolist() for b in torch.utils.data.DataLoader(tds, batch_size=4)]
    assert got == base == want
    assert skiff.utils.data.get_worker_info() is None


def _structured(L):
    P = collections.namedtuple("P", "a b")

    class DS(L.utils.data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return (np.float64(i) / 3, {"y": i, "name": f"s{i}", "p": P(i, [i, 2 * i])},
                    L.tensor([i, i + 1.5], dtype=L.float64))
    return next(iter(L.utils.data.DataLoader(DS(), batch_size=5)))


def _describe(b):
    if hasattr(b, "numpy"):
        return ("T", str(b.dtype).replace("torch.", ""), np.asarray(b.numpy()).tolist())
    if isinstance(b, dict):
        return {k: _describe(v) for k, v in b.items()}
    if isinstance(b, (list, tuple)):
        return (type(b).__name__, [_describe(v) for v in b])
    return b


def test_default_collate_structure_and_dtypes_as_torch():
    assert _describe(_structured(skiff)) == _describe(_structured(torch))
    # TensorDataset batches are lists, as torch's
    b = next(iter(skiff.utils.data.DataLoader(
        skiff.utils.data.TensorDataset(skiff.arange(4.0), skiff.arange(4)), batch_size=2)))
    assert type(b) is list and len(b) == 2


def test_shuffle_generator_drop_last_dict_collate():
    X = skiff.arange(10, dtype=skiff.float64).reshape(10, 1)

    class DS(skiff.utils.data.Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return {"x": X[i], "y": i % 3}

    def coll(items):
        return {"x": skiff.stack([it["x"] for it in items]),
                "y": skiff.tensor([it["y"] for it in items])}

    g = skiff.Generator().manual_seed(0)
    dl = skiff.utils.data.DataLoader(DS(), batch_size=3, shuffle=True, generator=g,
                                     drop_last=True, collate_fn=coll)
    assert len(dl) == 3
    e1 = [b["x"].numpy().ravel().tolist() for b in dl]
    e2 = [b["x"].numpy().ravel().tolist() for b in dl]
    for e in (e1, e2):
        flat = sum(e, [])
        assert [len(b) for b in e] == [3, 3, 3] and len(set(flat)) == 9
    assert e1 != e2
    g2 = skiff.Generator().manual_seed(0)
    again = [b["x"].numpy().ravel().tolist() for b in skiff.utils.data.DataLoader(
        DS(), batch_size=3, shuffle=True, generator=g2, drop_last=True, collate_fn=coll)]
    assert again == e1


@pytest.mark.parametrize("n,fr", [(10, [0.7, 0.2, 0.1]), (11, [0.5, 0.3, 0.2]),
                                  (3, [0.2] * 5), (101, [0.8, 0.2])])
def test_random_split_fraction_lengths_as_torch(n, fr):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = [len(p) for p in torch.utils.data.random_split(range(n), fr)]
        parts = skiff.utils.data.random_split(range(n), fr)
    assert [len(p) for p in parts] == t
    assert sorted(i for p in parts for i in p) == list(range(n))


def test_weighted_sampler_class_balance_matches_torch():
    y = np.r_[np.zeros(900), np.ones(100)]
    w = np.where(y == 1, 9.0, 1.0)  # the usual 1/class-frequency weights: 50/50 expected
    n = 20000
    sk = np.array(list(skiff.utils.data.WeightedRandomSampler(
        skiff.tensor(w), n, generator=skiff.Generator().manual_seed(1))))
    th = np.array(list(torch.utils.data.WeightedRandomSampler(
        torch.tensor(w), n, generator=torch.Generator().manual_seed(1))))
    for idx in (sk, th):
        frac = y[idx].mean()
        assert abs(frac - 0.5) < 5 * np.sqrt(0.25 / n)
    # within a class every index is equally likely: chi-square on the majority class
    # (scipy.stats.chisquare's p-value, without importing scipy.stats: 0.6 s of CPU)
    from scipy.special import chdtrc
    counts = np.bincount(sk[sk < 900], minlength=900)
    expected = counts.mean()
    assert chdtrc(len(counts) - 1, ((counts - expected) ** 2 / expected).sum()) > 1e-4


def _scaler_run(L, inf_at=(2,)):
    rng = np.random.default_rng(0)
    L.manual_seed(0)
    m = L.nn.Sequential(L.nn.Linear(4, 8), L.nn.Tanh(), L.nn.Linear(8, 2)).double()
    with L.no_grad():
        for p in m.parameters():
            p.copy_(L.tensor(rng.standard_normal(tuple(p.shape))))
    opt = L.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    sc = L.amp.GradScaler("cpu", init_scale=2.0 ** 4, growth_interval=2)
    x = L.tensor(rng.standard_normal((5, 4)))
    scales = []
    for i in range(7):
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        if i in inf_at:
            loss = loss * float("inf")
        sc.scale(loss).backward()
        sc.unscale_(opt)
        L.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        assert sc.step(opt) is None
        sc.update()
        scales.append(sc.get_scale())
    return scales, [p.detach().numpy().copy() for p in m.parameters()], sc.state_dict()


def test_gradscaler_loop_matches_torch():
    s_sc, s_w, s_sd = _scaler_run(skiff)
    t_sc, t_w, t_sd = _scaler_run(torch)
    assert s_sc == t_sc and s_sd == t_sd
    for a, b in zip(s_w, t_w):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)


def _misuse(L, what):
    m = L.nn.Linear(2, 1)
    opt = L.optim.SGD(m.parameters(), lr=0.1)
    sc = L.amp.GradScaler("cpu")
    if what == "update_first":
        return _err(sc.update)
    if what == "scale_float":
        return _err(lambda: sc.scale(3.0))
    sc.scale(m(L.ones(1, 2)).sum()).backward()
    if what == "unscale_twice":
        sc.unscale_(opt)
        return _err(lambda: sc.unscale_(opt))
    if what == "unscale_after_step":
        sc.step(opt)
        return _err(lambda: sc.unscale_(opt))
    if what == "step_twice":
        sc.step(opt)
        return _err(lambda: sc.step(opt))
    if what == "update_no_step":
        return _err(sc.update)
    if what == "load_empty":
        return _err(lambda: sc.load_state_dict({}))


@pytest.mark.parametrize("what", ["update_first", "scale_float", "unscale_twice",
                                  "unscale_after_step", "step_twice", "update_no_step",
                                  "load_empty"])
def test_gradscaler_misuse_errors_as_torch(what):
    t, s = _misuse(torch, what), _misuse(skiff, what)
    assert t is not None and s == t


def test_gradscaler_state_dict_round_trip_with_torch():
    t = torch.amp.GradScaler("cpu", init_scale=8.0, growth_factor=3.0, growth_interval=7)
    s = skiff.amp.GradScaler("cpu")
    s.load_state_dict(t.state_dict())
    assert s.state_dict() == t.state_dict()
    assert skiff.amp.GradScaler("cpu", enabled=False).state_dict() == {}


def test_autocast_device_and_dtype_checks():
    t = _err(lambda: torch.autocast("gpu"))
    assert _err(lambda: skiff.amp.autocast("gpu")) == t
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        with skiff.amp.autocast("cpu", dtype=skiff.float64):
            assert not skiff.amp.is_autocast_enabled("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with skiff.amp.autocast("cpu"):
            assert skiff.amp.is_autocast_enabled("cpu")
            assert not skiff.amp.is_autocast_enabled()  # no argument: cuda, as torch
            assert str(skiff.amp.get_autocast_dtype("cpu")) == "bfloat16"
        with torch.autocast("cpu"):
            assert torch.get_autocast_dtype("cpu") == torch.bfloat16
    assert str(skiff.amp.get_autocast_dtype("cuda")) == "float16"


def _ckpt(L, kind):
    cp = skiff.utils.checkpoint if L is skiff else torch.utils.checkpoint
    rng = np.random.default_rng(3)
    L.manual_seed(0)
    m = L.nn.Sequential(L.nn.Linear(4, 6), L.nn.GELU(), L.nn.Linear(6, 4)).double()
    with L.no_grad():
        for p in m.parameters():
            p.copy_(L.tensor(rng.standard_normal(tuple(p.shape))))
    x = L.tensor(rng.standard_normal((3, 4)), requires_grad=kind != "frozen")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "dict":
            out = cp.checkpoint(lambda a: {"y": m(a), "aux": [a.sin(), None]}, x,
                                use_reentrant=False)
            loss = out["y"].pow(2).sum() + out["aux"][0].sum()
        elif kind == "tuple_none":
            a, none = cp.checkpoint(lambda a, s=1.0: (m(a) * s, None), x, s=2.0,
                                    use_reentrant=False)
            assert none is None
            loss = a.pow(3).sum()
        else:  # frozen input, reentrant: torch gives no gradients at all
            y = cp.checkpoint(m, x, use_reentrant=True)
            return y.requires_grad
    loss.backward()
    return [p.grad.numpy().copy() for p in m.parameters()] + [x.grad.numpy().copy()]


@pytest.mark.parametrize("kind", ["dict", "tuple_none"])
def test_checkpoint_structured_outputs_match_torch(kind):
    for a, b in zip(_ckpt(skiff, kind), _ckpt(torch, kind)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)


def test_checkpoint_reentrant_rules_as_torch():
    assert _ckpt(skiff, "frozen") is _ckpt(torch, "frozen") is False
    x = skiff.ones(2, requires_grad=True)
    tx = torch.ones(2, requires_grad=True)
    t = _err(lambda: torch.utils.checkpoint.checkpoint(lambda a, s=1: a * s, tx, s=2,
                                                       use_reentrant=True))
    assert _err(lambda: skiff.utils.checkpoint.checkpoint(lambda a, s=1: a * s, x, s=2,
                                                          use_reentrant=True)) == t
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
        skiff.utils.checkpoint.checkpoint(lambda a: a * 2, x)


@pytest.mark.parametrize("case", ["rs_repl", "rs_empty", "dl_empty_shuffle", "concat_empty",
                                  "concat_iterable", "concat_neg", "ragged", "tds"])
def test_dataset_and_sampler_misuse_types_as_torch(case):
    def run(L):
        D = L.utils.data

        class It(D.IterableDataset):
            def __iter__(self):
                return iter([1])
        return {
            "rs_repl": lambda: D.RandomSampler(range(3), replacement=1),
            "rs_empty": lambda: D.RandomSampler([]),
            "dl_empty_shuffle": lambda: D.DataLoader([], shuffle=True),
            "concat_empty": lambda: D.ConcatDataset([]),
            "concat_iterable": lambda: D.ConcatDataset([range(3), It()]),
            "concat_neg": lambda: D.ConcatDataset([range(3)])[-4],
            "ragged": lambda: next(iter(D.DataLoader([L.zeros(2), L.zeros(3)], batch_size=2))),
            "tds": lambda: D.TensorDataset(L.zeros(3), L.zeros(4)),
        }[case]
    t, s = _err(run(torch)), _err(run(skiff))
    assert t is not None and s is not None and issubclass(s[0], t[0])
    if case != "tds":
        assert s[1] == t[1]


@pytest.mark.parametrize("n,reps,drop", [(5, 2, False), (5, 2, True), (10, 3, False),
                                         (10, 3, True), (2, 4, False), (12, 4, True)])
def test_distributed_sampler_shares_as_torch(n, reps, drop):
    for rank in range(reps):
        t = torch.utils.data.DistributedSampler(range(n), num_replicas=reps, rank=rank,
                                                shuffle=False, drop_last=drop)
        s = skiff.utils.data.DistributedSampler(range(n), num_replicas=reps, rank=rank,
                                                shuffle=False, drop_last=drop)
        assert list(s) == list(t) and len(s) == len(t) and s.total_size == t.total_size
    shares = []
    for rank in range(reps):  # shuffled: the ranks' shares still cover the data set
        s = skiff.utils.data.DistributedSampler(range(n), num_replicas=reps, rank=rank, seed=4)
        s.set_epoch(3)
        shares += list(s)
    if not drop:
        assert set(shares) == set(range(n))
    for kw in (dict(), dict(num_replicas=2, rank=2)):
        t = _err(lambda kw=kw: torch.utils.data.DistributedSampler(range(n), **kw))
        s = _err(lambda kw=kw: skiff.utils.data.DistributedSampler(range(n), **kw))
        assert s[0] is t[0] and s[1].startswith(t[1])


def test_gradscaler_default_device_without_cuda_disables_as_torch():
    if torch.cuda.is_available() or skiff.cuda.is_available():
        pytest.skip("a CUDA machine: the scaler stays on")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        t = torch.amp.GradScaler()
    with pytest.warns(UserWarning, match="CUDA is not available"):
        s = skiff.amp.GradScaler()
    assert (s.is_enabled(), s.get_scale(), s.state_dict()) == (
        t.is_enabled(), t.get_scale(), t.state_dict())


@pytest.mark.parametrize("path", ["dataloader.default_collate", "dataloader.DataLoader",
                                  "dataloader.get_worker_info", "dataset.Dataset",
                                  "dataset.random_split", "sampler.WeightedRandomSampler",
                                  "sampler.BatchSampler", "distributed.DistributedSampler"])
def test_torch_utils_data_submodule_paths(path):
    import importlib

    mod, name = path.split(".")
    assert hasattr(importlib.import_module(f"torch.utils.data.{mod}"), name)
    got = getattr(importlib.import_module(f"skiff.utils.data.{mod}"), name)
    assert got is getattr(skiff.utils.data, name)


def _two_optimizers(L):
    rng = np.random.default_rng(0)
    a, b = L.nn.Linear(3, 3).double(), L.nn.Linear(3, 1).double()
    with L.no_grad():
        for p in list(a.parameters()) + list(b.parameters()):
            p.copy_(L.tensor(rng.standard_normal(tuple(p.shape))))
    oa, ob = L.optim.Adam(a.parameters(), lr=0.01), L.optim.SGD(b.parameters(), lr=0.1)
    sc = L.amp.GradScaler("cpu", init_scale=4.0, growth_interval=1)
    x = L.tensor(rng.standard_normal((4, 3)))
    scales = []
    for i in range(5):
        oa.zero_grad()
        ob.zero_grad()
        sc.scale(b(a(x).tanh()).pow(2).sum()).backward()
        if i == 2:  # a nan in one optimizer's gradients: that one skips, the scale backs off
            with L.no_grad():
                b.weight.grad[0, 0] = float("nan")
        sc.unscale_(ob)
        sc.step(oa)
        sc.step(ob)
        sc.update()
        scales.append(sc.get_scale())
    return scales, [p.detach().numpy().copy() for p in [*a.parameters(), *b.parameters()]]


def test_gradscaler_two_optimizers_as_torch():
    s_sc, s_w = _two_optimizers(skiff)
    t_sc, t_w = _two_optimizers(torch)
    assert s_sc == t_sc
    for u, v in zip(s_w, t_w):
        np.testing.assert_allclose(u, v, rtol=0, atol=1e-10)


def test_batch_size_none_converts_items_as_torch():
    P = collections.namedtuple("P", "a b")
    items = [(np.ones(2), 3, "a"), {"x": np.float32(2), "s": "b"}, P(np.zeros(1), [np.int32(4)])]

    def run(L):
        return [_describe(x) for x in L.utils.data.DataLoader(items, batch_size=None)]
    assert run(skiff) == run(torch)
