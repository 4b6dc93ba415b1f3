"""torch's ``TransformedDistribution``, ``LowRankMultivariateNormal`` and the common
``torch.distributions.transforms`` (``ExpTransform``, ``AffineTransform``,
``SigmoidTransform``, ``TanhTransform``, ``SoftplusTransform``, ``PowerTransform``,
``ComposeTransform``), for normalizing flows, squashed-Gaussian policies (SAC's
``tanh(Normal)``) and bounded priors ported from torch.

``log_prob(y)`` is torch's: walking the transforms backwards, ``x = t.inv(y)`` and the
log-determinant ``t.log_abs_det_jacobian(x, y)`` summed over the event dims, then the base's
``log_prob``; the formulas are torch's (the sigmoid clamped to ``[tiny, 1 - eps]``, tanh's
``2 (log 2 - x - softplus(-2x))``). Differentiable through the tensor ops.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from .distributions import Distribution, _AtLoc, _shape, _t
from .tensor import Tensor

__all__ = ["TransformedDistribution", "LowRankMultivariateNormal", "Transform", "ExpTransform",
           "AffineTransform", "SigmoidTransform", "TanhTransform", "SoftplusTransform",
           "PowerTransform", "ComposeTransform", "transforms"]


def _softplus(x):
    from .nn.functional.extra import softplus
    return softplus(x)


def _sum_rightmost(v, dims):
    if dims <= 0 or not isinstance(v, Tensor):
        return v
    return v.sum(tuple(range(-dims, 0)))


class Transform:
    """Base: ``t(x)``, ``t.inv(y)``, ``t.log_abs_det_jacobian(x, y)``; elementwise (event
    dim 0) unless an ``event_dim`` is given.

    As torch's for a user's subclass (a flow's coupling layer): ``__init__(cache_size=0)``
    (1 keeps the last ``(x, y)``, so ``log_prob`` of an ``rsample`` gets ``x`` back without
    an inverse, as an inverse autoregressive flow needs), ``domain``/``codomain`` declared as
    constraints give ``event_dim`` (torch's error when they differ), ``t.inv.inv is t``,
    ``with_cache``."""

    bijective = True
    sign = 1
    _cache_size = 0
    _cached_x_y = (None, None)

    def __init__(self, cache_size: int = 0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = (None, None)
        self._inv = None

    def _declares_domains(self) -> bool:
        cls = type(self)
        return cls.domain is not Transform.domain or cls.codomain is not Transform.codomain

    @property
    def event_dim(self):
        own = self.__dict__.get("_event_dim")
        if own is not None:
            return own
        if self._declares_domains():  # a user's subclass: torch's rule
            d, c = self.domain.event_dim, self.codomain.event_dim
            if d == c:
                return d
            raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")
        return 0

    @event_dim.setter
    def event_dim(self, value):
        self.__dict__["_event_dim"] = value

    def _dims(self):
        """(domain, codomain) event dims: ``event_dim`` both, unless the shape changes."""
        if self._declares_domains():
            return self.domain.event_dim, self.codomain.event_dim
        return self.event_dim, self.event_dim

    @property
    def domain(self):
        return SimpleNamespace(event_dim=self._dims()[0])

    @property
    def codomain(self):
        return SimpleNamespace(event_dim=self._dims()[1])

    @property
    def inv(self):
        inv = self.__dict__.get("_inv")
        if inv is None:
            inv = _Inverse(self)
            self.__dict__["_inv"] = inv
        return inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __call__(self, x):
        if not self._cache_size:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y):
        if not self._cache_size:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = (x, y)
        return x

    def _call(self, x):  # pragma: no cover - abstract
        raise NotImplementedError

    def _inverse(self, y):  # pragma: no cover - abstract
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):  # pragma: no cover - abstract
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return f"{type(self).__name__}()"


class _Inverse(Transform):
    def __init__(self, t):
        self._t = t

    @property
    def event_dim(self):
        return self._t.event_dim

    @property
    def inv(self):
        return self._t

    def _dims(self):
        return self._t._dims()[::-1]

    def __call__(self, y):
        return self._t._inv_call(y)

    def log_abs_det_jacobian(self, x, y):
        return -self._t.log_abs_det_jacobian(y, x)


class ExpTransform(Transform):
    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class AffineTransform(Transform):
    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        self.loc, self.scale, self.event_dim = loc, scale, int(event_dim)

    @property
    def sign(self):
        s = self.scale
        return (1 if s > 0 else -1) if isinstance(s, (int, float)) else s.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = tuple(x.shape)
        s = self.scale
        if isinstance(s, (int, float)):
            res = Tensor._make(x.xp.full(shape, math.log(abs(s)), dtype=x.dtype), False, None, 0)
        else:
            res = _t(s, x).abs().log()
        if self.event_dim:
            res = res.reshape(tuple(res.shape)[:-self.event_dim] + (-1,)).sum(-1)
            shape = shape[:-self.event_dim]
        return res.expand(*shape) if tuple(res.shape) != shape else res


class SigmoidTransform(Transform):
    def _call(self, x):
        fi = np.finfo(x.dtype)
        return x.sigmoid().clamp(float(fi.tiny), 1.0 - float(fi.eps))

    def _inverse(self, y):
        fi = np.finfo(y.dtype)
        y = y.clamp(float(fi.tiny), 1.0 - float(fi.eps))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -_softplus(-x) - _softplus(x)


class TanhTransform(Transform):
    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return 0.5 * (y.log1p() - (-y).log1p())  # atanh

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - _softplus(-2.0 * x))


class SoftplusTransform(Transform):
    def _call(self, x):
        return _softplus(x)

    def _inverse(self, y):
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x, y):
        return -_softplus(-x)


class PowerTransform(Transform):
    def __init__(self, exponent, cache_size=0):
        self.exponent = exponent

    def _call(self, x):
        return x ** self.exponent

    def _inverse(self, y):
        return y ** (1.0 / self.exponent) if isinstance(self.exponent, (int, float)) else \
            y ** self.exponent.reciprocal()

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()


class ComposeTransform(Transform):
    def __init__(self, parts, cache_size=0):
        self.parts = list(parts)
        self.event_dim = max((p.event_dim for p in self.parts), default=0)

    def _dims(self):
        """torch's: each end's event dim carried through the parts."""
        if not self.parts:
            return 0, 0
        dom = self.parts[-1]._dims()[1]
        for p in reversed(self.parts):
            pd, pc = p._dims()
            dom = max(dom + pd - pc, pd)
        cod = self.parts[0]._dims()[0]
        for p in self.parts:
            pd, pc = p._dims()
            cod = max(cod + pc - pd, pc)
        return dom, cod

    def _call(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def _inverse(self, y):
        for p in reversed(self.parts):
            y = p.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return x * 0
        total, event_dim = 0, self._dims()[0]
        for p in self.parts:
            y_ = p(x)
            pd, pc = p._dims()
            total = total + _sum_rightmost(p.log_abs_det_jacobian(x, y_), event_dim - pd)
            x, event_dim = y_, event_dim + pc - pd
        return total


class TransformedDistribution(Distribution):
    """torch's ``TransformedDistribution(base_distribution, transforms)``."""

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        if not all(isinstance(t, Transform) for t in transforms):
            raise ValueError(f"transforms must be a Transform or a list of Transforms, got "
                             f"{transforms!r}")
        self.base_dist, self.transforms = base_distribution, list(transforms)
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event = len(base_distribution.event_shape)
        dom, cod = ComposeTransform(self.transforms)._dims()
        event_dim = cod + max(base_event - dom, 0)  # torch's
        shape = base_shape
        for t in self.transforms:
            shape = tuple(t.forward_shape(shape))
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:])

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(_shape(sample_shape))
        for t in self.transforms:
            x = t(x)
        return x

    def sample(self, sample_shape=()):
        from .autograd import no_grad

        with no_grad():
            x = self.base_dist.sample(_shape(sample_shape))
            for t in self.transforms:
                x = t(x)
        return x.detach()

    def log_prob(self, value):
        event_dim = len(self.event_shape)
        lp = 0.0
        y = value
        for t in reversed(self.transforms):  # torch's: the event dim carried back
            x = t.inv(y)
            dom, cod = t._dims()
            event_dim += dom - cod
            lp = lp - _sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - dom)
            y = x
        return lp + _sum_rightmost(self.base_dist.log_prob(y),
                                   event_dim - len(self.base_dist.event_shape))

    def __repr__(self):
        return f"TransformedDistribution({self.base_dist!r}, {self.transforms!r})"


transforms = SimpleNamespace(Transform=Transform, ExpTransform=ExpTransform,
                             AffineTransform=AffineTransform,
                             SigmoidTransform=SigmoidTransform, TanhTransform=TanhTransform,
                             SoftplusTransform=SoftplusTransform,
                             PowerTransform=PowerTransform, ComposeTransform=ComposeTransform)


class LowRankMultivariateNormal(_AtLoc, Distribution):
    """torch's ``LowRankMultivariateNormal(loc, cov_factor, cov_diag)``: covariance
    ``W W^T + diag(D)`` through the capacitance ``I + W^T D^-1 W`` (Woodbury; its Cholesky
    factor gives the log-determinant and the Mahalanobis term), as torch's."""

    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        loc = _t(loc)
        cov_factor, cov_diag = _t(cov_factor, loc), _t(cov_diag, loc)
        if loc.ndim < 1 or cov_factor.ndim < 2 or cov_diag.ndim < 1:
            raise ValueError("LowRankMultivariateNormal needs loc (..., n), cov_factor "
                             "(..., n, rank) and cov_diag (..., n)")
        n = loc.shape[-1]
        if cov_factor.shape[-2] != n or cov_diag.shape[-1] != n:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m and "
                             f"cov_diag a batch of vectors of size {n}")
        batch = np.broadcast_shapes(tuple(loc.shape[:-1]), tuple(cov_factor.shape[:-2]),
                                    tuple(cov_diag.shape[:-1]))
        self.loc = loc.expand(*(batch + (n,)))
        self.cov_factor = cov_factor.expand(*(batch + tuple(cov_factor.shape[-2:])))
        self.cov_diag = cov_diag.expand(*(batch + (n,)))
        super().__init__(batch, (n,))
        from .ops_linalg import cholesky
        w = self.cov_factor
        wt_dinv = w.transpose(-1, -2) / self.cov_diag.unsqueeze(-2)
        k = w.shape[-1]
        eye = Tensor._make(w.xp.eye(k, dtype=w.dtype), False, None, 0)
        self._capacitance_tril = cholesky(eye + wt_dinv @ w)

    @property
    def variance(self):
        return (self.cov_factor ** 2).sum(-1) + self.cov_diag

    @property
    def covariance_matrix(self):
        return self.cov_factor @ self.cov_factor.transpose(-1, -2) + self.cov_diag.diag_embed()

    def _log_det(self):
        from .ops_linalg import diagonal
        return 2 * diagonal(self._capacitance_tril).log().sum(-1) + self.cov_diag.log().sum(-1)

    def log_prob(self, value):
        from .ops_linalg import solve_triangular
        diff = _t(value, self.loc) - self.loc
        w, d = self.cov_factor, self.cov_diag
        wt_dinv_x = ((w / d.unsqueeze(-1)) * diff.unsqueeze(-1)).sum(-2)  # (..., rank)
        term1 = (diff ** 2 / d).sum(-1)
        lt = self._capacitance_tril
        shape = np.broadcast_shapes(tuple(wt_dinv_x.shape[:-1]), tuple(lt.shape[:-2]))
        lt_b = lt.expand(*(shape + tuple(lt.shape[-2:])))
        rhs = wt_dinv_x.expand(*(shape + tuple(wt_dinv_x.shape[-1:]))).unsqueeze(-1)
        term2 = (solve_triangular(lt_b, rhs, upper=False).squeeze(-1) ** 2).sum(-1)
        n = self.event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + self._log_det() + term1 - term2)

    def entropy(self):
        n = self.event_shape[0]
        return 0.5 * (n * (1.0 + math.log(2 * math.pi)) + self._log_det())

    def rsample(self, sample_shape=()):
        from .random import get_generator
        shape = _shape(sample_shape) + self.batch_shape
        w = self.cov_factor
        g = get_generator()
        ew = Tensor._make(w.xp.asarray(g.standard_normal(shape + (w.shape[-1],)),
                                       dtype=w.dtype), False, None, 0)
        ed = Tensor._make(w.xp.asarray(g.standard_normal(shape + self.event_shape),
                                       dtype=w.dtype), False, None, 0)
        return self.loc + (w * ew.unsqueeze(-2)).sum(-1) + self.cov_diag.sqrt() * ed
