"""Round 38: the rest of torch's ``distributions``: ``LKJCholesky`` (the onion method),
``Wishart`` (Bartlett's decomposition, differentiable in ``df`` and the scale), ``InverseGamma``,
``GeneralizedPareto``, ``OneHotCategoricalStraightThrough``, and the transforms torch has
and skiff lacked (``AbsTransform``, ``SoftmaxTransform``, ``LowerCholeskyTransform``,
``PositiveDefiniteTransform``, ``CorrCholeskyTransform``, ``ReshapeTransform``,
``IndependentTransform``, ``CumulativeDistributionTransform``, ``identity_transform``).

Densities, entropies and moments are torch's formulas of differentiable ops; draws come from
skiff's seeded generator (torch's law, not torch's numbers). Validation as
:mod:`distributions_r36`'s (torch's constraints, ``validate_args``)."""

from __future__ import annotations

import math

import numpy as np

from . import distributions_r36 as _v
from . import ops_linalg as _la
from .distributions import Distribution, _const, _shape, _t
from .distributions_r29 import Beta, Gamma, _bcast
from .distributions_r32 import OneHotCategorical
from .distributions_r35 import (
    ComposeTransform,
    PowerTransform,
    Transform,
    TransformedDistribution,
    _sum_rightmost,
    transforms,
)
from .distributions_r37 import Chi2, _fi, _inf_like, _uniform
from .random import get_generator
from .tensor import Tensor, cat, where

__all__ = ["LKJCholesky", "Wishart", "InverseGamma", "GeneralizedPareto",
           "OneHotCategoricalStraightThrough", "AbsTransform", "SoftmaxTransform",
           "LowerCholeskyTransform", "PositiveDefiniteTransform", "CorrCholeskyTransform",
           "ReshapeTransform", "IndependentTransform", "CumulativeDistributionTransform",
           "identity_transform"]

_LOG_2 = math.log(2.0)


def _mT(a):
    return a.swapaxes(-1, -2)


def _diag(a):
    return _la.diagonal(a, dim1=-2, dim2=-1)


def _cholesky_solve(b, L):
    """torch's ``cholesky_solve(b, L)``: ``(L L^T)^-1 b`` by two triangular solves."""
    z = _la.solve_triangular(L, b, upper=False)
    return _la.solve_triangular(_mT(L), z, upper=True)


def _mvdigamma(x, p):
    """torch's ``_mvdigamma``: ``sum_i digamma(x - i / 2)``, i < p."""
    return (x.unsqueeze(-1) - _const(x, np.arange(p) / 2.0)).digamma().sum(-1)


def _tril_index(n, diag):
    """Row-major (rows, cols) of the entries at or below ``diag`` of an n x n matrix."""
    r = np.arange(n)
    return np.nonzero(r[None, :] < r[:, None] + (diag + 1))


def _vec_to_tril(vec, diag=0):
    """torch's ``vec_to_tril_matrix``, differentiable: a gather from the vector with a zero
    put in front."""
    m = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > float(np.finfo(vec.dtype).eps):
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as the "
                         "lower triangular part of a square D x D matrix.")
    n = round(n)
    idx = np.zeros((n, n), dtype=np.int64)
    idx[_tril_index(n, diag)] = np.arange(1, m + 1)
    padded = cat([_const(vec, np.zeros(tuple(vec.shape[:-1]) + (1,))), vec], -1)
    return padded[..., idx]


def _tril_to_vec(mat, diag=0):
    """torch's ``tril_matrix_to_vec``: the entries at or below ``diag``, row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = _tril_index(n, diag)
    return mat.reshape(tuple(mat.shape[:-2]) + (n * n,))[..., rows * n + cols]


class LKJCholesky(Distribution):
    """torch's ``LKJCholesky(dim, concentration)``: Cholesky factors of correlation matrices
    with density ``det(L L^T)^(eta - 1)``; ``log_prob`` with torch's normalizer, ``sample`` by
    the onion method in torch's vectorized form with the paper's Beta shapes (torch's draw
    rows 3 and on from the wrong ones)."""

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found "
                             f"dim={dim}.")
        self.dim = int(dim)
        self.concentration = _t(concentration)
        marginal = self.concentration + 0.5 * (self.dim - 2)
        offset = np.concatenate([[0.0], np.arange(self.dim - 1, dtype=np.float64)])
        # row k's squared off-diagonal norm ~ Beta(k / 2, eta + (dim - 1 - k) / 2) (the onion
        # method, LKJ 2009 Sec. 3.2); torch's ``offset + 0.5`` gives rows k >= 2 too much
        # correlation (E r^2 of row 3 at eta 1, dim 3: 0.30 where the LKJ marginal has 1/4)
        self._beta = Beta(_const(self.concentration, 0.5 * (offset + 1)),
                          marginal.unsqueeze(-1) - _const(self.concentration, 0.5 * offset),
                          validate_args=False)
        super().__init__(tuple(self.concentration.shape), (self.dim, self.dim))

    def sample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape + self.event_shape
        y = np.asarray(self._beta.sample(sample_shape).numpy())[..., None]
        u = np.tril(get_generator().standard_normal(shape), -1)
        with np.errstate(invalid="ignore"):
            u = u / np.linalg.norm(u, axis=-1, keepdims=True)
        u[..., 0, :] = 0.0
        w = np.sqrt(y) * u
        tiny = _fi(self.concentration)[0]
        d = np.sqrt(np.maximum(1 - (w * w).sum(-1), tiny))
        idx = np.arange(self.dim)
        w[..., idx, idx] += d
        return _const(self.concentration, w)

    def log_prob(self, value):
        value = _t(value, self.concentration)
        diag = _diag(value)[..., 1:]
        order = _const(self.concentration, np.arange(2, self.dim + 1, dtype=np.float64))
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = alpha.lgamma() * dm1
        numerator = (alpha - 0.5).mvlgamma(dm1)
        return unnormalized - (0.5 * dm1 * math.log(math.pi) + numerator - denominator)


class Wishart(Distribution):
    """torch's ``Wishart(df, covariance_matrix= | precision_matrix= | scale_tril=)``:
    ``log_prob``, ``entropy``, ``mean``/``mode``/``variance``, ``rsample`` by Bartlett's
    decomposition (chi-square diagonal, normal lower triangle), differentiable in ``df``
    (through ``Chi2.rsample``) and in the scale."""

    has_rsample = True

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        name, param = given[0][0], _t(given[0][1])
        if param.ndim < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        p = int(param.shape[-1])
        if isinstance(df, Tensor):
            batch = tuple(np.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(*batch) if tuple(df.shape) != batch else df
        else:
            batch = tuple(param.shape[:-2])
            self.df = _const(param, df)
        if bool((np.asarray(self.df.detach().numpy()) <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        if name == "scale_tril":
            L = param
        elif name == "covariance_matrix":
            L = _la.cholesky(param)
        else:
            L = _la.cholesky(_la.inv(param))
        self._given = (name, param)
        self._L = L  # unbroadcast, as torch's _unbroadcasted_scale_tril
        super().__init__(batch, (p, p))
        df = self.df if self.df.dtype == L.dtype else self.df.to(L.dtype)  # torch promotes
        self._chi2 = Chi2(df.unsqueeze(-1) - _const(L, np.arange(p, dtype=np.float64)),
                          validate_args=False)

    def _full(self, m):
        return m.expand(*self.batch_shape, *self.event_shape) if \
            tuple(m.shape) != self.batch_shape + self.event_shape else m

    def _as_given(self, name, compute):
        return self._full(self._given[1] if self._given[0] == name else compute())

    @property
    def scale_tril(self):
        return self._as_given("scale_tril", lambda: self._L)

    @property
    def covariance_matrix(self):
        return self._as_given("covariance_matrix", lambda: self._L @ _mT(self._L))

    @property
    def precision_matrix(self):
        p = self.event_shape[-1]
        return self._as_given("precision_matrix",
                              lambda: _cholesky_solve(_const(self._L, np.eye(p)), self._L))

    def _df(self):
        return self.df.reshape(self.batch_shape + (1, 1))

    @property
    def mean(self):
        return self._df() * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.event_shape[-1] - 1
        factor = where(factor._data <= 0, factor.xp.asarray(np.nan, dtype=factor.dtype), factor)
        return factor.reshape(self.batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        d = _diag(V)
        return self._df() * (V * V + d.unsqueeze(-1) * d.unsqueeze(-2))

    def rsample(self, sample_shape=()):
        sample_shape = _shape(sample_shape)
        p = self.event_shape[-1]
        eps = float(np.finfo(self.df.dtype).eps)
        noise = self._chi2.rsample(sample_shape).sqrt().clamp(min=eps).diag_embed()
        rows, cols = _tril_index(p, -1)
        low = np.zeros(sample_shape + self.batch_shape + (p, p))
        low[..., rows, cols] = get_generator().standard_normal(
            sample_shape + self.batch_shape + (p * (p - 1) // 2,))
        chol = self._L @ (noise + _const(self._L, low))
        return chol @ _mT(chol)

    def _log_norm_part(self):
        p = self.event_shape[-1]
        return p * _LOG_2 / 2 + _diag(self._L).log().sum(-1)

    def log_prob(self, value):
        value = _t(value, self.df)
        nu, p = self.df, self.event_shape[-1]
        return (-nu * self._log_norm_part() - (nu / 2).mvlgamma(p)
                + (nu - p - 1) / 2 * _la.slogdet(value).logabsdet
                - _diag(_cholesky_solve(value, self._L)).sum(-1) / 2)

    def entropy(self):
        nu, p = self.df, self.event_shape[-1]
        return ((p + 1) * self._log_norm_part() + (nu / 2).mvlgamma(p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)


class InverseGamma(TransformedDistribution):
    """torch's ``InverseGamma(concentration, rate)``: ``1 / Gamma(concentration, rate)``."""

    def __init__(self, concentration, rate, validate_args=None):
        super().__init__(Gamma(concentration, rate, validate_args=False), PowerTransform(-1.0))

    concentration = property(lambda self: self.base_dist.concentration)
    rate = property(lambda self: self.base_dist.rate)

    @property
    def mean(self):
        a = self.concentration
        return where(a._data > 1, self.rate / (a - 1), _inf_like(a))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        a = self.concentration
        return where(a._data > 2, self.rate ** 2 / ((a - 1) ** 2 * (a - 2)), _inf_like(a))

    def entropy(self):
        a = self.concentration
        return a + self.rate.log() + a.lgamma() - (1 + a) * a.digamma()


class GeneralizedPareto(Distribution):
    """torch's ``GeneralizedPareto(loc, scale, concentration)`` (TensorFlow Probability's
    formulas: the ``concentration == 0`` branch is the exponential one, chosen by
    ``isclose``)."""

    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        like = next((v for v in (loc, scale, concentration) if isinstance(v, Tensor)), None)
        (self.loc, self.scale, self.concentration), shape = _bcast(
            _t(loc, like), _t(scale, like), _t(concentration, like))
        super().__init__(shape)

    def _safe(self):
        c = self.concentration
        eq_zero = np.isclose(np.asarray(c._data), 0.0)
        return eq_zero, where(eq_zero, c.xp.asarray(1.0, dtype=c.dtype), c)

    def rsample(self, sample_shape=()):
        return self.icdf(_uniform(self.loc, _shape(sample_shape) + self.batch_shape, 0.0,
                                  1.0))

    def _z(self, x):
        return (_t(x, self.loc) - self.loc) / self.scale

    def log_prob(self, value):
        z = self._z(value)
        eq_zero, c = self._safe()
        y = 1 / c + 1
        nonzero = where(y._data == 0, y, y * (c * z).log1p())
        return -self.scale.log() - where(eq_zero, z, nonzero)

    def log_survival_function(self, value):
        z = self._z(value)
        eq_zero, c = self._safe()
        return where(eq_zero, -z, -(c * z).log1p() / c)

    def log_cdf(self, value):
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        eq_zero, c = self._safe()
        logu = (-_t(value, self.loc)).log1p()
        return where(eq_zero, self.loc - self.scale * logu,
                     self.loc + self.scale / c * (-c * logu).expm1())

    @property
    def mean(self):
        c = self.concentration
        valid = c._data < 1
        safe = where(valid, c, c.xp.asarray(0.5, dtype=c.dtype))
        return where(valid, self.loc + self.scale / (1 - safe), c.xp.asarray(np.nan, c.dtype))

    @property
    def variance(self):
        c = self.concentration
        valid = c._data < 0.5
        safe = where(valid, c, c.xp.asarray(0.25, dtype=c.dtype))
        return where(valid, self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe)),
                     c.xp.asarray(np.nan, c.dtype))

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        return self.scale.log() + self.concentration + 1


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """torch's: a one-hot draw whose gradient is the probabilities' (straight-through)."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        probs = self._categorical.probs
        return self.sample(sample_shape) + (probs - probs.detach())


# ---- transforms ----------------------------------------------------------------------------
class AbsTransform(Transform):
    bijective = False

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class SoftmaxTransform(Transform):
    """torch's: ``exp(x - max) / sum`` onto the simplex, ``log`` back (not bijective)."""

    event_dim = 1
    bijective = False

    def _call(self, x):
        probs = (x - x.amax(-1, keepdim=True).detach()).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()


class LowerCholeskyTransform(Transform):
    """Unconstrained matrices onto lower-triangular ones with a positive diagonal."""

    event_dim = 2
    bijective = False

    def _call(self, x):
        return x.tril(-1) + _diag(x).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + _diag(y).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    event_dim = 2
    bijective = False

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ _mT(x)

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(_la.cholesky(y))


class CorrCholeskyTransform(Transform):
    """torch's: a vector of D (D - 1) / 2 reals onto the Cholesky factor of a D x D
    correlation matrix (tanh, then stick-breaking of each row's squared norm)."""

    event_dim = 1

    def _dims(self):
        return 1, 2  # a vector onto a matrix

    def _call(self, x):
        eps = float(np.finfo(x.dtype).eps)
        r = _vec_to_tril(x.tanh().clamp(-1 + eps, 1 - eps), diag=-1)
        z1m = (1 - r * r).sqrt().cumprod(-1)
        n = r.shape[-1]
        r = r + _const(r, np.eye(n))
        ones = _const(r, np.ones(tuple(r.shape[:-1]) + (1,)))
        return r * cat([ones, z1m[..., :-1]], -1)

    def _inverse(self, y):
        y_cumsum = 1 - (y * y).cumsum(-1)
        ones = _const(y, np.ones(tuple(y.shape[:-1]) + (1,)))
        shifted = cat([ones, y_cumsum[..., :-1]], -1)
        t = _tril_to_vec(y, diag=-1) / _tril_to_vec(shifted, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x, y):
        from .nn.functional.extra import softplus

        y1m = _tril_to_vec(1 - (y * y).cumsum(-1), diag=-2)
        stick = 0.5 * y1m.log().sum(-1)
        tanh = -2 * (x + softplus(-2 * x) - _LOG_2).sum(-1)
        return stick + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


class ReshapeTransform(Transform):
    """torch's: reshape the rightmost ``in_shape`` into ``out_shape`` (unit Jacobian)."""

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = tuple(in_shape), tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        self.event_dim = max(len(self.in_shape), len(self.out_shape))

    def _dims(self):
        return len(self.in_shape), len(self.out_shape)

    def _call(self, x):
        return x.reshape(tuple(x.shape[:x.ndim - len(self.in_shape)]) + self.out_shape)

    def _inverse(self, y):
        return y.reshape(tuple(y.shape[:y.ndim - len(self.out_shape)]) + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        return _const(x, np.zeros(tuple(x.shape[:x.ndim - len(self.in_shape)])))

    def _cut(self, shape, own, other):
        if len(shape) < len(own):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(own)
        if tuple(shape[cut:]) != own:
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {own}")
        return tuple(shape[:cut]) + other

    def forward_shape(self, shape):
        return self._cut(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._cut(shape, self.out_shape, self.in_shape)


class IndependentTransform(Transform):
    """torch's: ``base_transform`` with ``reinterpreted_batch_ndims`` more event dims (its
    log-determinant summed over them)."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        self.base_transform = base_transform
        self.reinterpreted_batch_ndims = int(reinterpreted_batch_ndims)
        self.event_dim = base_transform.event_dim + self.reinterpreted_batch_ndims

    def _dims(self):
        dom, cod = self.base_transform._dims()
        return dom + self.reinterpreted_batch_ndims, cod + self.reinterpreted_batch_ndims

    bijective = property(lambda self: self.base_transform.bijective)
    sign = property(lambda self: self.base_transform.sign)

    def _call(self, x):
        if x.ndim < self.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.ndim < self.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                              self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class CumulativeDistributionTransform(Transform):
    """torch's: a distribution's ``cdf`` forward, ``icdf`` back, ``log_prob`` as the
    log-determinant (a copula's marginals)."""

    def __init__(self, distribution, cache_size=0):
        self.distribution = distribution

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


identity_transform = ComposeTransform([])

for _name in __all__[5:]:
    setattr(transforms, _name, globals()[_name])  # torch.distributions.transforms's


# ---- torch's validate_args for these families ----------------------------------------------
def _symmetric_pd(a):
    sym = np.all(np.isclose(a, np.swapaxes(a, -1, -2), atol=1e-6), axis=(-2, -1))
    with np.errstate(invalid="ignore"):
        return sym & np.all(np.linalg.eigvalsh(a) > 0, axis=-1)


def _lower_cholesky(a):
    diag = np.diagonal(a, axis1=-2, axis2=-1)
    return np.all(np.tril(a) == a, axis=(-2, -1)) & np.all(diag > 0, axis=-1)


def _corr_cholesky(a):
    tol = float(np.finfo(a.dtype if a.dtype.kind == "f" else np.float64).eps) * a.shape[-1] * 10
    return _lower_cholesky(a) & np.all(np.abs(np.linalg.norm(a, axis=-1) - 1) <= tol, axis=-1)


positive_definite = _v.Constraint("PositiveDefinite()", _symmetric_pd)
lower_cholesky = _v.Constraint("LowerCholesky()", _lower_cholesky)
corr_cholesky = _v.Constraint("CorrCholesky()", _corr_cholesky)


def _gp_support(d):
    loc, scale, c = (_v._host(v) for v in (d.loc, d.scale, d.concentration))
    if loc is None:
        return _v.real
    with np.errstate(divide="ignore", invalid="ignore"):
        upper = np.where(c < 0, loc - scale / np.where(c < 0, c, -1), np.inf)
    return _v.Constraint("Interval(lower_bound=loc, upper_bound=upper)",
                         lambda a: (loc <= a) & (a <= upper))


RULES = {
    LKJCholesky: ({"concentration": _v.positive}, corr_cholesky),
    Wishart: ({"covariance_matrix": positive_definite, "precision_matrix": positive_definite,
               "scale_tril": lower_cholesky}, positive_definite),
    InverseGamma: ({"concentration": _v.positive, "rate": _v.positive}, _v.positive),
    GeneralizedPareto: ({"loc": _v.real, "scale": _v.positive, "concentration": _v.real},
                        _gp_support),
}

for _cls, (_rules, _support) in RULES.items():
    _v._wrap(_cls, _rules, _support)
