"""torch's ``distributions`` that training code reaches for most: ``Normal``, ``Categorical``,
``Bernoulli``, ``Uniform``, ``Independent`` and ``kl_divergence`` (the closed forms of each
pair of one family). ``log_prob``, ``entropy``, ``cdf`` and ``kl_divergence`` are built of
differentiable ops, so a VAE's KL term or a policy gradient's ``log_prob`` trains as in torch;
``rsample`` (``Normal``, ``Uniform``) is ``loc + eps * scale`` with ``eps`` from skiff's seeded
generator (torch's law, not torch's numbers); ``sample`` is ``rsample`` detached (a category
id or a 0/1 for the discrete ones)."""

from __future__ import annotations

import copy
import math

import numpy as np

from skiff.kernels.backend import to_numpy

from .random import get_generator
from .tensor import Tensor

__all__ = ["Distribution", "Normal", "Categorical", "Bernoulli", "Uniform", "Independent",
           "kl_divergence", "register_kl"]


def _t(x, like=None):
    if isinstance(x, Tensor):
        return x
    dt = like.dtype if like is not None else None
    return Tensor(np.asarray(x, dtype=dt) if dt is not None else x, dtype=dt)


def _shape(sample_shape):
    if isinstance(sample_shape, int):
        return (sample_shape,)
    return tuple(sample_shape)


def _const(like, array):
    return Tensor._make(like.xp.asarray(array, dtype=like.dtype), False, None, 0)


class Distribution:
    """Base: ``batch_shape``, ``event_shape``, ``sample``/``rsample``, ``log_prob``."""

    has_rsample = False

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self.batch_shape, self.event_shape = tuple(batch_shape), tuple(event_shape)

    def sample(self, sample_shape=()):
        from .autograd import no_grad

        with no_grad():
            return self.rsample(sample_shape).detach()

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sample "
                                  "(use sample(), and log_prob for a score-function gradient)")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def expand(self, batch_shape, _instance=None):
        """torch's ``expand``: the same distribution over a larger ``batch_shape`` (each
        parameter, and each inner distribution's batch, expanded as a view; no new draws)."""
        batch_shape = _shape(batch_shape)
        old = self.batch_shape
        new = copy.copy(self)
        for name, v in vars(self).items():
            if isinstance(v, Distribution) and tuple(v.batch_shape[:len(old)]) == old:
                setattr(new, name, v.expand(batch_shape + tuple(v.batch_shape[len(old):])))
            elif isinstance(v, Tensor) and tuple(v.shape[:len(old)]) == old:
                setattr(new, name, v.expand(*batch_shape, *v.shape[len(old):]))
        new.batch_shape = batch_shape
        return new

    def perplexity(self):
        """torch's: ``exp(entropy())``, batched over ``batch_shape``."""
        return self.entropy().exp()

    def __repr__(self):
        """torch's: ``Normal(loc: 0.0, scale: torch.Size([2]))`` (each constrained parameter
        held: its value when it has one element, else its shape); skiff's batch shape for a
        family without ``arg_constraints``."""
        rules = getattr(type(self), "arg_constraints", None) or {}
        names = [k for k in rules if isinstance(self.__dict__.get(k), Tensor)]
        if not names:
            return f"{type(self).__name__}(batch_shape={self.batch_shape})"
        shown = (torch_str(v) if v.numel() == 1 else _size(v.shape)
                 for v in (self.__dict__[k] for k in names))
        return "{}({})".format(type(self).__name__,
                               ", ".join(f"{k}: {v}" for k, v in zip(names, shown)))


class _AtLoc:
    """``mean`` and ``mode`` are ``loc`` (Normal, Laplace, VonMises, the multivariate normals)."""

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc


class Normal(_AtLoc, Distribution):
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        loc = _t(loc, scale if isinstance(scale, Tensor) else None)
        scale = _t(scale, loc)
        shape = np.broadcast_shapes(tuple(loc.shape), tuple(scale.shape))
        self.loc = loc if tuple(loc.shape) == shape else loc.expand(*shape)
        self.scale = scale if tuple(scale.shape) == shape else scale.expand(*shape)
        super().__init__(shape)  # (validate_args: torch's check and words, distributions_r36)

    @property
    def variance(self):
        return self.scale * self.scale

    @property
    def stddev(self):
        return self.scale

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        eps = get_generator().standard_normal(shape)
        return self.loc + _const(self.loc, eps) * self.scale

    def log_prob(self, value):
        v = _t(value, self.loc)
        z = (v - self.loc) / self.scale
        return -0.5 * z * z - self.scale.log() - 0.5 * math.log(2 * math.pi)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    def cdf(self, value):
        v = _t(value, self.loc)
        return 0.5 * (1 + ((v - self.loc) / (self.scale * math.sqrt(2))).erf())

    def icdf(self, value):
        """torch's: ``loc + scale * erfinv(2 value - 1) * sqrt(2)``."""
        v = _t(value, self.loc)
        return self.loc + self.scale * (2 * v - 1).erfinv() * math.sqrt(2)


class Uniform(Distribution):
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        low = _t(low, high if isinstance(high, Tensor) else None)
        high = _t(high, low)
        shape = np.broadcast_shapes(tuple(low.shape), tuple(high.shape))
        self.low = low if tuple(low.shape) == shape else low.expand(*shape)
        self.high = high if tuple(high.shape) == shape else high.expand(*shape)
        super().__init__(shape)

    @property
    def mean(self):
        return (self.low + self.high) / 2

    @property
    def variance(self):
        w = self.high - self.low
        return w * w / 12

    def rsample(self, sample_shape=()):
        u = get_generator().random(_shape(sample_shape) + self.batch_shape)
        return self.low + _const(self.low, u) * (self.high - self.low)

    def log_prob(self, value):
        v = _t(value, self.low)
        inside = (v._data >= self.low._data) & (v._data < self.high._data)
        lp = -(self.high - self.low).log()
        from .tensor import where

        return where(inside, lp, v.xp.asarray(-np.inf, dtype=lp.dtype))

    def entropy(self):
        return (self.high - self.low).log()


class Categorical(Distribution):
    """Over the last axis of ``probs`` (normalised) or ``logits`` (log-softmaxed)."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Categorical: pass either probs or logits, not both")
        if probs is not None:
            probs = _t(probs)
            self.probs = probs / probs.sum(-1, keepdim=True)
            eps = float(np.finfo(self.probs.dtype).eps)  # torch's clamp_probs
            self.logits = self.probs.clamp(eps, 1 - eps).log()
        else:
            logits = _t(logits)
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = self.logits.exp()
        self._num_events = self.probs.shape[-1]
        super().__init__(tuple(self.probs.shape[:-1]))

    @property
    def param_shape(self):
        return tuple(self.probs.shape)

    @property
    def mean(self):
        """nan (its values are labels), torch's (round 44: raised NotImplementedError, so a
        loop over distributions reading ``mean`` stopped at a Categorical)."""
        return _const(self.probs, self.probs.xp.full(self.batch_shape, np.nan,
                                                    dtype=self.probs.dtype))

    @property
    def variance(self):
        return self.mean

    @property
    def mode(self):
        return self.probs.argmax(-1)

    def sample(self, sample_shape=()):
        shape = _shape(sample_shape)
        xp = self.probs.xp  # the probabilities stay on their device: only the draws move
        p = self.probs._data.astype(np.float64).reshape(-1, self._num_events)
        n = int(np.prod(shape)) if shape else 1
        cdf = xp.cumsum(p / p.sum(1, keepdims=True), axis=1)
        u = xp.asarray(get_generator().random((n, p.shape[0])))  # the seeded host stream
        ids = xp.minimum((cdf[None] <= u[..., None]).sum(-1), self._num_events - 1)
        ids = ids.reshape(shape + self.batch_shape).astype(np.int64)
        return Tensor._make(ids, False, None, 0)

    def log_prob(self, value):
        v = value._data if isinstance(value, Tensor) else np.asarray(value)
        v = self.logits.xp.asarray(v).astype(np.int64)
        shape = np.broadcast_shapes(tuple(v.shape), self.batch_shape)
        logits = self.logits
        if tuple(logits.shape[:-1]) != shape:
            logits = logits.expand(*shape, self._num_events)
        idx = self.logits.xp.broadcast_to(v, shape)[..., None]
        return logits.gather(-1, idx).squeeze(-1)

    def entropy(self):
        lg = self.logits.clamp(min=float(np.finfo(self.logits.dtype).min))
        return -(lg * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        vals = np.arange(self._num_events).reshape((-1,) + (1,) * len(self.batch_shape))
        if expand:
            vals = np.broadcast_to(vals, (self._num_events,) + self.batch_shape)
        return Tensor(np.ascontiguousarray(vals), dtype=np.int64)


class Bernoulli(Distribution):
    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Bernoulli: pass either probs or logits, not both")
        if probs is not None:
            self.probs = _t(probs)
            eps = float(np.finfo(self.probs.dtype).eps)
            p = self.probs.clamp(eps, 1 - eps)
            self.logits = p.log() - (-p).log1p()
        else:
            self.logits = _t(logits)
            self.probs = self.logits.sigmoid()
        super().__init__(tuple(self.probs.shape))

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        u = get_generator().random(_shape(sample_shape) + self.batch_shape)
        return _const(self.probs, self.probs.xp.asarray(u) < self.probs._data)  # on its device

    def log_prob(self, value):
        v = _t(value, self.logits)
        z = self.logits
        return -(z.relu() - z * v + ((-z.abs()).exp() + 1.0).log())  # -BCE with logits

    def entropy(self):
        z = self.logits
        return z.relu() - z * self.probs + ((-z.abs()).exp() + 1.0).log()


class Independent(Distribution):
    """``base`` with its last ``reinterpreted_batch_ndims`` batch axes read as one event:
    ``log_prob`` and ``entropy`` sum over them."""

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, \
            int(reinterpreted_batch_ndims)
        k = self.reinterpreted_batch_ndims
        shape = base_distribution.batch_shape
        if k > len(shape):  # torch's refusal (skiff took the whole batch silently)
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution."
                             f"batch_shape), actual {k} vs {len(shape)}")
        super().__init__(shape[:len(shape) - k], shape[len(shape) - k:]
                         + base_distribution.event_shape)
        self.has_rsample = base_distribution.has_rsample

    def __getattr__(self, name):
        if name in ("mean", "variance", "stddev", "mode"):
            return getattr(self.base_dist, name)
        raise AttributeError(name)

    def _sum(self, t):
        k = self.reinterpreted_batch_ndims
        return t.sum(tuple(range(t.ndim - k, t.ndim))) if k else t

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def log_prob(self, value):
        return self._sum(self.base_dist.log_prob(value))

    def entropy(self):
        return self._sum(self.base_dist.entropy())


_KL: dict = {}


def register_kl(type_p, type_q):
    """torch's decorator: ``@register_kl(P, Q) def kl(p, q): ...``."""
    def deco(fn):
        _KL[(type_p, type_q)] = fn
        return fn
    return deco


def kl_divergence(p, q):
    """KL(p || q) in closed form, for the registered pairs; a subclass takes its parents'
    pair (torch's lookup: ``Chi2`` uses ``(Gamma, Gamma)``), the most specific first."""
    fn = _KL.get((type(p), type(q)))
    if fn is None:
        found = [(i + j, key) for key in _KL for i, cp in enumerate(type(p).__mro__)
                 for j, cq in enumerate(type(q).__mro__) if key == (cp, cq)]
        fn = _KL[min(found, key=lambda f: f[0])[1]] if found else None
    if fn is None:
        raise NotImplementedError(f"kl_divergence({type(p).__name__}, {type(q).__name__}): no "
                                  "closed form here; estimate it from samples "
                                  "(p.log_prob(x) - q.log_prob(x)).mean()")
    return fn(p, q)


@register_kl(Normal, Normal)
def _kl_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical(p, q):
    return (p.probs * (p.logits - q.logits)).sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli(p, q):
    def softplus(z):
        return z.relu() + ((-z.abs()).exp() + 1.0).log()
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    return t1 + t2


@register_kl(Independent, Independent)
def _kl_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence of Independent: the event dims differ")
    return p._sum(kl_divergence(p.base_dist, q.base_dist))


def _size(shape) -> str:
    return f"torch.Size({list(shape)})"


def torch_str(value) -> str:
    """torch's ``f"{tensor}"``: a 0-d tensor's number (``-1.0``), else ``tensor([ 1., -1.])``
    (torch's print of a float32/float64/int64 host tensor; the dtype is not written)."""
    a = np.asarray(to_numpy(value._data) if isinstance(value, Tensor) else value)
    if a.ndim == 0:
        return str(a.item())
    return "tensor(" + np.array2string(a, separator=", ", prefix="tensor(") + ")"
