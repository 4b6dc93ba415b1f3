"""Round 41 (h4): what porting torch programs (a ConvNeXt-style classifier, a CLIP-style
contrastive model, a VAE, a GRU seq2seq, SWA/EMA, ``torch.func``) met, each against torch 2.13:
``load_state_dict`` in torch's words and with ``assign=True``; ``torch.nn.modules`` (the
``_BatchNorm`` base: a ``BatchNorm1d`` is no ``BatchNorm2d``), ``init``'s fan helpers; the
``fused``/``foreach`` flags; anomaly mode; the KL pairs torch has; ``Independent``'s check;
``unpad_sequence``/``unpack_sequence`` and the packed-sequence and RNN state errors."""

import warnings

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")


def _mlp(L, seed=0):
    nn = L.nn
    rng = np.random.default_rng(seed)
    m = nn.Sequential(nn.Linear(3, 4, dtype=L.float64), nn.BatchNorm1d(4, dtype=L.float64),
                      nn.ReLU(), nn.Linear(4, 2, dtype=L.float64))
    with L.no_grad():
        for p in m.parameters():
            p.copy_(L.tensor(rng.standard_normal(tuple(p.shape)) * 0.5))
    return m


def _message(L, change, strict=True):
    m = _mlp(L)
    sd = dict(m.state_dict())
    change(L, sd)
    with pytest.raises(RuntimeError) as err:
        m.load_state_dict(sd, strict=strict)
    return str(err.value)


def _missing_unexpected_size(L, sd):
    del sd["0.weight"]
    sd["extra"] = L.zeros(1)
    sd["3.bias"] = L.zeros(5, dtype=L.float64)


def _size_only(L, sd):
    sd["3.weight"] = L.zeros(3, 4, dtype=L.float64)
    sd["0.bias"] = L.zeros(1, dtype=L.float64)


def _not_a_tensor(L, sd):
    sd["0.weight"] = [1.0]


@pytest.mark.parametrize("change, strict", [(_missing_unexpected_size, True),
                                            (_size_only, False), (_not_a_tensor, True)])
def test_load_state_dict_refuses_in_torchs_words(change, strict):
    theirs = _message(torch, change, strict)
    ours = _message(skiff, change, strict)
    words, _, summary = ours.partition("\n(load_state_dict into Sequential: ")
    assert words == theirs
    assert summary.endswith(")")  # skiff's one-line summary follows


def test_load_state_dict_keeps_skiffs_summary_for_code_matching_it():
    ours = _message(skiff, _missing_unexpected_size)
    assert "missing keys: 0.weight | unexpected keys: extra | shape mismatch: 3.bias" in ours


def _assigned(L):
    m = _mlp(L)
    m[0].weight.requires_grad_(False)
    src = _mlp(L, 1)
    sd = {k: L.tensor(np.asarray(v)) for k, v in src.state_dict().items()}
    keys = m.load_state_dict(sd, assign=True)
    y = m(L.ones(4, 3, dtype=L.float64))
    (y ** 2).sum().backward()
    return dict(keys=str(keys), y=y.detach().numpy(), grad=m[3].weight.grad.numpy(),
                param=[isinstance(p, L.nn.Parameter) for p in m.parameters()],
                req=[p.requires_grad for p in m.parameters()],
                buffer_is_given=m[1].running_mean is sd["1.running_mean"],
                dtype=str(m[0].weight.dtype).removeprefix("torch."))


def test_load_state_dict_assign_takes_the_given_tensors():
    theirs, ours = _assigned(torch), _assigned(skiff)
    for k in theirs:
        if isinstance(theirs[k], np.ndarray):
            np.testing.assert_allclose(np.asarray(ours[k]), theirs[k], rtol=1e-13)
        else:
            assert ours[k] == theirs[k], k


def test_load_state_dict_assign_keeps_an_arrays_float64():
    """skiff's own state dicts hold arrays; under the float32 default a float64 array stays
    float64 (``Tensor(array)`` alone took the default dtype)."""
    m = _mlp(skiff)
    m.load_state_dict(_mlp(skiff, 1).state_dict(), assign=True)
    assert all(p.dtype == np.float64 for p in m.parameters())
    np.testing.assert_array_equal(m[0].weight.detach().numpy(),
                                  np.asarray(_mlp(skiff, 1).state_dict()["0.weight"]))


def test_nn_modules_path_and_the_batch_norm_base():
    from skiff.nn.modules.batchnorm import _BatchNorm
    from skiff.nn.modules.utils import _pair, consume_prefix_in_state_dict_if_present

    def kinds(L, base):
        nn = L.nn
        layers = [nn.BatchNorm1d(3), nn.BatchNorm2d(3), nn.BatchNorm3d(3), nn.SyncBatchNorm(3),
                  nn.InstanceNorm2d(3), nn.LayerNorm(3)]
        return [[isinstance(m, c) for c in (base, nn.BatchNorm1d, nn.BatchNorm2d,
                                            nn.BatchNorm3d)] for m in layers]

    assert kinds(skiff, _BatchNorm) == kinds(torch, torch.nn.modules.batchnorm._BatchNorm)
    assert skiff.nn.modules.conv.Conv2d is skiff.nn.Conv2d
    theirs = [n for n in dir(torch.nn.modules) if n[0].isupper() and hasattr(skiff.nn, n)]
    assert len(theirs) > 150
    assert [n for n in theirs if getattr(skiff.nn.modules, n, None) is not getattr(skiff.nn, n)] \
        == []
    assert _pair(3) == torch.nn.modules.utils._pair(3) and _pair((1, 2)) == (1, 2)
    sd = {"module.a": 1, "module.b.c": 2, "d": 3}
    theirs = dict(sd)
    consume_prefix_in_state_dict_if_present(sd, "module.")
    torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(theirs, "module.")
    assert sd == theirs


def test_init_fan_helpers_are_torchs():
    for shape in [(4, 3), (8, 4, 3, 3), (5, 2, 7)]:
        assert skiff.nn.init._calculate_fan_in_and_fan_out(skiff.empty(*shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
        assert skiff.nn.init._calculate_correct_fan(skiff.empty(*shape), "fan_out") == \
            torch.nn.init._calculate_correct_fan(torch.empty(*shape), "fan_out")
    for L in (torch, skiff):
        with pytest.raises(ValueError, match="Fan in and fan out can not be computed for "
                                             "tensor with fewer than 2 dimensions"):
            L.nn.init._calculate_fan_in_and_fan_out(L.empty(3))


def _flags(L):
    out = []
    p = [L.nn.Parameter(L.zeros(2))]
    for cls in (L.optim.Adam, L.optim.AdamW, L.optim.SGD, L.optim.Adagrad):
        for kw in (dict(fused=True, foreach=True), dict(fused=True, differentiable=True),
                   dict(foreach=True), dict(fused=False)):
            try:
                g = cls(p, **kw).param_groups[0]
                out.append({k: g.get(k) for k in ("foreach", "fused", "differentiable")})
            except RuntimeError as e:
                out.append(str(e))
    return out


def test_fused_and_foreach_flags_as_torch():
    assert _flags(skiff) == _flags(torch)


def test_error_words_of_clipping_and_optimizer_state():
    def clip(L):
        x = L.tensor([1.0, float("nan")], requires_grad=True)
        (x * x).sum().backward()
        with pytest.raises(RuntimeError) as err:
            L.nn.utils.clip_grad_norm_([x], 1.0, error_if_nonfinite=True)
        return str(err.value)

    def groups(L):
        ps = [L.nn.Parameter(L.zeros(2)) for _ in range(3)]
        with pytest.raises(ValueError) as err:
            L.optim.Adam(ps[:2]).load_state_dict(L.optim.Adam(ps).state_dict())
        with pytest.raises(ValueError) as err2:
            L.optim.Adam(ps[:2]).load_state_dict(
                L.optim.Adam([{"params": ps[:1]}, {"params": ps[1:]}]).state_dict())
        return str(err.value), str(err2.value)

    assert clip(skiff).startswith(clip(torch))
    for ours, theirs in zip(groups(skiff), groups(torch)):
        assert ours.startswith(theirs)


def _anomaly(L):
    x = L.tensor([0.0, 1.0], dtype=L.float64, requires_grad=True)
    (x.sqrt() * 0).sum().backward()  # nan gradient, no error outside anomaly mode
    found = [L.autograd.grad((x.sqrt() * 0).sum(), x)[0].isnan().any().item()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with L.autograd.detect_anomaly():
            with pytest.raises(RuntimeError) as err:
                (x.sqrt() * 0).sum().backward()
    found.append(str(err.value))
    with L.autograd.set_detect_anomaly(True):
        with pytest.raises(RuntimeError):
            (x.exp().log() * (x.sqrt() * 0)).sum().backward()
        found.append(L.autograd.grad((x * 3).sum(), x)[0].tolist())  # a clean one passes
    with L.autograd.set_detect_anomaly(True, check_nan=False):
        (x.sqrt() * 0).sum().backward()
    L.autograd.set_detect_anomaly(False)
    (x.sqrt() * 0).sum().backward()
    return found


def test_detect_anomaly_raises_on_a_nan_gradient_as_torch():
    assert _anomaly(skiff) == _anomaly(torch)
    assert not skiff.autograd.is_anomaly_enabled()


def test_autograd_error_words():
    def words(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = L.tensor([3.0], requires_grad=True)
        with pytest.raises(RuntimeError) as e1:
            L.autograd.grad((x ** 2).sum(), [x, y])
        loss = (x.exp() * x).sum()
        loss.backward()
        with pytest.raises(RuntimeError) as e2:
            loss.backward()
        return str(e1.value), str(e2.value)[:60]

    assert words(skiff) == words(torch)


# ---- KL divergences: every pair torch registers -------------------------------------------

def _dist(L, name, alt, leaves):
    D = L.distributions
    k = 1 if alt else 0

    def f(*a):
        t = L.tensor(np.array(a, dtype=np.float64), requires_grad=True)
        leaves.append(t)
        return t

    make = {
        "Normal": lambda: D.Normal(f(0.3, -0.2), f(1.2, 0.7)),
        "Beta": lambda: D.Beta(f(2.0, 0.7), f(3.0, 1.5)),
        "Bernoulli": lambda: D.Bernoulli(probs=f(0.3, 0.6)),
        "Binomial": lambda: D.Binomial(L.tensor([5.0, 5.0]), probs=f(0.3, 0.45)),
        "Categorical": lambda: D.Categorical(probs=f(0.2, 0.8)),
        "ContinuousBernoulli": lambda: D.ContinuousBernoulli(probs=f(0.3, 0.8)),
        "Dirichlet": lambda: D.Dirichlet(f(1.0, 2.0)),
        "Exponential": lambda: D.Exponential(f(1.5, 0.4)),
        "Gamma": lambda: D.Gamma(f(2.0, 0.8), f(1.5, 2.5)),
        "Geometric": lambda: D.Geometric(probs=f(0.3, 0.7)),
        "Gumbel": lambda: D.Gumbel(f(0.1, -0.4), f(1.1, 0.6)),
        "HalfNormal": lambda: D.HalfNormal(f(1.3, 0.5)),
        "Laplace": lambda: D.Laplace(f(0.2, -0.3), f(0.9, 1.4)),
        "LowRankMultivariateNormal": lambda: D.LowRankMultivariateNormal(
            f(0.0, 1.0), L.tensor(np.array([[0.5], [0.2]]) * (1 + k)), f(1.0, 2.0)),
        "MultivariateNormal": lambda: D.MultivariateNormal(
            f(0.0, 1.0), L.tensor(np.array([[2.0, 0.3], [0.3, 1.0]]) + k * np.eye(2))),
        "OneHotCategorical": lambda: D.OneHotCategorical(probs=f(0.2, 0.8)),
        "Pareto": lambda: D.Pareto(f(1.0, 0.5), f(3.0, 2.5)),
        "Poisson": lambda: D.Poisson(f(2.0, 0.5)),
        "Uniform": lambda: D.Uniform(f(0.1, -1.0), f(0.9, 2.0)),
        "Independent": lambda: D.Independent(D.Normal(f(0.3, 0.1), f(1.2, 1.0)), 1),
        "Cauchy": lambda: D.Cauchy(f(0.0, 1.0), f(1.0, 0.5)),
    }.get(name)
    return make() if make else None


def _kl_pairs():
    from torch.distributions.kl import _KL_REGISTRY

    return sorted({(p.__name__, q.__name__) for p, q in _KL_REGISTRY})


def test_every_kl_pair_torch_has_values_and_gradients():
    """torch registers 87 pairs (85 of concrete distributions); skiff had 16 of them."""
    done = 0
    for pn, qn in _kl_pairs():
        lt, ls = [], []
        pt, ps = _dist(torch, pn, False, lt), _dist(skiff, pn, False, ls)
        qt, qs = _dist(torch, qn, True, lt), _dist(skiff, qn, True, ls)
        if pt is None or qt is None:
            continue  # the abstract bases (ExponentialFamily, TransformedDistribution)
        a = torch.distributions.kl_divergence(pt, qt)
        b = skiff.distributions.kl_divergence(ps, qs)
        np.testing.assert_allclose(np.asarray(b.detach().numpy()), a.detach().numpy(),
                                   rtol=1e-10, atol=1e-12, err_msg=f"{pn}, {qn}")
        if a.requires_grad and bool(torch.isfinite(a).all()):
            ga = torch.autograd.grad(a.sum(), lt, allow_unused=True, materialize_grads=True)
            gb = skiff.autograd.grad(b.sum(), ls, allow_unused=True, materialize_grads=True)
            for x, y in zip(ga, gb):  # (torch's trigamma is good to ~1e-10)
                np.testing.assert_allclose(np.asarray(y.numpy()), x.numpy(), rtol=1e-8,
                                           atol=1e-9, err_msg=f"{pn}, {qn}")
        done += 1
    assert done >= 80


def test_kl_of_a_laplace_posterior_against_a_normal_prior_trains():
    """A VAE-style step: Laplace posterior, standard Normal prior (a pair skiff refused)."""
    def run(L):
        rng = np.random.default_rng(3)
        loc = L.tensor(rng.standard_normal(4), requires_grad=True)
        raw = L.tensor(rng.standard_normal(4), requires_grad=True)
        opt = L.optim.Adam([loc, raw], lr=0.1)
        out = []
        for _ in range(3):
            opt.zero_grad()
            q = L.distributions.Laplace(loc, L.nn.functional.softplus(raw))
            p = L.distributions.Normal(L.zeros(4, dtype=L.float64), L.ones(4, dtype=L.float64))
            kl = L.distributions.kl_divergence(q, p).sum()
            kl.backward()
            opt.step()
            out.append(kl.item())
        return out

    np.testing.assert_allclose(run(skiff), run(torch), rtol=1e-12)


def test_independent_refuses_more_dims_than_the_batch():
    for L in (torch, skiff):
        with pytest.raises(ValueError, match=r"Expected reinterpreted_batch_ndims <= "
                                             r"len\(base_distribution.batch_shape\), actual 2 "
                                             r"vs 1"):
            L.distributions.Independent(L.distributions.Normal(L.zeros(2), L.ones(2)), 2)


# ---- packed sequences and recurrent states ------------------------------------------------

def _unpadded(L):
    rnn = L.nn.utils.rnn
    x = L.tensor(np.arange(24.0).reshape(4, 3, 2))  # (T, B, *)
    lens = L.tensor([4, 2, 3])
    p = rnn.pack_padded_sequence(x, lens, enforce_sorted=False)
    first = [s.numpy().copy() for s in rnn.unpad_sequence(x.transpose(0, 1).contiguous(), lens,
                                                          batch_first=True)]
    second = [s.numpy().copy() for s in rnn.unpack_sequence(p)]
    third = [s.numpy().copy() for s in rnn.unpad_sequence(x.clone(), lens)]
    return first + second + third


def test_unpad_and_unpack_sequence_as_torch():
    for a, b in zip(_unpadded(skiff), _unpadded(torch), strict=True):
        np.testing.assert_array_equal(a, b)


def test_packed_sequence_and_state_errors_in_torchs_words():
    def words(L):
        rnn, out = L.nn.utils.rnn, []
        for call in (
                lambda: rnn.pack_padded_sequence(L.zeros(3, 4, 2), L.tensor([4, 3, 0]),
                                                 batch_first=True),
                lambda: rnn.pad_packed_sequence(rnn.pack_padded_sequence(
                    L.zeros(3, 4, 2), L.tensor([4, 3, 2]), batch_first=True),
                    batch_first=True, total_length=3),
                lambda: L.nn.GRU(2, 3, num_layers=2, batch_first=True)(L.zeros(4, 5, 2),
                                                                        L.zeros(1, 4, 3)),
                lambda: L.nn.LSTM(2, 3, num_layers=2)(L.zeros(4, 5, 2), (L.zeros(2, 5, 3),
                                                                         L.zeros(1, 5, 3)))):
            with pytest.raises((RuntimeError, ValueError)) as err:
                call()
            out.append(str(err.value))
        return out

    for ours, theirs in zip(words(skiff), words(torch), strict=True):
        assert ours.startswith(theirs)
    with pytest.raises(RuntimeError):  # torch's class, and skiff's ValueError as before
        skiff.nn.utils.rnn.pack_padded_sequence(skiff.zeros(3, 1), [0])
