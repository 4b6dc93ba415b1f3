"""torch 2.13's closed-form KL divergences that skiff lacked (round 41): every pair of
``torch.distributions.kl`` beyond the same-family ones registered with the distributions
(``Binomial``, ``Cauchy``, ``ContinuousBernoulli``, ``Geometric``, ``OneHotCategorical``,
``Pareto``, ``TransformedDistribution`` and the low-rank Gaussians with themselves, and the
cross-family pairs: ``(Normal, Laplace)``, ``(Beta, Normal)``, ``(Uniform, Gamma)``, ...), in
torch's formulas, and the pairs whose supports differ (``(Normal, Uniform)``,
``(Gamma, Beta)``, ...): infinity, as torch's. Imported by :mod:`skiff.distributions`."""

from __future__ import annotations

import math

from .distributions import Bernoulli, Normal, Uniform, kl_divergence
from .distributions import register_kl as _register
from .distributions_r29 import Beta, Exponential, Gamma, Laplace, MultivariateNormal, _kl_mvn
from .distributions_r32 import (
    Binomial,
    Cauchy,
    Geometric,
    LogNormal,
    OneHotCategorical,
    Poisson,
)
from .distributions_r35 import LowRankMultivariateNormal, TransformedDistribution
from .distributions_r37 import ContinuousBernoulli, Gumbel, HalfCauchy, Pareto
from .tensor import where

__all__: list = []

_EULER = 0.57721566490153286060


def register_kl(*pairs):
    """``@register_kl((P, Q), (P2, Q2), ...)``: one formula for several pairs."""
    def deco(fn):
        for p, q in pairs:
            _register(p, q)(fn)
        return fn
    return deco


def _inf_where(cond, x):
    return where(cond, math.inf, x)


def _infinite_like(t):
    return t.new_full(tuple(t.shape), math.inf)  # torch's full_like: no graph


def _xlogx(t):
    return t.xlogy(t)  # 0 at 0


def _lb(d):
    return d.support.lower_bound


def _ub(d):
    return d.support.upper_bound


def _softplus(z):
    return z.relu() + (-z.abs()).exp().log1p()


# ---- same families ------------------------------------------------------------------------

@register_kl((Binomial, Binomial))
def _kl_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is "
                                  "not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())
    return _inf_where(p.total_count > q.total_count, kl)


@register_kl((ContinuousBernoulli, ContinuousBernoulli))
def _kl_cb(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._log_norm() + (-p.probs).log1p()
    t3 = -q._log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


@register_kl((Geometric, Geometric))
def _kl_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl((OneHotCategorical, OneHotCategorical))
def _kl_onehot(p, q):
    return kl_divergence(p._categorical, q._categorical)


@register_kl((Pareto, Pareto))
def _kl_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(_lb(p) < _lb(q), result)


@register_kl((Cauchy, Cauchy))
def _kl_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl((TransformedDistribution, TransformedDistribution))
def _kl_transformed(p, q):
    """torch's: the bases' KL when both push them through equal transforms, summed over the
    event axes the transforms add (round 44: ``LogisticNormal`` pairs were refused, their
    stick-breaking transforms compared by identity, and nothing was summed)."""
    if len(p.transforms) != len(q.transforms) or p.event_shape != q.event_shape or \
            not all(_same_transform(a, b) for a, b in zip(p.transforms, q.transforms)):
        raise NotImplementedError(f"kl_divergence({type(p).__name__}, {type(q).__name__}): "
                                  "the transforms differ")
    kl = kl_divergence(p.base_dist, q.base_dist)
    extra = len(p.event_shape) - len(p.base_dist.event_shape)
    return kl.sum(tuple(range(-extra, 0))) if extra > 0 else kl


def _same_transform(a, b):
    """torch's ``Transform.__eq__``: the same kind with the same parameters."""
    from .tensor import Tensor

    if a is b:
        return True
    if type(a) is not type(b):
        return False
    va, vb = vars(a), vars(b)
    if va.keys() != vb.keys():
        return False
    for k, x in va.items():
        y = vb[k]
        if isinstance(x, Tensor) or isinstance(y, Tensor):
            if not (isinstance(x, Tensor) and isinstance(y, Tensor)) or \
                    tuple(x.shape) != tuple(y.shape) or not bool((x == y).all()):
                return False
        elif callable(x) or k.startswith("_"):
            continue  # caches and bound helpers
        elif x != y:
            return False
    return True


# round 44 (h12): torch's LogNormal and HalfCauchy are transformed distributions, their KL
# the bases' (here they are their own classes: refused before)
@register_kl((LogNormal, LogNormal), (HalfCauchy, HalfCauchy))
def _kl_by_base(p, q):
    return kl_divergence(p.base_dist, q.base_dist)


def _as_mvn(d):
    if isinstance(d, MultivariateNormal):
        return d
    return MultivariateNormal(d.loc, covariance_matrix=d.covariance_matrix)


@register_kl((LowRankMultivariateNormal, LowRankMultivariateNormal),
             (MultivariateNormal, LowRankMultivariateNormal),
             (LowRankMultivariateNormal, MultivariateNormal))
def _kl_lowrank(p, q):
    """torch's low-rank KLs are the Gaussian KL of the full covariances (computed here
    through them: equal to 1e-15 at the sizes a low-rank factor is used for)."""
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")
    return _kl_mvn(_as_mvn(p), _as_mvn(q))


# ---- different families -------------------------------------------------------------------

@register_kl((Bernoulli, Poisson))
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl((Beta, ContinuousBernoulli), (Uniform, ContinuousBernoulli))
def _kl_to_cb(p, q):
    result = -p.entropy() - p.mean * q.logits - (-q.probs).log1p() - q._log_norm()
    if isinstance(p, Uniform):
        return _inf_where((p.high >= _ub(q)) | (p.low <= _lb(q)), result)
    return result


@register_kl((Beta, Exponential))
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * (p.concentration1 / (p.concentration1
                                                                      + p.concentration0))


@register_kl((Beta, Gamma))
def _kl_beta_gamma(p, q):
    a, b = p.concentration1, p.concentration0
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (a.digamma() - (a + b).digamma())
    return -p.entropy() + t2 - t3 + q.rate * a / (a + b)


@register_kl((Beta, Normal))
def _kl_beta_normal(p, q):
    a, b = p.concentration1, p.concentration0
    e = a / (a + b)
    var = q.scale.pow(2)
    t2 = 0.5 * (var * 2 * math.pi).log()
    t3 = (e * (1 - e) / (a + b + 1) + e.pow(2)) * 0.5
    return -p.entropy() + t2 + (t3 - q.loc * e + q.loc.pow(2) * 0.5) / var


@register_kl((Beta, Uniform))
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where((q.low > _lb(p)) | (q.high < _ub(p)), result)


@register_kl((ContinuousBernoulli, Exponential))
def _kl_cb_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl((ContinuousBernoulli, Normal))
def _kl_cb_normal(p, q):
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).pow(2)) + q.scale.log()
    t3 = (p.variance + p.mean.pow(2) - 2.0 * q.loc * p.mean) / (2.0 * q.scale.pow(2))
    return -p.entropy() + t2 + t3


@register_kl((ContinuousBernoulli, Uniform))
def _kl_cb_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where((q.low >= _lb(p)) | (q.high <= _ub(p)), result)


@register_kl((Exponential, Gamma))
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    return (-q.concentration * ratio.log() + ratio + q.concentration.lgamma()
            + q.concentration * _EULER - (1 + _EULER))


@register_kl((Exponential, Gumbel))
def _kl_exponential_gumbel(p, q):
    prod = p.rate * q.scale
    ratio = q.loc / q.scale
    return prod.log() - 1 - ratio + ratio.exp() * prod / (prod + 1) + prod.reciprocal()


@register_kl((Exponential, Normal))
def _kl_exponential_normal(p, q):
    var = q.scale.pow(2)
    r2 = p.rate.pow(2)
    t1 = 0.5 * (r2 * var * 2 * math.pi).log()
    return t1 - 1 + (r2.reciprocal() - q.loc / p.rate + q.loc.pow(2) * 0.5) / var


@register_kl((Gamma, Exponential))
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl((Gamma, Gumbel))
def _kl_gamma_gumbel(p, q):
    c = p.concentration
    prod = p.rate * q.scale
    ratio = q.loc / q.scale
    t1 = (c - 1) * c.digamma() - c.lgamma() - c
    t2 = prod.log() + c / prod
    t3 = ratio.exp() * (1 + prod.reciprocal()).pow(-c) - ratio
    return t1 + t2 + t3


@register_kl((Gamma, Normal))
def _kl_gamma_normal(p, q):
    c = p.concentration
    var = q.scale.pow(2)
    b2 = p.rate.pow(2)
    t1 = 0.5 * (b2 * var * 2 * math.pi).log() - c - c.lgamma()
    t2 = 0.5 * (c.pow(2) + c) / b2
    return t1 + (c - 1) * c.digamma() + (t2 - q.loc * c / p.rate + 0.5 * q.loc.pow(2)) / var


@register_kl((Gumbel, Normal))
def _kl_gumbel_normal(p, q):
    r = p.scale / q.scale
    t1 = (r / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * r * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * _EULER - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (_EULER + 1)


@register_kl((Laplace, Normal))
def _kl_laplace_normal(p, q):
    var = q.scale.pow(2)
    r = p.scale.pow(2) / var
    t1 = 0.5 * (2 * r / math.pi).log()
    return -t1 + r + (0.5 * p.loc.pow(2) - p.loc * q.loc + 0.5 * q.loc.pow(2)) / var - 1


@register_kl((Normal, Gumbel))
def _kl_normal_gumbel(p, q):
    m = p.loc / q.scale
    v = (p.scale / q.scale).pow(2)
    ratio = q.loc / q.scale
    t3 = (-m + 0.5 * v + ratio).exp()
    return -v.log() * 0.5 + m - ratio + t3 - 0.5 * (1 + math.log(2 * math.pi))


@register_kl((Normal, Laplace))
def _kl_normal_laplace(p, q):
    d = p.loc - q.loc
    r = d / p.scale
    t1 = (p.scale / q.scale).log()
    t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * r.pow(2)).exp()
    t3 = d * (math.sqrt(0.5) * r).erf()
    return -t1 + (t2 + t3) / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


@register_kl((Pareto, Exponential))
def _kl_pareto_exponential(p, q):
    prod = p.scale * q.rate
    result = (p.alpha / prod).log() - p.alpha.reciprocal() + p.alpha * prod / (p.alpha - 1) - 1
    return _inf_where(p.alpha <= 1, result)


@register_kl((Pareto, Gamma))
def _kl_pareto_gamma(p, q):
    common = p.scale.log() + p.alpha.reciprocal()
    t1 = p.alpha.log() - common
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * common
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    return _inf_where(p.alpha <= 1, t1 + t2 + t3 + t4 - 1)


@register_kl((Pareto, Normal))
def _kl_pareto_normal(p, q):
    var = 2 * q.scale.pow(2)
    common = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common - q.loc).pow(2)
    return _inf_where(p.alpha <= 2, t1 - p.alpha.reciprocal() + (t3 + t4) / var - 1)


@register_kl((Uniform, Beta))
def _kl_uniform_beta(p, q):
    w = p.high - p.low
    t2 = (q.concentration1 - 1) * (_xlogx(p.high) - _xlogx(p.low) - w) / w
    t3 = (q.concentration0 - 1) * (_xlogx(1 - p.high) - _xlogx(1 - p.low) + w) / w
    t4 = (q.concentration1.lgamma() + q.concentration0.lgamma()
          - (q.concentration1 + q.concentration0).lgamma())
    result = t3 + t4 - w.log() - t2
    return _inf_where((p.high > _ub(q)) | (p.low < _lb(q)), result)


@register_kl((Uniform, Exponential))
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return _inf_where(p.low < _lb(q), result)


@register_kl((Uniform, Gamma))
def _kl_uniform_gamma(p, q):
    w = p.high - p.low
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_xlogx(p.high) - _xlogx(p.low) - w) / w
    t4 = q.rate * (p.high + p.low) / 2
    return _inf_where(p.low < _lb(q), -w.log() + t2 + t3 + t4)


@register_kl((Uniform, Gumbel))
def _kl_uniform_gumbel(p, q):
    common = q.scale / (p.high - p.low)
    hi = (p.high - q.loc) / q.scale
    lo = (p.low - q.loc) / q.scale
    return common.log() + 0.5 * (hi + lo) - common * ((-hi).exp() - (-lo).exp())


@register_kl((Uniform, Normal))
def _kl_uniform_normal(p, q):
    w = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / w).log()
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (w.pow(2) / 12 + t3) / q.scale.pow(2)


@register_kl((Uniform, Pareto))
def _kl_uniform_pareto(p, q):
    w = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * w).log()
    t2 = (_xlogx(p.high) - _xlogx(p.low) - w) / w
    return _inf_where(p.low < _lb(q), t2 * (q.alpha + 1) - t1)


# ---- supports that differ: torch's infinity -----------------------------------------------

def _infinite(first):
    def fn(p, q):
        return _infinite_like(first(p))
    return fn


for _p, _qs, _first in (
        (Beta, (Pareto,), lambda p: p.concentration1),
        (ContinuousBernoulli, (Pareto,), lambda p: p.probs),
        (Exponential, (Beta, ContinuousBernoulli, Pareto, Uniform), lambda p: p.rate),
        (Gamma, (Beta, ContinuousBernoulli, Pareto, Uniform), lambda p: p.concentration),
        (Gumbel, (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform),
         lambda p: p.loc),
        (Laplace, (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform),
         lambda p: p.loc),
        (Normal, (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform),
         lambda p: p.loc),
        (Pareto, (Beta, ContinuousBernoulli, Uniform), lambda p: p.scale),
        (Poisson, (Bernoulli, Binomial), lambda p: p.rate)):
    register_kl(*[(_p, _q) for _q in _qs])(_infinite(_first))
