"""Round 39: torch's ``CatTransform`` and ``StackTransform`` (a transform per slice of a
dimension, as ``torch.cat`` / ``torch.stack`` put them together; the log-determinants
concatenated, stacked or summed as torch's), ``constraints.cat`` / ``stack`` (and
``biject_to`` of them), and ``ExponentialFamily``: the base class whose ``entropy`` and
same-family ``kl_divergence`` come from a subclass's ``_natural_params``,
``_log_normalizer`` and ``_mean_carrier_measure`` by autograd (Bregman divergences, torch's
``exp_family.py``); torch's own exponential families (``Normal``, ``Bernoulli``, ``Beta``,
``Gamma``, ``Exponential``, ``Poisson``, ``Dirichlet``, ``ContinuousBernoulli``, ``Wishart``)
are instances of it, as torch's are."""

from __future__ import annotations

from abc import ABCMeta

from .distributions import Bernoulli, Distribution, Normal, register_kl
from .distributions_r29 import Beta, Exponential, Gamma
from .distributions_r32 import Dirichlet, Poisson
from .distributions_r35 import Transform, _sum_rightmost, transforms
from .distributions_r37 import ContinuousBernoulli
from .distributions_r38 import Wishart
from .tensor import cat, stack

__all__ = ["CatTransform", "StackTransform", "ExponentialFamily"]


def _check(name, t, dim, want, what):
    if not -t.ndim <= dim < t.ndim:
        raise AssertionError(f"dim {dim} out of range for {name} with {t.ndim} dimensions")
    if t.shape[dim] != want:
        raise AssertionError(f"{name.split()[0]}.size({dim}) = {t.shape[dim]} must equal "
                             f"{what} {want}")


class CatTransform(Transform):
    """torch's ``CatTransform(tseq, dim=0, lengths=None)``: ``tseq[i]`` on the i-th slice of
    ``lengths[i]`` entries along ``dim``, the results concatenated."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")
        self.dim = dim
        self.event_dim = max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        return sum(self.lengths)

    def _dims(self):
        dims = [t._dims() for t in self.transforms]
        return max(d[0] for d in dims), max(d[1] for d in dims)

    bijective = property(lambda self: all(t.bijective for t in self.transforms))

    def _slices(self, z):
        start = 0
        for t, n in zip(self.transforms, self.lengths):
            yield t, z.narrow(self.dim, start, n)
            start += n

    def _call(self, x):
        _check("tensor", x, self.dim, self.length, "length")
        return cat([t(s) for t, s in self._slices(x)], self.dim)

    def _inverse(self, y):
        _check("tensor", y, self.dim, self.length, "length")
        return cat([t.inv(s) for t, s in self._slices(y)], self.dim)

    def log_abs_det_jacobian(self, x, y):
        _check("x", x, self.dim, self.length, "length")
        _check("y", y, self.dim, self.length, "length")
        out = []
        for (t, xs), (_, ys) in zip(self._slices(x), self._slices(y)):
            ld = t.log_abs_det_jacobian(xs, ys)
            if t.event_dim < self.event_dim:
                ld = _sum_rightmost(ld, self.event_dim - t.event_dim)
            out.append(ld)
        dim = self.dim - x.ndim if self.dim >= 0 else self.dim
        dim += self.event_dim
        return cat(out, dim) if dim < 0 else sum(out[1:], out[0])

    def __repr__(self):
        return f"CatTransform({self.transforms!r}, dim={self.dim}, lengths={self.lengths})"


class StackTransform(Transform):
    """torch's ``StackTransform(tseq, dim=0)``: ``tseq[i]`` on ``x.select(dim, i)``, the
    results (and their log-determinants) stacked along ``dim``."""

    def __init__(self, tseq, dim=0, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        self.transforms = list(tseq)
        self.dim = dim

    bijective = property(lambda self: all(t.bijective for t in self.transforms))

    def _slices(self, z):
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x):
        _check("tensor", x, self.dim, len(self.transforms), "len(transforms)")
        return stack([t(s) for t, s in zip(self.transforms, self._slices(x))], self.dim)

    def _inverse(self, y):
        _check("tensor", y, self.dim, len(self.transforms), "len(transforms)")
        return stack([t.inv(s) for t, s in zip(self.transforms, self._slices(y))], self.dim)

    def log_abs_det_jacobian(self, x, y):
        _check("x", x, self.dim, len(self.transforms), "len(transforms)")
        _check("y", y, self.dim, len(self.transforms), "len(transforms)")
        return stack([t.log_abs_det_jacobian(xs, ys) for t, xs, ys in
                      zip(self.transforms, self._slices(x), self._slices(y))], self.dim)

    def __repr__(self):
        return f"StackTransform({self.transforms!r}, dim={self.dim})"


class ExponentialFamily(Distribution, metaclass=ABCMeta):
    """torch's ``ExponentialFamily``: ``p(x) = exp(<t(x), theta> - F(theta) + k(x))``. A
    subclass gives ``_natural_params`` (a tuple of tensors), ``_log_normalizer(*theta)``
    (``F``) and ``_mean_carrier_measure`` (``E[k(x)]``); ``entropy`` is
    ``F(theta) - <theta, grad F(theta)> - E[k(x)]`` by autograd (differentiable in the
    parameters, as torch's ``create_graph=True``)."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        from .torch_autograd import grad

        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for p, g in zip(nparams, gradients):
            result = result - (p * g).reshape(tuple(self.batch_shape) + (-1,)).sum(-1)
        return result


for _cls in (Normal, Bernoulli, Beta, Gamma, Exponential, Poisson, Dirichlet,
             ContinuousBernoulli, Wishart):
    ExponentialFamily.register(_cls)  # isinstance(Normal(...), ExponentialFamily), as torch's


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """torch's: the Bregman divergence of the log normalizer, for one family."""
    from .torch_autograd import grad

    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_nparams = [t.detach().requires_grad_() for t in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        result = result - _sum_rightmost((qnp - pnp) * g, len(q.event_shape))
    return result


transforms.CatTransform = CatTransform
transforms.StackTransform = StackTransform
