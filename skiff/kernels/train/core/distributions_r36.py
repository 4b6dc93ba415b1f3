"""torch's argument validation for the distributions (``validate_args``, on by default as
torch's): each family's parameters are checked against its constraints when it is built
(``Normal(0, -1)`` raises, a ``Bernoulli`` of ``probs`` 1.3 too), and ``log_prob`` checks its
value against the support (a ``Beta`` at 1.5, a ``Poisson`` at 1.5, an ``Exponential`` at
-1); ``validate_args=False`` or ``Distribution.set_default_validate_args(False)`` turns it off.
Without it skiff returned nan, -inf or a number where torch stops the program. Host tensors
only: a GPU tensor's check would wait for the device (its values are not checked).
:func:`install` puts the checks on the families of ``distributions``, ``_r29`` and ``_r32``.
"""

from __future__ import annotations

import functools

import numpy as np

from . import distributions as D0
from . import distributions_r29 as D29
from . import distributions_r32 as D32
from .tensor import Tensor

__all__ = ["install", "Constraint"]


class Constraint:
    """A named check on an array: ``ok(a) -> bool array`` of the elements (or events)."""

    def __init__(self, name, ok):
        self.name, self.ok = name, ok

    def __repr__(self):
        return self.name

    def check(self, value):
        """torch's ``constraint.check(value)``: a bool tensor (on the value's device)."""
        a = value._data if isinstance(value, Tensor) else np.asarray(value)
        return Tensor._make(self.ok(a), False, None, 0)


def _host(v):
    """The host array to check, or None for a GPU tensor's (checking it would wait for the
    device and copy it back: those are not validated)."""
    a = v._data if isinstance(v, Tensor) else v
    if isinstance(a, (np.ndarray, np.generic, int, float, bool, list, tuple)):
        return np.asarray(a)
    return None


def _integer(a):
    return a == np.floor(a)


def _simplex(a):
    return np.all(a >= 0, axis=-1) & (np.abs(a.sum(axis=-1) - 1) < 1e-6)


real = Constraint("Real()", lambda a: a == a)
positive = Constraint("GreaterThan(lower_bound=0.0)", lambda a: a > 0)
nonnegative = Constraint("GreaterThanEq(lower_bound=0.0)", lambda a: a >= 0)
unit_interval = Constraint("Interval(lower_bound=0.0, upper_bound=1.0)",
                           lambda a: (a >= 0) & (a <= 1))
boolean = Constraint("Boolean()", lambda a: (a == 0) | (a == 1))
nonnegative_integer = Constraint("IntegerGreaterThan(lower_bound=0)",
                                 lambda a: (a >= 0) & _integer(a))
simplex = Constraint("Simplex()", _simplex)
positive_vector = Constraint("IndependentConstraint(GreaterThan(lower_bound=0.0), 1)",
                             lambda a: np.all(a > 0, axis=-1))


def _categories(d):
    n = d.probs.shape[-1] - 1
    return Constraint(f"IntegerInterval(lower_bound=0, upper_bound={n})",
                      lambda a: (a >= 0) & (a <= n) & _integer(a))


def _binomial(d):
    n = _host(d.total_count)
    n = np.inf if n is None else n  # (a GPU tensor's count: not checked)
    return Constraint("IntegerInterval(lower_bound=0, upper_bound=total_count)",
                      lambda a: (a >= 0) & (a <= n) & _integer(a))


def _uniform(d):
    lo, hi = _host(d.low), _host(d.high)
    lo, hi = -np.inf if lo is None else lo, np.inf if hi is None else hi
    return Constraint("Interval(lower_bound=low, upper_bound=high)",
                      lambda a: (lo <= a) & (a <= hi))


# family: ({parameter: constraint}, support: a constraint or a function of the distribution)
RULES = {
    D0.Normal: ({"loc": real, "scale": positive}, real),
    D0.Bernoulli: ({"probs": unit_interval, "logits": real}, boolean),
    D0.Categorical: ({"probs": simplex}, _categories),
    D0.Uniform: ({"low": real, "high": real}, _uniform),
    D29.Exponential: ({"rate": positive}, nonnegative),
    D29.Gamma: ({"concentration": positive, "rate": positive}, nonnegative),
    D29.Beta: ({"concentration1": positive, "concentration0": positive}, unit_interval),
    D29.Laplace: ({"loc": real, "scale": positive}, real),
    D32.Poisson: ({"rate": nonnegative}, nonnegative_integer),
    D32.LogNormal: ({"loc": real, "scale": positive}, positive),
    D32.Cauchy: ({"loc": real, "scale": positive}, real),
    D32.StudentT: ({"df": positive, "loc": real, "scale": positive}, real),
    D32.Dirichlet: ({"concentration": positive_vector}, simplex),
    D32.Binomial: ({"total_count": nonnegative_integer, "probs": unit_interval}, _binomial),
    D32.Geometric: ({"probs": unit_interval}, nonnegative_integer),
}

_DEFAULT = [True]  # torch's default: validate (``__debug__`` builds)


def set_default_validate_args(value: bool) -> None:
    """torch's ``Distribution.set_default_validate_args``."""
    if value not in (True, False):
        raise ValueError("Expected value to be True or False")
    _DEFAULT[0] = value


def _invalid(values):
    return values if values.ndim else values.reshape(1)


def _check_args(d, rules):
    given = getattr(d, "_param_given", None)  # "probs" or "logits": torch checks the one passed
    for name, constraint in rules.items():
        if given is not None and name in ("probs", "logits") and name != given:
            continue
        v = getattr(d, name, None)
        if v is None or getattr(v, "_batched", False):
            continue
        a = _host(v)
        if a is None:
            continue
        if not np.asarray(constraint.ok(a)).all():
            raise ValueError(
                f"Expected parameter {name} (Tensor of shape {tuple(a.shape)}) of distribution "
                f"{d!r} to satisfy the constraint {constraint!r}, but found "
                f"invalid values:\n{D0.torch_str(a)}")


def _check_value(d, value, support):
    if getattr(value, "_batched", False):
        return
    a = _host(value)
    if a is None:
        return
    s = support(d) if not isinstance(support, Constraint) else support
    if not np.asarray(s.ok(a)).all():
        raise ValueError(
            f"Expected value argument (Tensor of shape {tuple(a.shape)}) to be within the "
            f"support ({s!r}) of the distribution {d!r}, but found invalid "
            f"values:\n{D0.torch_str(a)}")


def _wrap(cls, rules, support):
    init, log_prob = cls.__init__, cls.log_prob

    @functools.wraps(init)
    def __init__(self, *args, validate_args=None, **kwargs):
        init(self, *args, validate_args=validate_args, **kwargs)
        self._validate_args = _DEFAULT[0] if validate_args is None else bool(validate_args)
        if self._validate_args and type(self) is cls:
            _check_args(self, rules)

    @functools.wraps(log_prob)
    def checked_log_prob(self, value):
        if getattr(self, "_validate_args", False):
            _check_value(self, value, support)
        return log_prob(self, value)

    cls.__init__, cls.log_prob = __init__, checked_log_prob
    cls.arg_constraints = rules
    if isinstance(support, Constraint):
        cls.support = support
    else:
        cls.support = property(support)


def install() -> None:
    """Put the checks on every family of :data:`RULES` (once)."""
    if getattr(D0.Distribution, "_validation_installed", False):
        return
    for cls, (rules, support) in RULES.items():
        _wrap(cls, rules, support)
    D0.Distribution.set_default_validate_args = staticmethod(set_default_validate_args)
    D0.Distribution._validation_installed = True


install()
