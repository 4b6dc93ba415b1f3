"""Round 31: torch programs as users write them, against torch 2.13 on the CPU (float64).

In-place ops on views other than basic slices (``t()``, ``diagonal()``, ``view()``,
``select``, ``narrow``, ...) reach their base, in the graph and outside it; a zero-dim tensor
keeps a dimensioned tensor's float dtype; ``state_dict`` keys in torch's order and
``load_state_dict`` returning torch's ``(missing_keys, unexpected_keys)``; ``nn.LSTM``'s
one-node recurrence (:mod:`...nn.lstm_fused_r31`) against torch's, and its gradients of
gradients.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import skiff  # noqa: E402


@pytest.fixture(autouse=True)
def _float64():
    old_t, old_s = torch.get_default_dtype(), skiff.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    skiff.set_default_dtype(skiff.float64)
    yield
    torch.set_default_dtype(old_t)
    skiff.set_default_dtype(old_s)


def _np(x):
    return np.asarray(x.detach().numpy() if hasattr(x, "detach") else x)


def _same(ours, theirs, tol=1e-10):
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        a, b = _np(a), _np(b)
        assert a.shape == b.shape, (k, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=f"item {k}")


def _data(T, *shape, seed=0):
    return T.tensor(np.random.default_rng(seed).standard_normal(shape))


VIEW_WRITES = {
    "diagonal_add": lambda y: y.diagonal().add_(2),
    "diagonal_fill": lambda y: y.diagonal().fill_(0.5),
    "view_setitem": lambda y: y.view(2, 8).__setitem__((1, slice(0, 3)), 0.0),
    "t_row_mul": lambda y: y.t()[0].mul_(2),
    "T_row_iadd": lambda y: y.T[1].add_(1),
    "flat_view_slice": lambda y: y.view(-1)[:3].mul_(5),
    "select": lambda y: y.select(1, 2).mul_(2),
    "narrow": lambda y: y.narrow(0, 1, 2).mul_(-3),
    "reshape_slice": lambda y: y.reshape(16).__setitem__(slice(3, 6), 1.0),
    "transpose_slice": lambda y: y.transpose(0, 1)[1:3, 0].mul_(4),
    "unsqueeze_permute": lambda y: y.unsqueeze(-1).permute(2, 1, 0)[0, 1].zero_(),
    "flatten_step": lambda y: y.flatten()[::5].mul_(0),
    "transpose_clamp": lambda y: y.transpose(0, 1).clamp_(max=0.1),
}


@pytest.mark.parametrize("name", sorted(VIEW_WRITES))
@pytest.mark.parametrize("graph", [True, False])
def test_in_place_on_views_reaches_base(name, graph):
    def run(T):
        x = _data(T, 4, 4).requires_grad_(graph)
        y = x * 1
        VIEW_WRITES[name](y)
        out = [y]
        if graph:
            (y * _data(T, 4, 4, seed=3)).sum().backward()
            out.append(x.grad)
        return out

    _same(run(skiff), run(torch))


def test_grad_written_into_views_of_a_constant():
    def run(T):
        w = _data(T, 4).requires_grad_()
        x = _data(T, 3, 3).requires_grad_()
        y = T.zeros(4, 4)
        y.t()[1] = w * 2
        y.diagonal().copy_(w)
        z = x * 2
        z.diagonal().zero_()
        z.t().mul_(T.arange(3.0))
        ((y * _data(T, 4, 4, seed=2)).sum() + (z ** 2).sum()).backward()
        return [y, z, w.grad, x.grad]

    _same(run(skiff), run(torch))


def test_zero_dim_tensor_keeps_the_other_dtype():
    for T in (skiff, torch):
        f32 = T.ones(2, 3, dtype=T.float32)
        assert (f32 * T.tensor(2.0, dtype=T.float64)).dtype == T.float32
        assert (T.tensor(2.0, dtype=T.float64) + f32).dtype == T.float32
        i32 = T.tensor([1, 2], dtype=T.int32)
        assert (i32 + T.tensor(3)).dtype == T.int32
        assert (i32 * T.tensor(2.0, dtype=T.float64)).dtype == T.float64
        assert (T.tensor(1.0, dtype=T.float32) * T.tensor(2.0, dtype=T.float64)).dtype \
            == T.float64
    x = skiff.ones(3, dtype=skiff.float32).requires_grad_()
    s = skiff.tensor(0.5, dtype=skiff.float64).requires_grad_()
    (x * s).sum().backward()
    assert s.grad.dtype == skiff.float64 and float(s.grad) == 3.0


def _net(T):
    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = T.nn.Linear(3, 4)
            self.bn = T.nn.BatchNorm1d(4)
            self.register_buffer("steps", T.zeros((), dtype=T.long))
            self.register_buffer("tmp", T.ones(2), persistent=False)

        def forward(self, x):
            self.steps += 1
            return self.bn(self.fc(x))

    return Net()


def test_state_dict_order_and_load_result():
    def run(T):
        net = _net(T)
        with T.no_grad():
            net.fc.weight.copy_(_data(T, 4, 3, seed=3))
            net.fc.bias.zero_()
        net(_data(T, 6, 3))
        buf = io.BytesIO()
        T.save(net.state_dict(), buf)
        buf.seek(0)
        sd = T.load(buf)
        other = _net(T)
        res = other.load_state_dict(sd)
        missing, unexpected = other.load_state_dict(
            {k: v for k, v in sd.items() if k != "fc.bias"}, strict=False)
        with pytest.raises(RuntimeError):
            other.load_state_dict({**sd, "extra": sd["fc.bias"]})
        other.eval()
        return list(sd), (res.missing_keys, res.unexpected_keys), repr(res), (
            missing, unexpected), other(_data(T, 2, 3, seed=7))

    ours, theirs = run(skiff), run(torch)
    assert ours[:4] == theirs[:4]
    _same([ours[4]], [theirs[4]])


def _copy_weights(T, m):
    with T.no_grad():
        for k, (_, p) in enumerate(m.named_parameters()):
            p.copy_(_data(T, *p.shape, seed=k) * 0.4)


@pytest.mark.parametrize("bidir,layers,bias,state,batch_first", [
    (False, 1, True, False, False), (True, 2, True, True, True), (False, 2, False, True, False),
    (True, 1, False, False, True)])
def test_lstm_one_node_matches_torch(bidir, layers, bias, state, batch_first):
    def run(T):
        m = T.nn.LSTM(3, 5, num_layers=layers, bidirectional=bidir, bias=bias,
                      batch_first=batch_first)
        _copy_weights(T, m)
        x = _data(T, 4, 6, 3, seed=50).requires_grad_()
        d, n = (2 if bidir else 1), (4 if batch_first else 6)
        st = None
        if state:
            st = (_data(T, layers * d, n, 5, seed=60).requires_grad_(),
                  _data(T, layers * d, n, 5, seed=61).requires_grad_())
        out, (h, c) = m(x, st)
        ((out * _data(T, *out.shape, seed=7)).sum() + (h * c).sum() + c.pow(2).sum()).backward()
        res = [out, h, c, x.grad] + [p.grad for p in m.parameters()]
        return res + ([st[0].grad, st[1].grad] if state else [])

    _same(run(skiff), run(torch))


def test_lstm_gradients_of_gradients():
    def run(T):
        m = T.nn.LSTM(2, 3)
        _copy_weights(T, m)
        x = _data(T, 3, 2, 2, seed=9).requires_grad_()
        out, _ = m(x)
        (g,) = T.autograd.grad(out.pow(2).sum(), x, create_graph=True)
        g.pow(2).sum().backward()
        hess = T.func.hessian(lambda v: m(v)[0].sum())(x[:, :1].detach())
        return [g, x.grad, m.weight_hh_l0.grad, hess]

    _same(run(skiff), run(torch))


def _set_weights(T, m, scale=0.5):
    with T.no_grad():
        for k, (_, p) in enumerate(m.named_parameters()):
            p.copy_(_data(T, *p.shape, seed=100 + k) * scale)


def test_jacrev_of_a_parameter_dict_and_tuple_outputs():
    def run(T):
        m = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 2))
        _set_weights(T, m)
        params = {k: v.detach() for k, v in m.named_parameters()}
        x = _data(T, 5, 3, seed=2)
        jac = T.func.jacrev(lambda p: T.func.functional_call(m, p, (x,)))(params)
        j2 = T.func.jacrev(lambda a, b: (a * b, (a.sin() * b).sum()), argnums=(0, 1))(
            x[0], x[1])
        return [jac[k] for k in params] + [j2[0][0], j2[0][1], j2[1][0], j2[1][1]]

    _same(run(skiff), run(torch))


def test_module_api_recurse_prefix_zero_grad_and_backward_pre_hook():
    def run(T):
        class Block(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = T.nn.Linear(2, 2)
                self.scale = T.nn.Parameter(T.ones(2))
                self.register_buffer("count", T.zeros(()))

            def forward(self, x):
                return self.lin(x) * self.scale

        b = Block()
        _set_weights(T, b)
        names = ([n for n, _ in b.named_parameters(recurse=False)],
                 [n for n, _ in b.named_parameters(prefix="m")],
                 [n for n, _ in b.named_buffers(prefix="m", recurse=False)],
                 len(list(b.parameters(recurse=False))))
        seen = []
        b.lin.register_full_backward_pre_hook(lambda mod, go: seen.append(go[0].clone()))
        b.lin.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
        x = _data(T, 3, 2).requires_grad_()
        b(x).pow(2).sum().backward()
        grads = [seen[0], b.lin.weight.grad.clone(), x.grad]
        b.zero_grad(set_to_none=False)
        zeroed = b.lin.weight.grad
        b.zero_grad()
        return names, grads + [zeroed], b.lin.weight.grad is None

    ours, theirs = run(skiff), run(torch)
    assert ours[0] == theirs[0] and ours[2] == theirs[2]
    _same(ours[1], theirs[1])


def test_where_alone_and_once_differentiable():
    def run(T):
        x = _data(T, 3, 4)
        idx = T.where(x > 0)

        class Cube(T.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                ctx.save_for_backward(t)
                return t ** 3

            @staticmethod
            @T.autograd.function.once_differentiable
            def backward(ctx, g):
                (t,) = ctx.saved_tensors
                return g * 3 * t * t

        y = x.clone().requires_grad_()
        Cube.apply(y).sum().backward()
        return list(idx) + [y.grad]

    _same(run(skiff), run(torch))


@pytest.mark.parametrize("shape,orth_map", [
    ((3, 3), None), ((3, 3), "cayley"), ((3, 3), "householder"), ((4, 2), None),
    ((2, 5), "matrix_exp"), ((2, 5), "cayley")])
def test_orthogonal_parametrization(shape, orth_map):
    def run(T):
        lin = T.nn.Linear(shape[1], shape[0])
        with T.no_grad():
            lin.weight.copy_(_data(T, *shape))
            lin.bias.zero_()
        T.nn.utils.parametrizations.orthogonal(lin, orthogonal_map=orth_map)
        w = lin.weight
        y = lin(_data(T, 2, shape[1], seed=4))
        y.pow(2).sum().backward()
        out = [w, y, w @ w.T if shape[0] <= shape[1] else w.T @ w]
        if shape[0] == shape[1]:  # a tall one's gradient depends on a random completion
            out.append(lin.parametrizations.weight.original.grad)
        with T.no_grad():
            lin.weight = _data(T, *shape, seed=9)
        return out + [lin.weight], list(lin.state_dict())

    (ours, k1), (theirs, k2) = run(skiff), run(torch)
    assert k1 == k2
    _same(ours, theirs)


def test_cross_entropy_with_class_probabilities():
    def run(T):
        F = T.nn.functional
        x = _data(T, 4, 5).requires_grad_()
        x3 = _data(T, 2, 5, 3, seed=3).requires_grad_()
        p = F.softmax(_data(T, 4, 5, seed=1), -1)
        p3 = F.softmax(_data(T, 2, 5, 3, seed=2), 1)
        w = T.tensor([1.0, 2.0, 0.5, 1.0, 3.0])
        losses = [F.cross_entropy(x, p), F.cross_entropy(x, p, reduction="sum"),
                  F.cross_entropy(x, p, weight=w, label_smoothing=0.1),
                  F.cross_entropy(x3, p3, weight=w, reduction="none").sum(),
                  T.nn.CrossEntropyLoss(label_smoothing=0.2)(x3, p3)]
        sum(losses).backward()
        return [T.stack(losses), x.grad, x3.grad]

    _same(run(skiff), run(torch))


@pytest.mark.parametrize("bidir,layers,bias,state,batch_first", [
    (False, 1, True, False, False), (True, 2, True, True, True), (False, 2, False, True, False)])
def test_gru_one_node_matches_torch(bidir, layers, bias, state, batch_first):
    def run(T):
        m = T.nn.GRU(3, 5, num_layers=layers, bidirectional=bidir, bias=bias,
                     batch_first=batch_first)
        _copy_weights(T, m)
        x = _data(T, 4, 6, 3, seed=50).requires_grad_()
        d, n = (2 if bidir else 1), (4 if batch_first else 6)
        h0 = _data(T, layers * d, n, 5, seed=60).requires_grad_() if state else None
        out, h = m(x, h0)
        ((out * _data(T, *out.shape, seed=7)).sum() + (h * h).sum()).backward()
        return [out, h, x.grad] + [p.grad for p in m.parameters()] + (
            [h0.grad] if state else [])

    _same(run(skiff), run(torch))


def test_gru_gradients_of_gradients():
    def run(T):
        m = T.nn.GRU(2, 3)
        _copy_weights(T, m)
        x = _data(T, 3, 2, 2, seed=9).requires_grad_()
        out, _ = m(x)
        (g,) = T.autograd.grad(out.pow(2).sum(), x, create_graph=True)
        g.pow(2).sum().backward()
        return [g, x.grad, m.weight_hh_l0.grad, m.bias_hh_l0.grad]

    _same(run(skiff), run(torch))
