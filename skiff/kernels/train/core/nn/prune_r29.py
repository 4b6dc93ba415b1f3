"""torch's ``nn.utils.prune``: a pruned parameter ``name`` becomes ``name + "_orig"`` (the
trained values) and a buffer ``name + "_mask"``; a forward pre-hook sets ``module.name =
orig * mask`` before each call (so the gradient of ``orig`` is masked), and
``remove`` makes the product a plain parameter again. State dicts carry ``weight_orig`` and
``weight_mask`` as torch's.

Methods: ``identity``, ``random_unstructured``, ``l1_unstructured``, ``random_structured``,
``ln_structured``, ``global_unstructured``, ``custom_from_mask``; ``remove``, ``is_pruned``.
Pruning again prunes among what is left (torch's ``PruningContainer``): ``amount`` is a
fraction (rounded as torch rounds) or a count of the entries (channels, for structured
methods) still unpruned, scored (as torch's) on the tensor as the module holds it, i.e.
``orig * mask`` as of the last forward or pruning call. The random ones draw from skiff's
seeded generator (torch's law, not torch's numbers). Ties in the magnitudes are broken by
position (torch's ``topk`` leaves them unspecified)."""

from __future__ import annotations

import numbers

import numpy as np

from .. import tensor as T
from ..autograd import no_grad
from ..random import get_generator
from .module import Module

__all__ = ["identity", "random_unstructured", "l1_unstructured", "random_structured",
           "ln_structured", "global_unstructured", "custom_from_mask", "remove", "is_pruned",
           "L1Unstructured", "RandomUnstructured", "LnStructured", "RandomStructured",
           "Identity"]


def _count(amount, n):
    if isinstance(amount, numbers.Integral) and not isinstance(amount, bool):
        if amount < 0 or amount > n:
            raise ValueError(f"amount={amount} should be at most the number of units to prune "
                             f"({n})")
        return int(amount)
    if not 0.0 <= float(amount) <= 1.0:
        raise ValueError(f"amount={amount} should be a float in [0, 1] or a count")
    return int(round(float(amount) * n))


class _Method:
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount=0.0, **kw):
        self.amount, self.kw = amount, kw

    def scores(self, t):  # importance of each entry / channel; pruned: the lowest
        raise NotImplementedError


class Identity(_Method):
    def scores(self, t):
        return None


class L1Unstructured(_Method):
    def scores(self, t):
        return np.abs(t)


class RandomUnstructured(_Method):
    def scores(self, t):
        return get_generator().random(t.shape)


class LnStructured(_Method):
    PRUNING_TYPE = "structured"

    def scores(self, t):
        n, dim = self.kw["n"], self.kw["dim"] % t.ndim
        axes = tuple(a for a in range(t.ndim) if a != dim)
        if n == "fro":
            n = 2
        a = np.abs(t)
        if n in (np.inf, float("inf"), "inf"):
            return a.max(axis=axes) if axes else a
        if n in (-np.inf, float("-inf")):
            return a.min(axis=axes) if axes else a
        return (a ** n).sum(axis=axes) ** (1.0 / n) if axes else a


class _Given(_Method):
    def __init__(self, mask):
        super().__init__()
        self.mask = mask


class RandomStructured(_Method):
    PRUNING_TYPE = "structured"

    def scores(self, t):
        return get_generator().random(t.shape[self.kw["dim"] % t.ndim])


def _new_mask(method, t, old):
    """The mask after ``method`` prunes among what ``old`` left."""
    if isinstance(method, Identity):
        return old.copy()
    if isinstance(method, _Given):
        return old * method.mask.astype(old.dtype)
    mask = old.copy()
    if method.PRUNING_TYPE == "unstructured":
        live = np.flatnonzero(old.reshape(-1) != 0)
        k = _count(method.amount, live.size)
        if k:
            s = method.scores(t).reshape(-1)[live]
            drop = live[np.argsort(s, kind="stable")[:k]]
            mask.reshape(-1)[drop] = 0
        return mask
    dim = method.kw["dim"] % t.ndim
    axes = tuple(a for a in range(t.ndim) if a != dim)
    live = np.flatnonzero(old.sum(axis=axes) != 0 if axes else old != 0)
    k = _count(method.amount, live.size)
    if k:
        s = np.asarray(method.scores(np.take(t, live, axis=dim)))
        drop = live[np.argsort(s, kind="stable")[:k]]
        idx = [slice(None)] * t.ndim
        idx[dim] = drop
        mask[tuple(idx)] = 0
    return mask


def _apply_mask(module, name):
    orig = module._parameters[name + "_orig"]
    return orig * module._buffers[name + "_mask"]


def _hook(name):
    def hook(module, args):
        object.__setattr__(module, name, _apply_mask(module, name))
    hook._prune_name = name
    return hook


def _prune(module, name, method, importance_scores=None):
    if not isinstance(module, Module):
        raise TypeError(f"prune: expected a module, got {type(module).__name__}")
    pruned = name + "_orig" in module._parameters
    if not pruned and name not in module._parameters:
        raise AttributeError(f"prune: {type(module).__name__} has no parameter {name!r} "
                             f"(its parameters: {list(module._parameters)})")
    if pruned:
        orig, old = module._parameters[name + "_orig"], module._buffers[name + "_mask"]
    else:
        orig, old = module._parameters[name], None
    if importance_scores is None:  # torch's: the tensor as the module holds it now (for a
        importance_scores = module.__dict__.get(name, orig)  # pruned one: orig * mask)
    values = np.asarray(getattr(importance_scores, "_data", importance_scores))
    if values.shape != tuple(orig.shape):
        raise ValueError(f"prune: importance_scores of shape {values.shape} for {name!r} of "
                         f"shape {tuple(orig.shape)}")
    old_mask = np.ones(values.shape, dtype=orig.dtype) if old is None else \
        np.asarray(old._data)
    mask = _new_mask(method, values, old_mask).astype(orig.dtype)
    xp = orig.xp
    if old is None:
        del module._parameters[name]
        module.__dict__.pop(name, None)
        module.register_parameter(name + "_orig", orig)
        module.register_buffer(name + "_mask", T.Tensor._make(xp.asarray(mask), False, None, 0))
        handles = module.__dict__.setdefault("_prune_hooks", {})
        handles[name] = module.register_forward_pre_hook(_hook(name))
    else:
        module._buffers[name + "_mask"] = T.Tensor._make(xp.asarray(mask), False, None, 0)
        object.__setattr__(module, name + "_mask", module._buffers[name + "_mask"])
    object.__setattr__(module, name, _apply_mask(module, name))
    return module


def identity(module, name):
    return _prune(module, name, Identity())


def random_unstructured(module, name, amount):
    return _prune(module, name, RandomUnstructured(amount))


def l1_unstructured(module, name, amount, importance_scores=None):
    return _prune(module, name, L1Unstructured(amount), importance_scores)


def random_structured(module, name, amount, dim):
    return _prune(module, name, RandomStructured(amount, dim=dim))


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    return _prune(module, name, LnStructured(amount, n=n, dim=dim), importance_scores)


def custom_from_mask(module, name, mask):
    return _prune(module, name, _Given(np.asarray(getattr(mask, "_data", mask))))


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the ``(module, name)`` pairs together: the entries of lowest score across all of
    them (``pruning_method``: ``L1Unstructured`` or ``RandomUnstructured``; ``amount=``)."""
    parameters = list(parameters)
    importance_scores = importance_scores or {}
    scores, masks, sizes = [], [], []
    for module, name in parameters:
        if name + "_orig" in module._parameters:
            t = module.__dict__[name]  # as torch: the pruned tensor as last computed
            old = np.asarray(module._buffers[name + "_mask"]._data)
        else:
            t = module._parameters[name]
            old = np.ones(tuple(t.shape), dtype=t.dtype)
        s = importance_scores.get((module, name), t)
        scores.append(np.asarray(s.detach()._data).reshape(-1))
        masks.append(old.reshape(-1))
        sizes.append(old.size)
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError("global_unstructured: the pruning method must be unstructured "
                        "(L1Unstructured, RandomUnstructured)")
    allm = _new_mask(method, np.concatenate(scores), np.concatenate(masks))
    at = 0
    for (module, name), n in zip(parameters, sizes):
        p = module._parameters.get(name + "_orig")
        shape = tuple((p if p is not None else module._parameters[name]).shape)
        custom_from_mask(module, name, allm[at:at + n].reshape(shape))
        at += n


def remove(module, name):
    """Make the pruned ``name`` a plain parameter again (``orig * mask``)."""
    if name + "_orig" not in module._parameters:
        raise ValueError(f"Parameter '{name}' of module {type(module).__name__} has to be "
                         "pruned before pruning can be removed")
    with no_grad():
        w = _apply_mask(module, name)
    handle = module.__dict__.get("_prune_hooks", {}).pop(name, None)
    if handle is not None:
        handle.remove()
    orig = module._parameters.pop(name + "_orig")
    module.__dict__.pop(name + "_orig", None)
    module._buffers.pop(name + "_mask", None)
    module.__dict__.pop(name + "_mask", None)
    module.__dict__.pop(name, None)
    orig._data = w._data
    module.register_parameter(name, orig)
    return module


def is_pruned(module):
    """Whether any submodule of ``module`` holds a pruned parameter."""
    return any(n.endswith("_orig") and n[:-5] + "_mask" in m._buffers
               for _, m in module.named_modules() for n in m._parameters)
