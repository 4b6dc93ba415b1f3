"""Round 38 (h4): ``torch.func.replace_all_batch_norm_modules_`` (per-sample gradients of a
batch-norm net by ``vmap(grad)``), ``nn.utils.stateless.functional_call``,
``nn.utils.clip_grad_norm`` (deprecated), ``nn.utils.skip_init``, ``nn.RNNBase``/
``nn.RNNCellBase`` against torch 2.13."""

import copy

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

R = np.random.default_rng(38)
X, Y = R.normal(size=(6, 3, 4, 4)), R.normal(size=(6, 2))


def _nets():
    out, init = [], {}
    for lib in (torch, skiff):
        lib.manual_seed(0)
        nn = lib.nn
        m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                          nn.Linear(16, 2)).double()
        if lib is torch:
            init.update(copy.deepcopy(m.state_dict()))
        else:
            m.load_state_dict({k: skiff.tensor(v.numpy().copy()) for k, v in init.items()})
        out.append(m)
    return out


def test_per_sample_gradients_of_a_batch_norm_net_are_torchs():
    grads = []
    for lib, m in zip((torch, skiff), _nets()):
        lib.func.replace_all_batch_norm_modules_(m)
        bn = m[1]
        assert bn.running_mean is None and not bn.track_running_stats
        assert "1.running_mean" not in m.state_dict()
        params = {k: v.detach() for k, v in m.named_parameters()}

        def loss(p, x, y, lib=lib, m=m):
            out = lib.func.functional_call(m, p, (x.unsqueeze(0),))
            return ((out - y) ** 2).sum()

        g = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, lib.tensor(X),
                                                                    lib.tensor(Y))
        grads.append({k: v.detach().numpy() for k, v in g.items()})
    for k in grads[0]:
        np.testing.assert_allclose(grads[1][k], grads[0][k], rtol=1e-10, atol=1e-12)


def test_stateless_clip_grad_norm_skip_init_and_bases_are_torchs():
    outs = []
    for lib, m in zip((torch, skiff), _nets()):
        U = lib.nn.utils
        p = {k: v.detach() * 0.5 for k, v in m.named_parameters()}
        with pytest.warns(FutureWarning, match="func.functional_call"):
            y = U.stateless.functional_call(m, p, (lib.tensor(X),))
        m(lib.tensor(X)).pow(2).sum().backward()
        with pytest.warns(FutureWarning, match="clip_grad_norm_"):
            n = U.clip_grad_norm(m.parameters(), 0.5)
        lin = U.skip_init(lib.nn.Linear, 3, 5, device="cpu")
        assert tuple(lin.weight.shape) == (5, 3) and tuple(lin.bias.shape) == (5,)
        assert isinstance(lib.nn.LSTM(2, 3), lib.nn.RNNBase)
        assert isinstance(lib.nn.GRU(2, 3), lib.nn.RNNBase)
        assert isinstance(lib.nn.LSTMCell(2, 3), lib.nn.RNNCellBase)
        assert not isinstance(lib.nn.Linear(2, 3), (lib.nn.RNNBase, lib.nn.RNNCellBase))
        outs.append((y.detach().numpy(), float(n), m[4].weight.grad.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-10)
