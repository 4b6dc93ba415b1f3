"""Round 41 (h14): torch's ``meta`` device (build a model without memory, then
``load_state_dict(assign=True)`` or ``to_empty`` + ``load_state_dict``), the distributions'
``validate_args`` words, writes into a state dict's values reaching the model (the EMA of timm
and YOLOv5), a lazy batch norm being a ``_BatchNorm``. torch 2.13 is the oracle."""

import copy
import threading
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
import skiff.nn as snn  # noqa: E402


def _net(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.bn = nn.BatchNorm1d(8)
            self.emb = nn.Embedding(10, 4)
            self.fc2 = nn.Linear(8, 3, bias=False)
            self.register_buffer("scale", (torch if nn is torch.nn else skiff).ones(3) * 2)

        def forward(self, x, i):
            h = self.bn(self.fc1(x + self.emb(i))).relu()
            return self.fc2(h) * self.scale

    return Net


def _span(a):
    lo, hi = np.lib.array_utils.byte_bounds(a)
    return hi - lo


def _err(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the oracle's class and words are compared
        return type(exc).__name__, str(exc)
    return None


def test_meta_device_build_then_assign_or_to_empty_as_torch():
    TNet, SNet = _net(torch.nn), _net(snn)
    with torch.device("meta"):
        tm = TNet()
    built = {}
    with skiff.device("meta"):
        sm = SNet()
        # the context is this thread's (torch's): a job's thread builds its model for real
        worker = threading.Thread(target=lambda: built.setdefault("m", snn.Linear(2, 2)))
        worker.start()
        worker.join()
    assert not built["m"].weight.is_meta and not built["m"].bias.is_meta
    tstate = list(tm.state_dict().items())
    sstate = list(sm.state_dict().items())
    assert [k for k, _ in sstate] == [k for k, _ in tstate]
    for (k, t), (_, s) in zip(tstate, sstate):
        assert tuple(s.shape) == tuple(t.shape), k
        assert str(s.dtype).replace("torch.", "") == str(t.dtype).replace("torch.", ""), k
        assert str(s.device) == str(t.device) == "meta" and s.is_meta, k
    for (k, p) in sm.named_parameters():  # no memory: one element, whatever the shape
        assert _span(p._data) == p._data.itemsize, k
    assert repr(sm.fc1.weight.detach()) == repr(tm.fc1.weight.detach())
    assert repr(skiff.device("meta")) == repr(torch.device("meta"))
    # factory keywords, as torch's layers take them; a layer of 3.6 GB holds none of it
    big = snn.Linear(30000, 30000, device="meta", dtype=skiff.float64)
    snn.init.kaiming_uniform_(big.weight)
    assert big.weight.dtype == np.float64 and _span(big.weight._data) == 8
    assert big.weight.device == "meta" and skiff.empty(3, 4, device="meta").is_meta
    # torch's refusals, in torch's words
    for tfn, sfn in [(lambda: tm.fc2.weight.sum().item(), lambda: sm.fc2.weight.sum().item()),
                     (lambda: tm.fc2.weight.numpy(), lambda: sm.fc2.weight.numpy()),
                     (lambda: tm.fc2.weight.to("cpu"), lambda: sm.fc2.weight.to("cpu")),
                     (lambda: tm.to("cpu"), lambda: sm.to("cpu"))]:
        assert _err(sfn) == _err(tfn)
    # a plain load into meta parameters: torch's no-op and warning
    ref_t = TNet().double().eval()
    ref_s = SNet().double().eval()
    sd_t = ref_t.state_dict()
    sd_np = {k: v.numpy() for k, v in sd_t.items()}
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        tm.load_state_dict(sd_t)
    with warnings.catch_warnings(record=True) as sw:
        warnings.simplefilter("always")
        sm.load_state_dict(sd_np)
    assert [str(w.message) for w in sw] == [str(w.message) for w in tw] and tw
    assert sm.fc1.weight.is_meta
    # assign=True: the checkpoint's tensors become the model's; equal outputs
    ref_s.load_state_dict(sd_np)
    tm.load_state_dict(sd_t, assign=True)
    sm.load_state_dict(sd_np, assign=True)
    tm.eval()
    sm.eval()
    x, i = np.random.default_rng(0).standard_normal((5, 4)), np.arange(5) % 10
    want = tm(torch.tensor(x), torch.tensor(i)).detach().numpy()
    got = sm(skiff.tensor(x, dtype=skiff.float64), skiff.tensor(i)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert str(sm.fc1.weight.device) == "cpu" and sm.fc1.weight.requires_grad
    # to_empty then an ordinary load
    with skiff.device("meta"):
        sm2 = SNet()
    sm2.to_empty(device="cpu")
    assert not sm2.fc1.weight.is_meta and str(sm2.fc1.weight.device) == "cpu"
    sm2.load_state_dict(sd_np)
    sm2.double().eval()
    got2 = sm2(skiff.tensor(x, dtype=skiff.float64), skiff.tensor(i)).detach().numpy()
    np.testing.assert_allclose(got2, want, rtol=1e-12, atol=1e-12)


def test_validate_args_words_as_torch():
    cases = [
        lambda D, T: D.Normal(T.tensor(0.0), T.tensor(-1.0), validate_args=True),
        lambda D, T: D.Normal(T.tensor([0.0, 1.0]), T.tensor([1.0, -1.0]), validate_args=True),
        lambda D, T: D.Normal(0.0, 1.0, validate_args=True).log_prob(T.tensor([float("nan")])),
        lambda D, T: D.Gamma(T.tensor(2.0), T.tensor(-3.0), validate_args=True),
        lambda D, T: D.Exponential(T.tensor([1.0, 2.0]), validate_args=True).log_prob(
            T.tensor([-1.0, 1.0])),
    ]
    for case in cases:
        want = _err(lambda c=case: c(torch.distributions, torch))
        got = _err(lambda c=case: c(skiff.distributions, skiff))
        assert want is not None and got == want


def test_state_dict_writes_reach_the_model_as_torch_views():
    def ema_step(model, ema, d=0.9):  # YOLOv5's ModelEMA.update and timm's ModelEma
        msd = model.state_dict()
        for k, v in ema.state_dict().items():
            if k.endswith("num_batches_tracked"):
                continue
            if k.startswith("0."):
                v *= d
                v += (1 - d) * msd[k].detach()
            else:
                v.copy_(v * d + (1.0 - d) * msd[k].detach())

    out = []
    for nn, T in ((torch.nn, torch), (snn, skiff)):
        T.manual_seed(0)
        m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).double()
        m.load_state_dict({k: T.from_numpy(np.arange(np.prod(v.shape), dtype=np.float64).reshape(
            tuple(v.shape)) / 7) for k, v in m.state_dict().items()
            if not k.endswith("num_batches_tracked")}, strict=False)
        ema = copy.deepcopy(m)
        with T.no_grad():
            for p in m.parameters():
                p.add_(1.0)
        ema_step(m, ema)
        sd = ema.state_dict()
        sd["0.bias"][0] = 5.0
        sd["1.weight"].fill_(2.0)
        out.append({k: np.asarray(v.detach().numpy() if hasattr(v, "numpy") else v, float)
                    for k, v in ema.state_dict(keep_vars=True).items()})
    assert out[0].keys() == out[1].keys()
    for k in out[0]:
        np.testing.assert_allclose(out[1][k], out[0][k], rtol=1e-12, err_msg=k)


def test_lazy_batch_norm_is_a_batch_norm_as_torch():
    tb, sb = torch.nn.modules.batchnorm._BatchNorm, snn.modules.batchnorm._BatchNorm
    for name in ("LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm2d"):
        assert isinstance(getattr(snn, name)(), sb) == isinstance(getattr(torch.nn, name)(), tb)
    lazy = snn.LazyBatchNorm2d(momentum=0.3)
    lazy(skiff.randn(2, 3, 4, 4))
    assert type(lazy) is snn.BatchNorm2d and lazy.momentum == 0.3 and lazy.weight.shape == (3,)


def test_a_module_of_its_own_kwargs_keeps_its_device_keyword():
    """torch passes a user's ``device=`` to an ``__init__(self, **cfg)`` untouched; skiff's
    factory keywords must not take it from such a module (coordinator, round 41)."""
    import torch

    import skiff

    def build(nn):
        class Cfg(nn.Module):
            def __init__(self, **cfg):
                super().__init__()
                self.asked = cfg.get("device"), cfg.get("dtype")
                self.lin = nn.Linear(2, 2)

        return Cfg(device="cpu", dtype="half").asked

    assert build(skiff.nn) == build(torch.nn) == ("cpu", "half")
