"""torch's spectral normalisation, ``W / sigma(W)`` with ``sigma`` the largest singular value
estimated by power iteration (one step per training forward, on buffers ``u`` and ``v``
updated in place, no gradient through them):

* the old ``nn.utils.spectral_norm`` / ``remove_spectral_norm``: parameter ``weight_orig``,
  buffers ``weight_u`` and ``weight_v``; ``module.weight`` recomputed before each forward
  (a forward pre-hook), v then u updated from the previous u;
* ``nn.utils.parametrizations.spectral_norm``: ``parametrizations.weight.original`` and the
  buffers ``parametrizations.weight.0._u`` / ``_v`` (15 iterations at registration), u then v
  updated from the previous v, the weight computed on each access.

Both state dicts load torch's. The first ``u``/``v`` are skiff's draws (torch's law: normal,
normalised). A weight of more than 2 dims is flattened after moving ``dim`` first; ``dim``
defaults to 1 for transposed convolutions (their weight is (in, out, ...)), else 0."""

from __future__ import annotations

from .. import tensor as T
from ..autograd import no_grad
from .module import Module
from .parametrize import register_parametrization

__all__ = ["spectral_norm", "remove_spectral_norm", "parametrized_spectral_norm"]


def _normalize(x, eps):
    """``x / max(||x||, eps)`` of a 1-D tensor (torch's ``F.normalize(dim=0)``)."""
    return x / (x * x).sum().sqrt().clamp(min=eps)


def _matrix(w, dim):
    if dim != 0:
        w = w.permute(dim, *(d for d in range(w.ndim) if d != dim))
    return w.reshape(w.shape[0], -1)


def _default_dim(module, dim):
    if dim is not None:
        return dim
    name = type(module).__name__
    return 1 if "ConvTranspose" in name else 0


def _draw(n, eps, like):
    return _normalize(T.randn(n, dtype=like.dtype, device=like.device), eps)


def _store(buf, value):
    buf._data[...] = value._data


class SpectralNorm:
    """The old form's forward pre-hook."""

    def __init__(self, name, n_power_iterations, dim, eps):
        if n_power_iterations < 0:
            raise ValueError(f"n_power_iterations must be >= 0, got {n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = (
            name, n_power_iterations, dim, eps)

    def compute_weight(self, module, do_power_iteration):
        w = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = _matrix(w, self.dim)
        if do_power_iteration:
            with no_grad():
                m = mat.detach()
                for _ in range(self.n_power_iterations):
                    _store(v, _normalize(m.t().mv(u), self.eps))
                    _store(u, _normalize(m.mv(v), self.eps))
        u, v = u.detach().clone(), v.detach().clone()
        sigma = u.dot(mat.mv(v))
        return w / sigma

    def __call__(self, module, args):
        object.__setattr__(module, self.name,
                           self.compute_weight(module, do_power_iteration=module.training))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """torch's (old) ``nn.utils.spectral_norm``; returns ``module``."""
    hooks = module.__dict__.setdefault("_spectral_norm_handles", {})
    if name in hooks:
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter "
                           f"{name}")
    w = module._parameters.get(name)
    if w is None:
        raise ValueError(f"spectral_norm: {type(module).__name__} has no parameter '{name}'")
    dim = _default_dim(module, dim)
    fn = SpectralNorm(name, n_power_iterations, dim % w.ndim, eps)
    with no_grad():
        h, wd = _matrix(w.detach(), fn.dim).shape
        u, v = _draw(h, eps, w), _draw(wd, eps, w)
    delattr(module, name)
    module.register_parameter(name + "_orig", w)
    object.__setattr__(module, name, w.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    hooks[name] = (module.register_forward_pre_hook(fn), fn)
    return module


def remove_spectral_norm(module, name="weight"):
    hooks = module.__dict__.get("_spectral_norm_handles", {})
    if name not in hooks:
        raise ValueError(f"spectral_norm of '{name}' not found in {type(module).__name__}")
    handle, fn = hooks.pop(name)
    with no_grad():
        w = fn.compute_weight(module, do_power_iteration=False).detach()
    handle.remove()
    for suffix in ("", "_u", "_v", "_orig"):
        if name + suffix in module.__dict__:
            delattr(module, name + suffix)
    from .module import Parameter

    setattr(module, name, Parameter(w._data.copy(), dtype=w.dtype))
    return module


class _SpectralNorm(Module):
    """The parametrization: ``weight / sigma`` (a 1-D weight is just normalised)."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        nd = weight.ndim
        if dim >= nd or dim < -nd:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{nd}, {nd - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim, self.eps = dim % nd, eps
        if nd > 1:
            self.n_power_iterations = n_power_iterations
            with no_grad():
                mat = _matrix(weight.detach(), self.dim)
                h, wd = mat.shape
                self.register_buffer("_u", _draw(h, eps, weight))
                self.register_buffer("_v", _draw(wd, eps, weight))
                self._power_method(mat, 15)

    def _power_method(self, mat, n):
        with no_grad():
            m = mat.detach()
            for _ in range(n):
                _store(self._u, _normalize(m.mv(self._v), self.eps))
                _store(self._v, _normalize(m.t().mv(self._u), self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return weight / (weight * weight).sum().sqrt().clamp(min=self.eps)
        mat = _matrix(weight, self.dim)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.detach().clone(), self._v.detach().clone()
        return weight / u.dot(mat.mv(v))

    def right_inverse(self, value):
        return value


def parametrized_spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12,
                               dim=None):
    """torch's ``nn.utils.parametrizations.spectral_norm``; returns ``module``."""
    w = getattr(module, name, None)
    if w is None or not hasattr(w, "ndim"):
        raise ValueError(f"Module '{type(module).__name__}' has no parameter or buffer with "
                         f"name '{name}'")
    dim = _default_dim(module, dim)
    register_parametrization(module, name, _SpectralNorm(w, n_power_iterations, dim, eps))
    return module
