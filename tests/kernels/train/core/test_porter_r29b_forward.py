"""Forward mode as torch ports write it (func.jvp/jacfwd/linearize, autograd.forward_ad) and
autograd.grad's only_inputs / is_grads_batched, against torch 2.13 in float64."""

import numpy as np
import pytest
import torch

import skiff
import skiff.autograd.forward_ad as sfwd
from skiff.kernels.train.core import forward_r29b as sf
from skiff.kernels.train.core.func_r29 import functional_call as s_fcall
from skiff.kernels.train.core.func_r29 import grad as s_grad

tfwd = torch.autograd.forward_ad


def _pair(seed=0):
    torch.manual_seed(seed)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 7), torch.nn.Tanh(), torch.nn.Linear(7, 2)).double()
    sm = skiff.nn.Sequential(skiff.nn.Linear(3, 7), skiff.nn.Tanh(), skiff.nn.Linear(7, 2)).double()
    sm.load_state_dict({k: skiff.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, sm


def _np(t):
    return np.asarray(t.detach().numpy())


def test_jvp_of_a_model_and_of_a_two_argument_function():
    tm, sm = _pair()
    rng = np.random.default_rng(1)
    x, v = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    to, tt = torch.func.jvp(tm, (torch.tensor(x),), (torch.tensor(v),))
    so, st = sf.jvp(sm, (skiff.tensor(x),), (skiff.tensor(v),))
    np.testing.assert_allclose(_np(so), _np(to), rtol=1e-13)
    np.testing.assert_allclose(_np(st), _np(tt), rtol=1e-12, atol=1e-14)
    a, b, va, vb = (rng.standard_normal(5) for _ in range(4))

    def f(lib):
        return lambda p, q: (lib.sin(p) * q.exp(), (p * q).sum())
    T, S = torch.tensor, skiff.tensor
    to, tt = torch.func.jvp(f(torch), (T(a), T(b)), (T(va), T(vb)))
    so, st = sf.jvp(f(skiff), (S(a), S(b)), (S(va), S(vb)))
    for x1, x2 in zip(so + st, to + tt):
        np.testing.assert_allclose(_np(x1), _np(x2), rtol=1e-12, atol=1e-14)


def test_jvp_of_grad_is_a_hessian_vector_product_over_a_parameter_dict():
    tm, sm = _pair(2)
    x = np.random.default_rng(3).standard_normal((6, 3))

    def loss(lib, fc, m, xx):
        return lambda p: fc(m, p, (xx,)).pow(2).sum()
    tp = {k: v.detach() for k, v in tm.named_parameters()}
    sp = {k: v.detach() for k, v in sm.named_parameters()}
    tv = {k: torch.linspace(-1, 1, v.numel(), dtype=torch.float64).reshape(v.shape)
          for k, v in tp.items()}
    sv = {k: skiff.tensor(v.numpy()) for k, v in tv.items()}
    tloss = loss(torch, torch.func.functional_call, tm, torch.tensor(x))
    _, th = torch.func.jvp(torch.func.grad(tloss), (tp,), (tv,))
    _, sh = sf.jvp(s_grad(loss(skiff, s_fcall, sm, skiff.tensor(x))), (sp,), (sv,))
    assert set(sh) == set(th)
    for k in th:
        np.testing.assert_allclose(_np(sh[k]), _np(th[k]), rtol=1e-11, atol=1e-13)


def test_jvp_has_aux_constant_output_and_shape_errors():
    def f(lib):
        return lambda x: (x.pow(3), x.sum())
    x = np.arange(1.0, 4.0)
    ones = torch.ones(3, dtype=torch.float64)
    to, tt, ta = torch.func.jvp(f(torch), (torch.tensor(x),), (ones,), has_aux=True)
    so, st, sa = sf.jvp(f(skiff), (skiff.tensor(x),), (skiff.ones(3),), has_aux=True)
    np.testing.assert_allclose(_np(st), _np(tt))
    assert float(sa) == float(ta) and not so.requires_grad
    _, tc = torch.func.jvp(lambda z: torch.ones(2, dtype=torch.float64), (torch.tensor(x),),
                           (torch.tensor(x),))
    _, sc = sf.jvp(lambda z: skiff.ones(2), (skiff.tensor(x),), (skiff.tensor(x),))
    np.testing.assert_array_equal(_np(sc), _np(tc))
    with pytest.raises(ValueError, match="shape"):
        sf.jvp(lambda z: z, (skiff.ones(3),), (skiff.ones(2),))
    with pytest.raises(ValueError, match="tuples"):
        sf.jvp(lambda z: z, skiff.ones(3), skiff.ones(3))


def test_jacfwd_and_linearize():
    tm, sm = _pair(4)
    x = np.random.default_rng(5).standard_normal(3)
    tj = torch.func.jacfwd(tm)(torch.tensor(x))
    sj = sf.jacfwd(sm)(skiff.tensor(x))
    assert tuple(sj.shape) == tuple(tj.shape)
    np.testing.assert_allclose(_np(sj), _np(tj), rtol=1e-12, atol=1e-14)
    th = torch.func.jacfwd(torch.func.jacrev(lambda z: tm(z).sum()))(torch.tensor(x))
    sh = sf.jacfwd(sf.jacrev(lambda z: sm(z).sum()))(skiff.tensor(x))
    np.testing.assert_allclose(_np(sh), _np(th), rtol=1e-11, atol=1e-13)
    v = np.array([0.3, -1.0, 2.0])
    to, tfn = torch.func.linearize(tm, torch.tensor(x))
    so, sfn = sf.linearize(sm, skiff.tensor(x))
    np.testing.assert_allclose(_np(so), _np(to), rtol=1e-13)
    np.testing.assert_allclose(_np(sfn(skiff.tensor(v))), _np(tfn(torch.tensor(v))), rtol=1e-12)


def test_forward_ad_dual_numbers():
    tm, sm = _pair(6)
    rng = np.random.default_rng(7)
    x, v = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    with tfwd.dual_level():
        d = tfwd.make_dual(torch.tensor(x), torch.tensor(v))
        tp, tt = tfwd.unpack_dual(torch.sin(tm(d)) * 2 + d.sum())
        t_none = tfwd.unpack_dual(torch.ones(2)).tangent
    with sfwd.dual_level():
        d = sfwd.make_dual(skiff.tensor(x), skiff.tensor(v))
        out = sfwd.unpack_dual(skiff.sin(sm(d)) * 2 + d.sum())
        s_none = sfwd.unpack_dual(skiff.ones(2)).tangent
        _, dt = sfwd.unpack_dual(d)
    np.testing.assert_allclose(_np(out.primal), _np(tp), rtol=1e-13)
    np.testing.assert_allclose(_np(out.tangent), _np(tt), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(_np(dt), v)
    assert s_none is None and t_none is None
    with pytest.raises(RuntimeError, match="dual level"):
        sfwd.make_dual(skiff.ones(2), skiff.ones(2))
    assert skiff.autograd.forward_ad is sfwd


def test_autograd_grad_only_inputs_and_batched_grad_outputs():
    x = np.random.default_rng(8).standard_normal((4, 3))
    tx = torch.tensor(x, requires_grad=True)
    sx = skiff.tensor(x, requires_grad=True)
    ty, sy = (tx.sin() * tx).sum(1), (sx.sin() * sx).sum(1)
    (tg,) = torch.autograd.grad(ty, tx, torch.ones(4, dtype=torch.float64), only_inputs=True,
                                retain_graph=True)
    (sg,) = skiff.autograd.grad(sy, sx, skiff.ones(4), only_inputs=True, retain_graph=True)
    np.testing.assert_allclose(_np(sg), _np(tg), rtol=1e-13)
    eye_t, eye_s = torch.eye(4, dtype=torch.float64), skiff.tensor(np.eye(4))
    (tj,) = torch.autograd.grad(ty, tx, eye_t, is_grads_batched=True)
    (sj,) = skiff.autograd.grad(sy, sx, eye_s, is_grads_batched=True)
    assert tuple(sj.shape) == tuple(tj.shape) == (4, 4, 3)
    np.testing.assert_allclose(_np(sj), _np(tj), rtol=1e-13)



def test_skiff_func_attribute_finds_forward_mode():
    from skiff.kernels.train.core import func_all_r29b, ops_stats

    assert ops_stats.func is func_all_r29b
    assert func_all_r29b.jvp is sf.jvp and func_all_r29b.jacfwd is sf.jacfwd
    assert func_all_r29b.linearize is sf.linearize and func_all_r29b.vmap is not None
    assert {"jvp", "jacfwd", "linearize", "vmap", "grad"} <= set(func_all_r29b.__all__)
