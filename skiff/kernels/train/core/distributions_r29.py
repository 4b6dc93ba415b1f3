"""Round 29: torch's ``MultivariateNormal``, ``MixtureSameFamily``, ``Laplace``,
``Exponential``, ``Gamma`` and ``Beta`` (normalising flows' priors, mixture-density networks,
policies over bounded actions). Densities, entropies, means and variances are built of
differentiable ops with torch's formulas (``MultivariateNormal`` from the Cholesky factor,
its Mahalanobis term by one triangular solve), so they train as in torch; draws come from
skiff's seeded generator (torch's law, not torch's numbers). ``Gamma``/``Beta`` have
``sample`` but no ``rsample`` (torch's implicit reparameterisation is not here)."""

from __future__ import annotations

import math

import numpy as np

from . import ops_linalg as _la
from .distributions import (
    Categorical,
    Distribution,
    _AtLoc,
    _const,
    _shape,
    _t,
    register_kl,
)
from .random import get_generator

__all__ = ["MultivariateNormal", "MixtureSameFamily", "Laplace", "Exponential", "Gamma", "Beta"]


def _bcast(*ts):
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in ts))
    return [t if tuple(t.shape) == shape else t.expand(*shape) for t in ts], shape


def _pair(a, b):
    a = _t(a, b if hasattr(b, "_data") else None)
    b = _t(b, a)
    return _bcast(a, b)


class MultivariateNormal(_AtLoc, Distribution):
    """``N(loc, Sigma)`` given one of ``covariance_matrix``, ``precision_matrix`` or
    ``scale_tril`` (torch's arguments; batches of each broadcast against ``loc``)."""

    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("MultivariateNormal: pass exactly one of covariance_matrix, "
                             "precision_matrix or scale_tril")
        loc = _t(loc)
        if loc.ndim < 1:
            raise ValueError("MultivariateNormal: loc must be at least one-dimensional "
                             "(use Normal for a scalar)")
        self._given = None  # the matrix passed, returned as it is (torch's properties)
        if scale_tril is not None:
            L = _t(scale_tril, loc)  # torch reads its lower triangle only where it solves
        elif covariance_matrix is not None:
            self._given = ("covariance_matrix", _t(covariance_matrix, loc))
            L = _la.cholesky(self._given[1])
        else:
            self._given = ("precision_matrix", _t(precision_matrix, loc))
            L = _la.cholesky(_la.inv(self._given[1]))
        if L.ndim < 2 or L.shape[-1] != L.shape[-2] or L.shape[-1] != loc.shape[-1]:
            raise ValueError(f"MultivariateNormal: the matrix must be (..., {loc.shape[-1]}, "
                             f"{loc.shape[-1]}) for loc of shape {tuple(loc.shape)}, got "
                             f"{tuple(L.shape)}")
        k = int(loc.shape[-1])
        batch = np.broadcast_shapes(tuple(L.shape[:-2]), tuple(loc.shape[:-1]))
        self._L = L  # unbroadcast, as torch's _unbroadcasted_scale_tril
        self.loc = loc if tuple(loc.shape) == batch + (k,) else loc.expand(*batch, k)
        super().__init__(batch, (k,))

    def _full(self, m):
        return m.expand(*self.batch_shape, *self.event_shape * 2)

    @property
    def scale_tril(self):
        return self._full(self._L)

    @property
    def covariance_matrix(self):
        if self._given is not None and self._given[0] == "covariance_matrix":
            return self._full(self._given[1])
        return self._full(self._L @ self._L.swapaxes(-1, -2))

    @property
    def precision_matrix(self):
        if self._given is not None and self._given[0] == "precision_matrix":
            return self._full(self._given[1])
        return self._full(_la.inv(self._L @ self._L.swapaxes(-1, -2)))

    @property
    def variance(self):
        return (self._L * self._L).sum(-1).expand(*self.batch_shape, *self.event_shape)

    def _half_log_det(self):
        return _la.diagonal(self._L, dim1=-2, dim2=-1).log().sum(-1)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape + self.event_shape
        eps = _const(self.loc, get_generator().standard_normal(shape))
        return self.loc + (self._L @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value):
        diff = _t(value, self.loc) - self.loc
        sol = _la.solve_triangular(self._L, diff.unsqueeze(-1), upper=False).squeeze(-1)
        m = (sol * sol).sum(-1)
        k = self.event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        k = self.event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h if tuple(h.shape) == self.batch_shape else h.expand(*self.batch_shape)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn(p, q):
    k = p.event_shape[0]
    Lq = q._L
    # tr(Sq^-1 Sp) = ||Lq^-1 Lp||_F^2 ; Mahalanobis of the means under q
    batch = np.broadcast_shapes(p.batch_shape, q.batch_shape)
    Lp = p._L.expand(*batch, k, k)
    a = _la.solve_triangular(Lq, Lp, upper=False)
    tr = (a * a).sum((-2, -1))
    d = _la.solve_triangular(Lq, (q.loc - p.loc).unsqueeze(-1), upper=False).squeeze(-1)
    return q._half_log_det() - p._half_log_det() + 0.5 * (tr + (d * d).sum(-1) - k)


class MixtureSameFamily(Distribution):
    """torch's: a ``Categorical`` over the last batch axis of ``component_distribution``."""

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("MixtureSameFamily: mixture_distribution must be a Categorical")
        comp = component_distribution
        cb = comp.batch_shape
        if not cb or cb[-1] != mixture_distribution._num_events:
            raise ValueError(f"MixtureSameFamily: the components' last batch axis ({cb}) must "
                             f"have the mixture's {mixture_distribution._num_events} entries")
        self.mixture_distribution, self.component_distribution = mixture_distribution, comp
        self._event_ndims = len(comp.event_shape)
        super().__init__(cb[:-1], comp.event_shape)

    def _pad(self, t):  # mixture weights (B, K) -> (B, K, 1...) over the event axes
        for _ in range(self._event_ndims):
            t = t.unsqueeze(-1)
        return t

    @property
    def mean(self):
        p = self._pad(self.mixture_distribution.probs)
        return (p * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        p = self._pad(self.mixture_distribution.probs)
        ax = -1 - self._event_ndims
        cm = self.component_distribution.mean
        within = (p * self.component_distribution.variance).sum(ax)
        between = (p * (cm - self.mean.unsqueeze(ax)) ** 2).sum(ax)
        return within + between

    def _x(self, value):
        return _t(value, self.mixture_distribution.logits).unsqueeze(-1 - self._event_ndims)

    def log_prob(self, value):
        lp = self.component_distribution.log_prob(self._x(value))
        return (lp + self.mixture_distribution.logits).logsumexp(-1)

    def cdf(self, value):
        c = self.component_distribution.cdf(self._x(value))
        return (c * self.mixture_distribution.probs).sum(-1)

    def sample(self, sample_shape=()):
        from .autograd import no_grad

        with no_grad():
            ids = self.mixture_distribution.sample(sample_shape)  # sample + batch
            xs = self.component_distribution.sample(sample_shape)  # sample + batch + K + event
            idx = ids._data.reshape(ids._data.shape + (1,) * (1 + self._event_ndims))
            idx = xs.xp.broadcast_to(idx, ids._data.shape + (1,) + tuple(self.event_shape))
            return xs.gather(ids.ndim, idx).squeeze(ids.ndim).detach()


class Laplace(_AtLoc, Distribution):
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), shape = _pair(loc, scale)
        super().__init__(shape)

    @property
    def variance(self):
        return 2 * self.scale * self.scale

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape=()):
        eps = float(np.finfo(np.dtype(self.loc.dtype)).eps)
        u = get_generator().uniform(eps - 1, 1, _shape(sample_shape) + self.batch_shape)
        return self.loc - self.scale * _const(self.loc, np.sign(u) * np.log1p(-np.abs(u)))

    def log_prob(self, value):
        v = _t(value, self.loc)
        return -(2 * self.scale).log() - (v - self.loc).abs() / self.scale

    def cdf(self, value):
        z = _t(value, self.loc) - self.loc
        return 0.5 - 0.5 * z.sign() * (-z.abs() / self.scale).expm1()

    def entropy(self):
        return 1 + (2 * self.scale).log()


class Exponential(Distribution):
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        self.rate = _t(rate)
        super().__init__(tuple(self.rate.shape))

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return self.rate * 0

    @property
    def variance(self):
        return (self.rate * self.rate).reciprocal()

    @property
    def stddev(self):
        return self.rate.reciprocal()

    def rsample(self, sample_shape=()):
        e = get_generator().standard_exponential(_shape(sample_shape) + self.batch_shape)
        return _const(self.rate, e) / self.rate

    def log_prob(self, value):
        return self.rate.log() - self.rate * _t(value, self.rate)

    def cdf(self, value):
        return 1 - (-self.rate * _t(value, self.rate)).exp()

    def entropy(self):
        return 1.0 - self.rate.log()


class Gamma(Distribution):
    def __init__(self, concentration, rate, validate_args=None):
        (self.concentration, self.rate), shape = _pair(concentration, rate)
        super().__init__(shape)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / (self.rate * self.rate)

    def sample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        g = get_generator().standard_gamma(np.broadcast_to(
            np.asarray(self.concentration.detach()), shape))
        return _const(self.rate, g) / self.rate.detach()

    def log_prob(self, value):
        a, b, v = self.concentration, self.rate, _t(value, self.rate)
        return a.xlogy(b) + (a - 1).xlogy(v) - b * v - a.lgamma()

    def entropy(self):
        a = self.concentration
        return a - self.rate.log() + a.lgamma() + (1.0 - a) * a.digamma()


class Beta(Distribution):
    def __init__(self, concentration1, concentration0, validate_args=None):
        (self.concentration1, self.concentration0), shape = _pair(concentration1,
                                                                  concentration0)
        super().__init__(shape)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        s = a + b
        return a * b / (s * s * (s + 1))

    def sample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        a = np.broadcast_to(np.asarray(self.concentration1.detach()), shape)
        b = np.broadcast_to(np.asarray(self.concentration0.detach()), shape)
        return _const(self.concentration1, get_generator().beta(a, b))

    def _lbeta(self):
        a, b = self.concentration1, self.concentration0
        return a.lgamma() + b.lgamma() - (a + b).lgamma()

    def log_prob(self, value):
        a, b, v = self.concentration1, self.concentration0, _t(value, self.concentration1)
        return (a - 1).xlogy(v) + (b - 1).xlogy(1 - v) - self._lbeta()

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        return (self._lbeta() - (a - 1) * a.digamma() - (b - 1) * b.digamma()
                + (a + b - 2) * (a + b).digamma())
