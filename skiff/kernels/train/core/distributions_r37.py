"""Round 37: the families of torch's ``distributions`` that ported programs still missed:
``Gumbel``, ``HalfNormal``, ``HalfCauchy``, ``Chi2``, ``Weibull``, ``Pareto``, ``Kumaraswamy``,
``FisherSnedecor``, ``VonMises``, ``NegativeBinomial``, ``Multinomial``,
``ContinuousBernoulli``, ``RelaxedBernoulli``/``LogitRelaxedBernoulli``,
``RelaxedOneHotCategorical``/``ExpRelaxedCategorical`` (Gumbel-softmax), ``LogisticNormal``
with ``StickBreakingTransform``; ``Gamma.cdf`` (``special.gammainc``), and the KL pairs of one
family (Beta, Gamma, Exponential, Laplace, Uniform, Poisson, Dirichlet, Gumbel, HalfNormal).

Densities, entropies, means and variances are torch's formulas built of differentiable ops
(``VonMises``'s Bessel terms are torch's polynomial approximations, so its values are
torch's, not the exact ones); ``rsample`` where torch has one, draws from skiff's seeded
generator (torch's law, not torch's numbers)."""

from __future__ import annotations

import math

import numpy as np

from . import distributions_r36 as _v
from .autograd import Function
from .distributions import (
    Categorical,
    Distribution,
    Normal,
    Uniform,
    _AtLoc,
    _const,
    _shape,
    _t,
    register_kl,
)
from .distributions_r29 import Beta, Exponential, Gamma, Laplace, _bcast, _pair
from .distributions_r32 import Cauchy, Dirichlet, Poisson, StudentT, _probs_logits
from .distributions_r35 import (
    ExpTransform,
    SigmoidTransform,
    Transform,
    TransformedDistribution,
    transforms,
)
from .ops_math import unbroadcast
from .random import get_generator
from .special_r32 import gammainc
from .tensor import where

__all__ = ["Gumbel", "HalfNormal", "HalfCauchy", "Chi2", "Weibull", "Pareto", "Kumaraswamy",
           "FisherSnedecor", "VonMises", "NegativeBinomial", "Multinomial",
           "ContinuousBernoulli", "LogitRelaxedBernoulli", "RelaxedBernoulli",
           "ExpRelaxedCategorical", "RelaxedOneHotCategorical", "LogisticNormal",
           "StickBreakingTransform"]

_EULER = 0.57721566490153286060


def _fi(t):
    fi = np.finfo(t.dtype)
    return float(fi.tiny), float(fi.eps)


def _uniform(like, shape, low=None, high=None):
    """U(0, 1) draws clamped as torch's ``clamp_probs``/``Uniform(tiny, 1 - eps)``."""
    tiny, eps = _fi(like)
    u = get_generator().random(shape)
    return _const(like, np.clip(u, tiny if low is None else low, 1 - eps if high is None else
                                high))


def _inf_like(t):
    return t.xp.asarray(np.inf, dtype=t.dtype)


def _nan_where(cond, t):
    return where(cond, t.xp.asarray(np.nan, dtype=t.dtype), t)


class Gumbel(Distribution):
    """torch's ``Gumbel(loc, scale)`` (``loc - scale log(-log U)``)."""

    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), shape = _pair(loc, scale)
        super().__init__(shape)

    @property
    def mean(self):
        return self.loc + self.scale * _EULER

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev ** 2

    def rsample(self, sample_shape=()):
        u = _uniform(self.loc, _shape(sample_shape) + self.batch_shape)
        return self.loc - self.scale * (-u.log()).log()

    def log_prob(self, value):
        y = (self.loc - _t(value, self.loc)) / self.scale
        return (y - y.exp()) - self.scale.log()

    def cdf(self, value):
        return (-(-(_t(value, self.loc) - self.loc) / self.scale).exp()).exp()

    def icdf(self, value):
        return self.loc - self.scale * (-_t(value, self.loc).log()).log()

    def entropy(self):
        return self.scale.log() + (1 + _EULER)


class _Half(Distribution):
    """|X| of a zero-centred ``base`` (torch's ``AbsTransform`` of Normal/Cauchy)."""

    has_rsample = True

    def __init__(self, scale, validate_args=None):
        self.scale = _t(scale)
        self.base_dist = self._base(_const(self.scale, np.zeros(tuple(self.scale.shape))),
                                    self.scale, validate_args=False)
        super().__init__(tuple(self.scale.shape))

    @property
    def mode(self):
        return 0 * self.scale

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape).abs()

    def log_prob(self, value):
        v = _t(value, self.scale)
        lp = self.base_dist.log_prob(v) + math.log(2)
        return where(v._data >= 0, lp, -_inf_like(lp))

    def cdf(self, value):
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((_t(prob, self.scale) + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Half):
    _base = Normal

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale ** 2 * (1 - 2 / math.pi)


class HalfCauchy(_Half):
    _base = Cauchy

    @property
    def mean(self):
        return self.scale * 0 + _inf_like(self.scale)

    @property
    def variance(self):
        return self.scale * 0 + _inf_like(self.scale)


class Chi2(Gamma):
    """torch's ``Chi2(df)``: ``Gamma(df / 2, 1 / 2)``."""

    def __init__(self, df, validate_args=None):
        df = _t(df)
        super().__init__(0.5 * df, _t(0.5, df), validate_args=False)

    @property
    def df(self):
        return self.concentration * 2


class Weibull(Distribution):
    """torch's ``Weibull(scale, concentration)`` (``scale E^(1/k)``, E ~ Exp(1))."""

    has_rsample = True

    def __init__(self, scale, concentration, validate_args=None):
        (self.scale, self.concentration), shape = _pair(scale, concentration)
        super().__init__(shape)

    @property
    def mean(self):
        return self.scale * (1 + self.concentration.reciprocal()).lgamma().exp()

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        k = self.concentration
        return self.scale ** 2 * ((1 + 2 / k).lgamma().exp() - (2 * (1 + 1 / k).lgamma()).exp())

    def rsample(self, sample_shape=()):
        e = get_generator().standard_exponential(_shape(sample_shape) + self.batch_shape)
        return self.scale * _const(self.scale, e) ** self.concentration.reciprocal()

    def log_prob(self, value):
        v, k = _t(value, self.scale), self.concentration
        z = v / self.scale
        return k.log() - self.scale.log() + (k - 1) * z.log() - z ** k

    def cdf(self, value):
        return 1 - (-(_t(value, self.scale) / self.scale) ** self.concentration).exp()

    def icdf(self, value):
        return self.scale * (-(-_t(value, self.scale)).log1p()) ** self.concentration.reciprocal()

    def entropy(self):
        k = self.concentration
        return _EULER * (1 - k.reciprocal()) + (self.scale / k).log() + 1


class Pareto(Distribution):
    """torch's ``Pareto(scale, alpha)`` (``scale exp(E / alpha)``); support ``[scale, inf)``."""

    has_rsample = True

    def __init__(self, scale, alpha, validate_args=None):
        (self.scale, self.alpha), shape = _pair(scale, alpha)
        super().__init__(shape)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale ** 2 * a / ((a - 1) ** 2 * (a - 2))

    def rsample(self, sample_shape=()):
        e = get_generator().standard_exponential(_shape(sample_shape) + self.batch_shape)
        return self.scale * (_const(self.alpha, e) / self.alpha).exp()

    def log_prob(self, value):
        x = (_t(value, self.scale) / self.scale).log()
        return self.alpha.log() - (self.alpha + 1) * x - self.scale.log()

    def cdf(self, value):
        return 1 - (self.scale / _t(value, self.scale)) ** self.alpha

    def icdf(self, value):
        return self.scale * (1 - _t(value, self.scale)) ** -self.alpha.reciprocal()

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Kumaraswamy(Distribution):
    """torch's ``Kumaraswamy(concentration1, concentration0)`` on (0, 1)."""

    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        (self.concentration1, self.concentration0), shape = _pair(concentration1,
                                                                  concentration0)
        super().__init__(shape)

    def _moment(self, n):
        a, b = self.concentration1, self.concentration0
        arg1 = 1 + n / a
        return b * (arg1.lgamma() + b.lgamma() - (arg1 + b).lgamma()).exp()

    @property
    def mean(self):
        return self._moment(1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        log_mode = a.reciprocal() * (-b).log1p() - (-b * a).log1p()
        bad = (b._data < 1) | (a._data < 1)
        return _nan_where(bad, log_mode).exp()

    @property
    def variance(self):
        return self._moment(2) - self._moment(1) ** 2

    def rsample(self, sample_shape=()):
        u = _const(self.concentration1, get_generator().random(_shape(sample_shape) +
                                                               self.batch_shape))
        return (1 - u ** self.concentration0.reciprocal()) ** self.concentration1.reciprocal()

    def log_prob(self, value):
        a, b, v = self.concentration1, self.concentration0, _t(value, self.concentration1)
        return a.log() + b.log() + (a - 1) * v.log() + (b - 1) * (-(v ** a)).log1p()

    def cdf(self, value):
        v = _t(value, self.concentration1)
        return 1 - (1 - v ** self.concentration1) ** self.concentration0

    def icdf(self, value):
        v = _t(value, self.concentration1)
        a, b = self.concentration1, self.concentration0
        return (1 - (1 - v) ** b.reciprocal()) ** a.reciprocal()

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        h0 = (b + 1).digamma() + _EULER
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * h0 - a.log() - b.log()


class FisherSnedecor(Distribution):
    """torch's ``FisherSnedecor(df1, df2)`` (draws as a ratio of Gamma draws; no rsample)."""

    def __init__(self, df1, df2, validate_args=None):
        (self.df1, self.df2), shape = _pair(df1, df2)
        super().__init__(shape)

    @property
    def mean(self):
        d2 = self.df2
        return _nan_where(d2._data <= 2, d2 / (d2 - 2))

    @property
    def mode(self):
        d1, d2 = self.df1, self.df2
        return _nan_where(d1._data <= 2, (d1 - 2) / d1 * d2 / (d2 + 2))

    @property
    def variance(self):
        d1, d2 = self.df1, self.df2
        v = 2 * d2 ** 2 * (d1 + d2 - 2) / (d1 * (d2 - 2) ** 2 * (d2 - 4))
        return _nan_where(d2._data <= 4, v)

    def sample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        gen, tiny = get_generator(), _fi(self.df1)[0]
        d1 = np.broadcast_to(np.asarray(self.df1.detach().numpy(), dtype=np.float64), shape)
        d2 = np.broadcast_to(np.asarray(self.df2.detach().numpy(), dtype=np.float64), shape)
        x1 = gen.standard_gamma(0.5 * d1) / (0.5 * d1)
        x2 = np.maximum(gen.standard_gamma(0.5 * d2) / (0.5 * d2), tiny)
        return _const(self.df1, np.maximum(x1 / x2, tiny))

    def log_prob(self, value):
        v = _t(value, self.df1)
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * v.log()
        t3 = (ct1 + ct2) * (ct3 * v).log1p()
        return t1 + t2 - t3


# torch's polynomial approximations of log I0 and log I1 (von_mises.py)
_COEF_SMALL = ([1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2],
               [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2,
                0.32411e-3])
_COEF_LARGE = ([0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2,
                -0.2057706e-1, 0.2635537e-1, -0.1647633e-1, 0.392377e-2],
               [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1,
                0.2282967e-1, -0.2895312e-1, 0.1787654e-1, -0.420059e-2])


def _eval_poly(y, coef):
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_bessel(x, order):
    y = (x / 3.75) ** 2
    small = _eval_poly(y, _COEF_SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    large = x - 0.5 * x.log() + _eval_poly(3.75 / x, _COEF_LARGE[order]).log()
    return where(x._data < 3.75, small, large)


class VonMises(_AtLoc, Distribution):
    """torch's ``VonMises(loc, concentration)``: angles, the circular mean and variance."""

    def __init__(self, loc, concentration, validate_args=None):
        (self.loc, self.concentration), shape = _pair(loc, concentration)
        super().__init__(shape)

    @property
    def variance(self):
        k = self.concentration
        return 1 - (_log_bessel(k, 1) - _log_bessel(k, 0)).exp()

    def sample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        loc = np.broadcast_to(np.asarray(self.loc.detach().numpy(), dtype=np.float64), shape)
        k = np.broadcast_to(np.asarray(self.concentration.detach().numpy(), dtype=np.float64),
                            shape)
        x = get_generator().vonmises(0.0, k, size=shape)
        return _const(self.loc, (x + math.pi + loc) % (2 * math.pi) - math.pi)

    def log_prob(self, value):
        v = _t(value, self.loc)
        return (self.concentration * (v - self.loc).cos() - math.log(2 * math.pi)
                - _log_bessel(self.concentration, 0))


class NegativeBinomial(Distribution):
    """torch's ``NegativeBinomial(total_count, probs=, logits=)``: failures before
    ``total_count`` successes with success probability ``1 - probs`` (torch's reading);
    draws are Poisson(Gamma(total_count, exp(-logits)))."""

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        p, lg = _probs_logits(probs, logits, "NegativeBinomial")
        n = _t(total_count, lg)
        (self.total_count, self.logits), shape = _bcast(n, lg)
        self.probs = p if tuple(p.shape) == shape else p.expand(*shape)
        self._param_given = "probs" if probs is not None else "logits"
        super().__init__(shape)

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        gen = get_generator()
        n = np.broadcast_to(np.asarray(self.total_count.detach().numpy(), np.float64), shape)
        lg = np.broadcast_to(np.asarray(self.logits.detach().numpy(), np.float64), shape)
        rate = gen.standard_gamma(n) * np.exp(lg)
        return _const(self.logits, gen.poisson(rate))

    def log_prob(self, value):
        from .nn.functional.activations_more import logsigmoid

        v, n = _t(value, self.logits), self.total_count
        unnorm = n * logsigmoid(-self.logits) + v * logsigmoid(self.logits)
        norm = -(n + v).lgamma() + (1.0 + v).lgamma() + n.lgamma()
        norm = where((n + v)._data == 0, n.xp.asarray(0.0, dtype=norm.dtype), norm)
        return unnorm - norm


class Multinomial(Distribution):
    """torch's ``Multinomial(total_count, probs=, logits=)`` (one count for the batch)."""

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, (int, np.integer)):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = int(total_count)
        self._categorical = Categorical(probs=probs, logits=logits, validate_args=False)
        self._param_given = "probs" if probs is not None else "logits"
        c = self._categorical
        super().__init__(tuple(c.probs.shape[:-1]), tuple(c.probs.shape[-1:]))

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        p = np.asarray(self.probs.detach().numpy(), dtype=np.float64)
        p = p / p.sum(-1, keepdims=True)
        draws = get_generator().multinomial(self.total_count, p, size=shape)
        return _const(self.probs, draws)

    def log_prob(self, value):
        v = _t(value, self.logits)
        shape = np.broadcast_shapes(tuple(v.shape), tuple(self.logits.shape))
        lg = self.logits if tuple(self.logits.shape) == shape else self.logits.expand(*shape)
        v = v if tuple(v.shape) == shape else v.expand(*shape)
        lg = where((v._data == 0) & (lg._data == -np.inf), lg.xp.asarray(0.0, lg.dtype), lg)
        return ((v.sum(-1) + 1).lgamma() - (v + 1).lgamma().sum(-1) + (lg * v).sum(-1))

    def entropy(self):
        n, p = self.total_count, self.probs
        k = np.arange(1, n + 1, dtype=p.dtype).reshape((n,) + (1,) * p.ndim)
        k = _const(p, k)
        log_binom = (math.lgamma(n + 1) - (k + 1).lgamma() - (n - k + 1).lgamma()
                     + k * p.clamp(min=_fi(p)[0]).log() + (n - k) * (-p).log1p())
        weights = (k + 1).lgamma()
        return (n * self._categorical.entropy() - math.lgamma(n + 1)
                + (weights * log_binom.exp()).sum((0, -1)))


class ContinuousBernoulli(Distribution):
    """torch's ``ContinuousBernoulli(probs=, logits=, lims=(0.499, 0.501))`` on [0, 1] (the
    normaliser by its Taylor series near probs = 1/2); ``rsample`` by the inverse cdf."""

    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            p = _t(probs)
            if validate_args is not None and not bool(((p._data >= 0) & (p._data <= 1)).all()):
                raise ValueError("The parameter probs has invalid values")
            eps = _fi(p)[1]
            self.probs = p.clamp(eps, 1 - eps)
            self.logits = self.probs.log() - (-self.probs).log1p()
        else:
            self.logits = _t(logits)
            eps = _fi(self.logits)[1]
            self.probs = self.logits.sigmoid().clamp(eps, 1 - eps)
        self._param_given = "probs" if probs is not None else "logits"
        self._lims = lims
        super().__init__(tuple(self.probs.shape))

    def _outside(self):
        p = self.probs._data
        return (p <= self._lims[0]) | (p > self._lims[1])

    def _cut_probs(self):
        return where(self._outside(), self.probs,
                     self.probs.xp.asarray(self._lims[0], dtype=self.probs.dtype))

    def _log_norm(self):
        cut = self._cut_probs()
        below = where(cut._data <= 0.5, cut, cut.xp.asarray(0.0, cut.dtype))
        above = where(cut._data >= 0.5, cut, cut.xp.asarray(1.0, cut.dtype))
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - where(
            cut._data <= 0.5, (-2.0 * below).log1p(), (2.0 * above - 1.0).log())
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return where(self._outside(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x
        return where(self._outside(), mus, taylor)

    @property
    def variance(self):
        cut = self._cut_probs()
        vs = cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2 + 1.0 / ((-cut).log1p() - cut.log()) ** 2
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return where(self._outside(), vs, taylor)

    def rsample(self, sample_shape=()):
        u = get_generator().random(_shape(sample_shape) + self.batch_shape)
        return self.icdf(_const(self.probs, u))

    def log_prob(self, value):
        v, z = _t(value, self.logits), self.logits
        # -BCE with logits; max(z, 0) as the mean of both clamps, so that at z = 0 (a
        # zero-initialized decoder) the gradient is torch's v - 1/2 (clamp's alone: v - 1)
        relu = (z.clamp(min=0) + z - z.clamp(max=0)) / 2
        return -(relu - z * v + (-z.abs()).exp().log1p()) + self._log_norm()

    def cdf(self, value):
        v = _t(value, self.probs)
        cut = self._cut_probs()
        cdfs = (cut ** v * (1.0 - cut) ** (1.0 - v) + cut - 1.0) / (2.0 * cut - 1.0)
        inner = where(self._outside(), cdfs, v)
        zero, one = v.xp.asarray(0.0, v.dtype), v.xp.asarray(1.0, v.dtype)
        return where(v._data <= 0.0, zero, where(v._data >= 1.0, one, inner))

    def icdf(self, value):
        v = _t(value, self.probs)
        cut = self._cut_probs()
        inv = (((-cut + v * (2.0 * cut - 1.0)).log1p() - (-cut).log1p())
               / (cut.log() - (-cut).log1p()))
        return where(self._outside(), inv, v)

    def entropy(self):
        lp0, lp1 = (-self.probs).log1p(), self.probs.log()
        return self.mean * (lp0 - lp1) - self._log_norm() - lp0


class LogitRelaxedBernoulli(Distribution):
    """torch's ``LogitRelaxedBernoulli(temperature, probs=, logits=)`` (logistic noise)."""

    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.probs, self.logits = _probs_logits(probs, logits, "LogitRelaxedBernoulli")
        self.temperature = _t(temperature, self.logits)
        self._param_given = "probs" if probs is not None else "logits"
        super().__init__(tuple(self.logits.shape))

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        tiny, eps = _fi(self.probs)
        p = self.probs.clamp(eps, 1 - eps)
        u = _uniform(self.probs, shape, eps, 1 - eps)
        return (u.log() - (-u).log1p() + p.log() - (-p).log1p()) / self.temperature

    def log_prob(self, value):
        diff = self.logits - _t(value, self.logits) * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """torch's ``RelaxedBernoulli(temperature, probs=, logits=)``: the sigmoid of a
    ``LogitRelaxedBernoulli`` (a differentiable Bernoulli for gates and masks)."""

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=False)
        super().__init__(base, SigmoidTransform())

    temperature = property(lambda self: self.base_dist.temperature)
    probs = property(lambda self: self.base_dist.probs)
    logits = property(lambda self: self.base_dist.logits)


class ExpRelaxedCategorical(Distribution):
    """torch's ``ExpRelaxedCategorical``: the log of a Gumbel-softmax draw."""

    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=False)
        self.temperature = _t(temperature, self._categorical.logits)
        c = self._categorical
        super().__init__(tuple(c.probs.shape[:-1]), tuple(c.probs.shape[-1:]))

    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape + self.event_shape
        u = _uniform(self.logits, shape, _fi(self.logits)[1])
        scores = (self.logits - (-u.log()).log()) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        v = _t(value, self.logits)
        log_scale = math.lgamma(k) - self.temperature.log() * -(k - 1)
        score = self.logits - v * self.temperature
        return (score - score.logsumexp(-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """torch's ``RelaxedOneHotCategorical(temperature, probs=, logits=)``: Gumbel-softmax
    draws on the simplex (``rsample`` is differentiable in the logits)."""

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=False)
        super().__init__(base, ExpTransform())

    temperature = property(lambda self: self.base_dist.temperature)
    probs = property(lambda self: self.base_dist.probs)
    logits = property(lambda self: self.base_dist.logits)


class StickBreakingTransform(Transform):
    """torch's ``StickBreakingTransform``: R^K onto the (K + 1)-simplex."""

    event_dim = 1

    def _offset(self, k, like):
        return _const(like, np.arange(k, 0, -1, dtype=np.float64))

    def _call(self, x):
        from .tensor import cat

        tiny, eps = _fi(x)
        z = (x - self._offset(x.shape[-1], x).log()).sigmoid().clamp(tiny, 1 - eps)
        ones = _const(x, np.ones(tuple(x.shape[:-1]) + (1,)))
        return cat([z, ones], -1) * cat([ones, (1 - z).cumprod(-1)], -1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = self._offset(y_crop.shape[-1], y)
        sf = (1 - y_crop.cumsum(-1)).clamp(min=_fi(y)[0])
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        from .nn.functional.activations_more import logsigmoid

        x = x - self._offset(x.shape[-1], x).log()
        return (-x + logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        return tuple(shape[:-1]) + (shape[-1] - 1,)


transforms.StickBreakingTransform = StickBreakingTransform  # torch.distributions.transforms's


class LogisticNormal(TransformedDistribution):
    """torch's ``LogisticNormal(loc, scale)``: a Normal on R^K stick-broken onto the
    (K + 1)-simplex."""

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=False)
        if not base.batch_shape:
            base = Normal(base.loc.reshape(1), base.scale.reshape(1), validate_args=False)
        super().__init__(base, StickBreakingTransform())

    loc = property(lambda self: self.base_dist.loc)
    scale = property(lambda self: self.base_dist.scale)


class _StandardGamma(Function):
    """Gamma(alpha, 1) draws, differentiable in ``alpha`` by implicit reparameterization
    (torch's ``_standard_gamma``): ``dx/dalpha = -(dP(alpha, x)/dalpha) / p(x; alpha)``, the
    ``alpha`` derivative of the regularized incomplete gamma by a central difference."""

    def forward(self, alpha, draws=None):
        self.save_for_backward(alpha, draws)
        return draws

    def backward(self, g):
        from scipy import special as sp

        alpha, x = self.saved
        a = np.broadcast_to(alpha, x.shape).astype(np.float64)
        xd = x.astype(np.float64)
        h = 1e-5 * np.maximum(a, 1e-3)
        with np.errstate(all="ignore"):
            dp = (sp.gammainc(a + h, xd) - sp.gammainc(np.maximum(a - h, 1e-300), xd)) / (
                (a + h) - np.maximum(a - h, 1e-300))
            log_pdf = (a - 1) * np.log(xd) - xd - sp.gammaln(a)
            dxda = np.where(np.isfinite(log_pdf), -dp * np.exp(-log_pdf), 0.0)
        return unbroadcast(g * dxda.astype(g.dtype), alpha.shape)


def _standard_gamma(alpha, shape):
    """Gamma(alpha, 1) of ``shape`` (``alpha`` broadcast), a draw that carries gradients."""
    draws = get_generator().standard_gamma(np.broadcast_to(
        np.asarray(alpha.detach().numpy(), dtype=np.float64), shape))
    tiny = _fi(alpha)[0]
    return _StandardGamma.apply(alpha, draws=np.maximum(draws, tiny).astype(alpha.dtype))


def _gamma_rsample(self, sample_shape=()):
    """torch's ``Gamma.rsample``: ``standard_gamma(concentration) / rate``."""
    shape = _shape(sample_shape) + self.batch_shape
    return _standard_gamma(self.concentration, shape) / self.rate


def _beta_rsample(self, sample_shape=()):
    """torch's ``Beta.rsample``: ``X / (X + Y)`` of two gamma draws (its Dirichlet)."""
    shape = _shape(sample_shape) + self.batch_shape
    x = _standard_gamma(self.concentration1, shape)
    y = _standard_gamma(self.concentration0, shape)
    return x / (x + y)


def _dirichlet_rsample(self, sample_shape=()):
    shape = _shape(sample_shape) + self.batch_shape + self.event_shape
    g = _standard_gamma(self.concentration, shape)
    return g / g.sum(-1, keepdim=True)


def _student_t_rsample(self, sample_shape=()):
    """torch's: ``loc + scale Z sqrt(df / (2 G))``, G ~ Gamma(df / 2, 1)."""
    shape = _shape(sample_shape) + self.batch_shape
    z = _const(self.loc, get_generator().standard_normal(shape))
    chi2 = 2 * _standard_gamma(0.5 * self.df, shape)
    return self.loc + self.scale * z * (self.df / chi2).sqrt()


def _fisher_rsample(self, sample_shape=()):
    shape = _shape(sample_shape) + self.batch_shape
    tiny = _fi(self.df1)[0]
    x1 = _standard_gamma(0.5 * self.df1, shape) / (0.5 * self.df1)
    x2 = (_standard_gamma(0.5 * self.df2, shape) / (0.5 * self.df2)).clamp(min=tiny)
    return (x1 / x2).clamp(min=tiny)


for _cls, _fn in ((Gamma, _gamma_rsample), (Beta, _beta_rsample), (Dirichlet, _dirichlet_rsample),
                  (StudentT, _student_t_rsample), (FisherSnedecor, _fisher_rsample)):
    _cls.rsample, _cls.has_rsample = _fn, True


def _gamma_cdf(self, value):
    """torch's ``Gamma.cdf``: ``gammainc(concentration, rate * value)``."""
    return gammainc(self.concentration, self.rate * _t(value, self.rate))


Gamma.cdf = _gamma_cdf


# ---- kl_divergence of one family (torch's kl.py) -------------------------------------------
@register_kl(Beta, Beta)
def _kl_beta(p, q):
    sp, sq = p.concentration1 + p.concentration0, q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sp.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sq.lgamma()
    t3 = (p.concentration1 - q.concentration1) * p.concentration1.digamma()
    t4 = (p.concentration0 - q.concentration0) * p.concentration0.digamma()
    t5 = (sq - sp) * sp.digamma()
    return t1 - t2 + t3 + t4 + t5


@register_kl(Gamma, Gamma)
def _kl_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = q.concentration.lgamma() - p.concentration.lgamma()
    t3 = (p.concentration - q.concentration) * p.concentration.digamma()
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Exponential, Exponential)
def _kl_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - ratio.log()


@register_kl(Laplace, Laplace)
def _kl_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return t1 + t2 + t3 - 1


@register_kl(Poisson, Poisson)
def _kl_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * _EULER
    t3 = (ct2 + (1 + ct1).lgamma() - ct3).exp()
    return t1 + t2 + t3 - (1 + _EULER)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal(p, q):
    from .distributions import kl_divergence

    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low._data > p.low._data) | (q.high._data < p.high._data)
    return where(outside, _inf_like(result), result)


# ---- torch's validate_args for these families (distributions_r36's checks) ---------------
def _pareto_support(d):
    lo = _v._host(d.scale)
    lo = -np.inf if lo is None else lo
    return _v.Constraint("GreaterThanEq(lower_bound=scale)", lambda a: a >= lo)


def _multinomial_support(d):
    n = d.total_count
    return _v.Constraint(f"Multinomial(upper_bound={n})",
                         lambda a: np.all(a >= 0, axis=-1) & (a.sum(axis=-1) <= n))


_half_open = _v.Constraint("HalfOpenInterval(lower_bound=0.0, upper_bound=1.0)",
                           lambda a: (a >= 0) & (a < 1))
_scale = {"scale": _v.positive}
RULES = {
    Gumbel: ({"loc": _v.real, "scale": _v.positive}, _v.real),
    HalfNormal: (_scale, _v.nonnegative),
    HalfCauchy: (_scale, _v.nonnegative),
    Chi2: ({"df": _v.positive}, _v.nonnegative),
    Weibull: ({"scale": _v.positive, "concentration": _v.positive}, _v.positive),
    Pareto: ({"scale": _v.positive, "alpha": _v.positive}, _pareto_support),
    Kumaraswamy: ({"concentration1": _v.positive, "concentration0": _v.positive},
                  _v.unit_interval),
    FisherSnedecor: ({"df1": _v.positive, "df2": _v.positive}, _v.positive),
    VonMises: ({"loc": _v.real, "concentration": _v.positive}, _v.real),
    NegativeBinomial: ({"total_count": _v.nonnegative, "probs": _half_open, "logits": _v.real},
                       _v.nonnegative_integer),
    Multinomial: ({"probs": _v.simplex, "logits": _v.real}, _multinomial_support),
    ContinuousBernoulli: ({"probs": _v.unit_interval, "logits": _v.real}, _v.unit_interval),
    LogitRelaxedBernoulli: ({"probs": _v.unit_interval, "logits": _v.real}, _v.real),
    RelaxedBernoulli: ({"probs": _v.unit_interval, "logits": _v.real}, _v.unit_interval),
    ExpRelaxedCategorical: ({"probs": _v.simplex, "logits": _v.real}, _v.real),
    RelaxedOneHotCategorical: ({"probs": _v.simplex, "logits": _v.real}, _v.simplex),
    LogisticNormal: ({"loc": _v.real, "scale": _v.positive}, _v.simplex),
}

for _cls, (_rules, _support) in RULES.items():
    _v._wrap(_cls, _rules, _support)
