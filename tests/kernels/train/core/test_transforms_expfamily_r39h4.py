"""Round 39 (h4): torch's ``CatTransform``, ``StackTransform``, ``constraints.cat``/
``stack``/``dependent`` (and ``biject_to`` of them) and ``ExponentialFamily`` (Bregman
entropy and same-family KL by autograd), against torch 2.13 in float64."""

import numpy as np
import pytest

import skiff
import skiff.distributions as SD

torch = pytest.importorskip("torch")
TD = torch.distributions

R = np.random.default_rng(391)


def _close(a, b, tol=1e-12):
    a, b = a.detach().numpy(), np.asarray(b.detach().numpy())
    assert a.shape == b.shape
    assert np.abs(a - b).max() <= tol, np.abs(a - b).max()


def _cat(D):
    T = D.transforms
    return T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 3.0),
                           T.SigmoidTransform()], dim=-1, lengths=[2, 1, 3])


def _stack(D):
    T = D.transforms
    return T.StackTransform([T.ExpTransform(), T.AffineTransform(2.0, -1.0),
                             T.TanhTransform()], dim=1)


@pytest.mark.parametrize("make,shape", [(_cat, (4, 6)), (_stack, (5, 3))])
def test_cat_and_stack_transforms_as_torchs(make, shape):
    x = 0.5 * R.normal(size=shape)
    tt, st = make(TD), make(SD)
    tx, sx = torch.tensor(x, requires_grad=True), skiff.tensor(x, requires_grad=True)
    ty, sy = tt(tx), st(sx)
    tl, sl = tt.log_abs_det_jacobian(tx, ty), st.log_abs_det_jacobian(sx, sy)
    (tl.sum() + (ty * ty).sum()).backward()
    (sl.sum() + (sy * sy).sum()).backward()
    for t, s in ((ty, sy), (tt.inv(ty), st.inv(sy)), (tl, sl), (tx.grad, sx.grad)):
        _close(t, s)
    assert st.bijective
    # a flow's log_prob through it
    tb = TD.Independent(TD.Normal(torch.zeros(shape, dtype=torch.float64), 1.0), 1)
    sb = SD.Independent(SD.Normal(skiff.zeros(shape, dtype=skiff.float64), 1.0), 1)
    _close(TD.TransformedDistribution(tb, [tt]).log_prob(ty.detach()),
           SD.TransformedDistribution(sb, [st]).log_prob(sy.detach()))


def test_cat_of_an_event_transform_sums_its_log_determinants():
    def make(D):
        T = D.transforms
        return T.CatTransform([T.IndependentTransform(T.ExpTransform(), 1),
                               T.IndependentTransform(T.SigmoidTransform(), 1)],
                              dim=0, lengths=[2, 1])
    x = R.normal(size=(3, 4))
    tt, st = make(TD), make(SD)
    ty, sy = tt(torch.tensor(x)), st(skiff.tensor(x))
    _close(tt.log_abs_det_jacobian(torch.tensor(x), ty),
           st.log_abs_det_jacobian(skiff.tensor(x), sy))


def test_constraints_cat_stack_check_and_biject_to():
    v = np.array([[1.0, 2.0, 0.5, 2.5], [-1.0, 1.0, 1.0, 1.0]])
    x = R.normal(size=(3, 4))
    for cs in ((lambda C: C.cat([C.positive, C.interval(0.0, 2.0)], dim=-1, lengths=[2, 2])),
               (lambda C: C.stack([C.positive, C.real, C.unit_interval, C.positive], dim=1))):
        tc, sc = cs(TD.constraints), cs(SD.constraints)
        assert np.array_equal(tc.check(torch.tensor(v)).numpy(),
                              np.asarray(sc.check(skiff.tensor(v)).numpy()))
        _close(TD.biject_to(tc)(torch.tensor(x)), SD.biject_to(sc)(skiff.tensor(x)))
        _close(TD.transform_to(tc)(torch.tensor(x)), SD.transform_to(sc)(skiff.tensor(x)))
    assert SD.constraints.is_dependent(SD.constraints.dependent)
    assert not SD.constraints.is_dependent(SD.constraints.real)
    with pytest.raises(ValueError, match="dependent"):
        SD.constraints.dependent.check(skiff.ones(2))


def _gaussian_family(D, lib, log_pi):
    class Gauss(D.ExponentialFamily):
        arg_constraints = {}

        def __init__(self, loc, scale):
            self.loc, self.scale = loc, scale
            super().__init__(loc.shape, validate_args=False)

        @property
        def _natural_params(self):
            return (self.loc / self.scale ** 2, -0.5 / self.scale ** 2)

        def _log_normalizer(self, x, y):
            return -0.25 * x.pow(2) / y + 0.5 * lib.log(-log_pi / y)

        @property
        def _mean_carrier_measure(self):
            return 0

    return Gauss


def test_exponential_family_entropy_and_kl_by_bregman_divergence():
    TG = _gaussian_family(TD, torch, torch.pi)
    SG = _gaussian_family(SD, skiff, np.pi)
    loc, scale = R.normal(size=3), R.random(3) + 0.5
    tl, ts = torch.tensor(loc, requires_grad=True), torch.tensor(scale)
    sl, ss = skiff.tensor(loc, requires_grad=True), skiff.tensor(scale)
    _close(TG(tl, ts).entropy(), SG(sl, ss).entropy())
    _close(SG(sl, ss).entropy(), SD.Normal(sl, ss).entropy())  # the closed form
    tk = TD.kl_divergence(TG(tl, ts), TG(tl * 0 + 1, ts * 2))
    sk = SD.kl_divergence(SG(sl, ss), SG(sl * 0 + 1, ss * 2))
    _close(tk, sk)
    tk.sum().backward()
    sk.sum().backward()
    _close(tl.grad, sl.grad)
    assert isinstance(SD.Normal(0.0, 1.0), SD.ExponentialFamily)
    assert isinstance(SD.Chi2(2.0), SD.ExponentialFamily)
    assert not isinstance(SD.Laplace(0.0, 1.0), SD.ExponentialFamily)
