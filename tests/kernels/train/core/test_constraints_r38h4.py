"""Round 38 (h4): torch's ``distributions.constraints``, ``biject_to`` and ``transform_to``
against torch 2.13: each constraint's transform (values, inverse, log-determinant and the
input gradient, float64), ``check``, a distribution's ``support`` as the argument, and the
refusals (``biject_to`` of a discrete, lower-Cholesky or positive-definite set)."""

import numpy as np
import pytest

import skiff
import skiff.distributions as S

torch = pytest.importorskip("torch")
D = torch.distributions

R = np.random.default_rng(38)

CASES = [
    ("real", lambda C: C.real, (4,)), ("positive", lambda C: C.positive, (4,)),
    ("nonnegative", lambda C: C.nonnegative, (4,)),
    ("greater_than", lambda C: C.greater_than(2.0), (4,)),
    ("greater_than_eq", lambda C: C.greater_than_eq(-1.0), (4,)),
    ("less_than", lambda C: C.less_than(-1.0), (4,)),
    ("interval", lambda C: C.interval(-1.0, 3.0), (4,)),
    ("half_open", lambda C: C.half_open_interval(0.0, 1.0), (4,)),
    ("unit_interval", lambda C: C.unit_interval, (4,)), ("simplex", lambda C: C.simplex, (2, 4)),
    ("corr_cholesky", lambda C: C.corr_cholesky, (2, 6)),
    ("independent", lambda C: C.independent(C.positive, 1), (2, 4)),
    ("real_vector", lambda C: C.real_vector, (2, 4))]


@pytest.mark.parametrize("fn", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name,make,shape", CASES, ids=[c[0] for c in CASES])
def test_transform_onto_a_constraint_is_torchs(fn, name, make, shape):
    x = R.normal(size=shape)
    outs = []
    for lib, mod in ((skiff, S), (torch, D)):
        t = getattr(mod, fn)(make(mod.constraints))
        xs = lib.tensor(x, requires_grad=True)
        y = t(xs)
        parts = [y]
        if not (fn == "transform_to" and name == "simplex"):  # softmax: no log-det, no inverse
            ladj = t.log_abs_det_jacobian(xs, y)
            parts += [t.inv(y), ladj * 1.0]
            (y.sum() + (ladj * 1.0).sum()).backward()
        else:
            (y * lib.tensor(np.arange(y.numel()).reshape(tuple(y.shape)))).sum().backward()
        parts.append(xs.grad)
        outs.append([np.asarray(p.detach().numpy()) for p in parts])
        assert bool(make(mod.constraints).check(y.detach()).all())
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", ["biject_to", "transform_to"])
def test_matrix_constraints_and_refusals_are_torchs(fn):
    x = R.normal(size=(2, 3, 3))
    for lib, mod in ((skiff, S), (torch, D)):
        C = mod.constraints
        for c in (C.lower_cholesky, C.positive_definite):
            if fn == "biject_to":
                with pytest.raises(NotImplementedError, match="Cannot transform"):
                    mod.biject_to(c)
            else:
                y = mod.transform_to(c)(lib.tensor(x))
                assert bool(c.check(y).all())
        for c in (C.boolean, C.nonnegative_integer, C.positive_integer,
                  C.integer_interval(0, 3)):
            with pytest.raises(NotImplementedError, match="Cannot transform"):
                getattr(mod, fn)(c)


def test_supports_and_checks_are_torchs():
    v = np.array([-1.0, 0.0, 0.5, 1.0, 2.5])
    for lib, mod in ((torch, D), (skiff, S)):
        C = mod.constraints
        got = [c.check(lib.tensor(v)).numpy().tolist() for c in
               (C.positive, C.nonnegative, C.unit_interval, C.greater_than(0.5),
                C.less_than(1.0), C.interval(0.0, 1.0), C.half_open_interval(0.0, 1.0),
                C.integer_interval(0, 2), C.boolean)]
        got.append(C.simplex.check(lib.tensor([[0.2, 0.8], [0.5, 0.6]])).numpy().tolist())
        got.append(C.independent(C.positive, 1).check(lib.tensor([[1.0, 2.0], [1.0, -1.0]]))
                   .numpy().tolist())
        if lib is torch:
            expected = got
        else:
            assert got == expected
    x = R.normal(size=(3,))
    ys = []
    for lib, mod in ((skiff, S), (torch, D)):
        lo = lib.tensor([0.0, -1.0, 2.0], dtype=lib.float64)
        for d in (mod.Uniform(lo, lo + 2), mod.Gamma(lib.tensor(2.0), lib.tensor(1.0)),
                  mod.Beta(lib.tensor(2.0), lib.tensor(3.0)),
                  mod.Pareto(lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64), 2.0)):
            ys.append(mod.biject_to(d.support)(lib.tensor(x)).numpy())
        ys.append(mod.biject_to(mod.Dirichlet(lib.ones(4, dtype=lib.float64)).support)(
            lib.tensor(x)).numpy())
    n = len(ys) // 2
    for a, b in zip(ys[:n], ys[n:]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
