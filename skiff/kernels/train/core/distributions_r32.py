"""Round 32: more of torch's ``distributions``: ``Poisson``, ``Dirichlet``, ``StudentT``,
``LogNormal``, ``Cauchy``, ``Binomial``, ``Geometric``, ``OneHotCategorical``. ``log_prob``,
``entropy``, ``mean``/``variance`` (and ``cdf``/``icdf`` where torch has them) are built of
differentiable ops with torch's formulas; ``rsample`` (LogNormal, Cauchy) and ``sample`` draw
from skiff's seeded generator (torch's law, not torch's numbers); Dirichlet and StudentT have
``sample`` only (torch reparameterizes them through Gamma draws)."""

from __future__ import annotations

import math

import numpy as np

from .distributions import Categorical, Distribution, Normal, _const, _shape, _t
from .distributions_r29 import _pair
from .random import get_generator
from .tensor import Tensor

__all__ = ["Poisson", "Dirichlet", "StudentT", "LogNormal", "Cauchy", "Binomial", "Geometric",
           "OneHotCategorical"]


def _host(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def _probs_logits(probs, logits, name):
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: pass either probs or logits, not both")
    if probs is not None:
        probs = _t(probs)
        eps = float(np.finfo(probs.dtype).eps)  # torch's clamp_probs
        pc = probs.clamp(eps, 1 - eps)
        return probs, pc.log() - (-pc).log1p()
    logits = _t(logits)
    return logits.sigmoid(), logits


class Poisson(Distribution):
    def __init__(self, rate, validate_args=None):
        self.rate = _t(rate)
        super().__init__(tuple(self.rate.shape))

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        return _const(self.rate, get_generator().poisson(np.broadcast_to(_host(self.rate),
                                                                         shape)))

    def log_prob(self, value):
        v = _t(value, self.rate)
        return v.xlogy(self.rate) - self.rate - (v + 1).lgamma()


class Dirichlet(Distribution):
    def __init__(self, concentration, validate_args=None):
        self.concentration = _t(concentration)
        super().__init__(tuple(self.concentration.shape[:-1]),
                         tuple(self.concentration.shape[-1:]))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def variance(self):
        a0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (a0 - self.concentration) / (a0 * a0 * (a0 + 1))

    def sample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape + self.event_shape
        g = get_generator().standard_gamma(np.broadcast_to(_host(self.concentration), shape))
        return _const(self.concentration, g / g.sum(-1, keepdims=True))

    def log_prob(self, value):
        a, v = self.concentration, _t(value, self.concentration)
        return ((a - 1).xlogy(v)).sum(-1) + a.sum(-1).lgamma() - a.lgamma().sum(-1)

    def entropy(self):
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        return (a.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma()
                - ((a - 1.0) * a.digamma()).sum(-1))


class StudentT(Distribution):
    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        like = next((x for x in (df, loc, scale) if isinstance(x, Tensor)), None)
        df, loc, scale = (_t(x, like) for x in (df, loc, scale))
        shape = np.broadcast_shapes(tuple(df.shape), tuple(loc.shape), tuple(scale.shape))
        self.df, self.loc, self.scale = (x if tuple(x.shape) == shape else x.expand(*shape)
                                         for x in (df, loc, scale))
        super().__init__(shape)

    @property
    def mean(self):
        from .tensor import where
        return where(self.df._data > 1, self.loc, float("nan"))

    @property
    def variance(self):
        from .tensor import where
        df = self.df
        v = self.scale * self.scale * df / (df - 2)
        v = where(df._data > 2, v, float("inf"))
        return where(df._data > 1, v, float("nan"))

    def sample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        z = get_generator().standard_t(np.broadcast_to(_host(self.df), shape))
        return (self.loc + _const(self.loc, z) * self.scale).detach()

    def log_prob(self, value):
        v = _t(value, self.loc)
        y = (v - self.loc) / self.scale
        df = self.df
        z = (self.scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi)
             + (0.5 * df).lgamma() - (0.5 * (df + 1.0)).lgamma())
        return -0.5 * (df + 1.0) * (y * y / df).log1p() - z

    def entropy(self):
        df = self.df
        lbeta = (0.5 * df).lgamma() + math.lgamma(0.5) - (0.5 * (df + 1)).lgamma()
        return (self.scale.log() + 0.5 * (df + 1) * ((0.5 * (df + 1)).digamma()
                                                     - (0.5 * df).digamma())
                + 0.5 * df.log() + lbeta)


class LogNormal(Distribution):
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.base_dist = Normal(loc, scale)
        self.loc, self.scale = self.base_dist.loc, self.base_dist.scale
        super().__init__(self.base_dist.batch_shape)

    @property
    def mean(self):
        return (self.loc + self.scale * self.scale / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale * self.scale).exp()

    @property
    def variance(self):
        s2 = self.scale * self.scale
        return s2.expm1() * (2 * self.loc + s2).exp()

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape).exp()

    def log_prob(self, value):
        v = _t(value, self.loc)
        y = v.log()
        return self.base_dist.log_prob(y) - y

    def entropy(self):
        return self.base_dist.entropy() + self.loc

    def cdf(self, value):
        return self.base_dist.cdf(_t(value, self.loc).log())

    def icdf(self, value):
        return self.base_dist.icdf(value).exp()


class Cauchy(Distribution):
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), shape = _pair(loc, scale)
        super().__init__(shape)

    @property
    def mean(self):
        return _const(self.loc, np.full(self.batch_shape, np.nan))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return _const(self.loc, np.full(self.batch_shape, np.inf))

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        return self.loc + _const(self.loc, get_generator().standard_cauchy(shape)) * self.scale

    def log_prob(self, value):
        v = _t(value, self.loc)
        z = (v - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - (z * z).log1p()

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()

    def cdf(self, value):
        return ((_t(value, self.loc) - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value):
        return ((_t(value, self.loc) - 0.5) * math.pi).tan() * self.scale + self.loc


class Binomial(Distribution):
    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        self.probs, self.logits = _probs_logits(probs, logits, "Binomial")
        n = _t(total_count, self.logits)
        shape = np.broadcast_shapes(tuple(n.shape), tuple(self.logits.shape))
        self.total_count = n if tuple(n.shape) == shape else n.expand(*shape)
        if tuple(self.logits.shape) != shape:
            self.logits, self.probs = self.logits.expand(*shape), self.probs.expand(*shape)
        super().__init__(shape)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        draws = get_generator().binomial(np.broadcast_to(_host(self.total_count), shape).astype(
            np.int64), np.broadcast_to(_host(self.probs), shape))
        return _const(self.probs, draws)

    def log_prob(self, value):
        v = _t(value, self.logits)
        n, lg = self.total_count, self.logits
        # torch's: k logit - n max(logit, 0) - n log1p(exp(-|logit|)), the max as the mean of
        # both clamps (its gradient at 0)
        by_zero = (lg.clamp(min=0) + lg - lg.clamp(max=0)) / 2
        normalize = n * by_zero + n * (-lg.abs()).exp().log1p() - (n + 1).lgamma()
        return v * lg - normalize - (v + 1).lgamma() - (n - v + 1).lgamma()

    def entropy(self):
        """torch's: summed over the support 0..n (round 44: missing); one ``total_count``
        for the whole batch, as torch's."""
        counts = _host(self.total_count)
        n = int(counts.max()) if counts.size else 0
        if counts.size and int(counts.min()) != n:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        k = np.arange(n + 1, dtype=self.logits.dtype).reshape((-1,) + (1,) * len(
            self.batch_shape))
        lp = self.log_prob(Tensor(self.logits.xp.asarray(k), dtype=self.logits.dtype))
        return -(lp.exp() * lp).sum(0)


class Geometric(Distribution):
    """The number of failures before the first success (torch's support 0, 1, ...)."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        self.probs, self.logits = _probs_logits(probs, logits, "Geometric")
        super().__init__(tuple(self.probs.shape))

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        u = get_generator().random(shape)
        p = np.broadcast_to(_host(self.probs), shape)
        return _const(self.probs, np.floor(np.log1p(-u) / np.log1p(-p)))

    def log_prob(self, value):
        from .tensor import where

        v = _t(value, self.probs)
        p = self.probs
        q = where((p._data == 1) & (v._data == 0), 0.0, p)  # torch's: no 0 * -inf there
        return v * (-q).log1p() + p.log()

    def entropy(self):
        from .nn import functional as F
        return F.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                  reduction="none") / self.probs


class OneHotCategorical(Distribution):
    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs=probs, logits=logits)
        self.probs, self.logits = self._categorical.probs, self._categorical.logits
        super().__init__(self._categorical.batch_shape, (self._categorical._num_events,))

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        n = self._categorical._num_events
        return _const(self.probs, np.eye(n)[_host(self.probs).argmax(-1)])

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        ids = np.asarray(self._categorical.sample(sample_shape).numpy())
        return _const(self.probs, np.eye(self._categorical._num_events)[ids])

    def log_prob(self, value):
        v = _t(value, self.probs)
        return self._categorical.log_prob(v.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()
