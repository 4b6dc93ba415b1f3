"""torch's ``distributions.constraints`` (the objects ``distributions_r36`` validates with,
tagged with their kind and bounds, and the parametrized ones: ``greater_than``,
``greater_than_eq``, ``less_than``, ``interval``, ``half_open_interval``,
``integer_interval``, ``independent``), and ``biject_to`` / ``transform_to``: the transform
from unconstrained reals onto a constraint's set (torch's registry: ``Exp`` then ``Affine``
onto a half line, ``Sigmoid`` then ``Affine`` onto an interval, ``StickBreaking`` /
``Softmax`` onto the simplex, ``CorrCholesky``, ``LowerCholesky``, ``PositiveDefinite``), for
Pyro-style models that keep unconstrained parameters (``biject_to(d.support)(raw)``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from . import distributions_r36 as _v
from . import distributions_r38 as _d38
from .distributions_r35 import AffineTransform, ComposeTransform, ExpTransform, SigmoidTransform
from .distributions_r37 import StickBreakingTransform

__all__ = ["constraints", "biject_to", "transform_to"]

Constraint = _v.Constraint


def _tag(c, kind, event_dim=0, **params):
    c.kind, c.event_dim, c.is_discrete = kind, event_dim, kind == "discrete"
    for k, v in params.items():
        setattr(c, k, v)
    return c


def _bound(v, default=-np.inf):
    """A bound's host values (a GPU tensor's bound is not checked: ``default``)."""
    h = _v._host(v)
    return default if h is None else h


def greater_than(lower_bound):
    lb = _bound(lower_bound)
    return _tag(Constraint(f"GreaterThan(lower_bound={lower_bound})", lambda a: a > lb),
                "greater_than", lower_bound=lower_bound)


def greater_than_eq(lower_bound):
    lb = _bound(lower_bound)
    return _tag(Constraint(f"GreaterThanEq(lower_bound={lower_bound})", lambda a: a >= lb),
                "greater_than", lower_bound=lower_bound)


def less_than(upper_bound):
    ub = _bound(upper_bound, np.inf)
    return _tag(Constraint(f"LessThan(upper_bound={upper_bound})", lambda a: a < ub),
                "less_than", upper_bound=upper_bound)


def interval(lower_bound, upper_bound):
    lb, ub = _bound(lower_bound), _bound(upper_bound, np.inf)
    return _tag(Constraint(f"Interval(lower_bound={lower_bound}, upper_bound={upper_bound})",
                           lambda a: (lb <= a) & (a <= ub)),
                "interval", lower_bound=lower_bound, upper_bound=upper_bound)


def half_open_interval(lower_bound, upper_bound):
    c = interval(lower_bound, upper_bound)
    lb, ub = _bound(lower_bound), _bound(upper_bound, np.inf)
    c.name = f"HalfOpenInterval(lower_bound={lower_bound}, upper_bound={upper_bound})"
    c.ok = lambda a: (lb <= a) & (a < ub)
    return c


def integer_interval(lower_bound, upper_bound):
    return _tag(Constraint(f"IntegerInterval(lower_bound={lower_bound}, upper_bound="
                           f"{upper_bound})", lambda a: (lower_bound <= a) & (a <= upper_bound)
                           & (a == np.floor(a))), "discrete")


def independent(base_constraint, reinterpreted_batch_ndims):
    n = int(reinterpreted_batch_ndims)

    def ok(a):
        r = np.asarray(base_constraint.ok(a))
        return r.all(axis=tuple(range(-n, 0))) if n else r

    return _tag(Constraint(f"IndependentConstraint({base_constraint!r}, {n})", ok),
                "independent", base_constraint.event_dim + n, base_constraint=base_constraint,
                reinterpreted_batch_ndims=n)


def _cat_checks(cseq, dim, lengths, a, stack):
    """The element checks of each slice, put back together as ``torch.cat``/``stack``."""
    a = np.asarray(a)
    dim = dim % a.ndim
    if stack:
        parts = [np.asarray(c.ok(np.take(a, i, axis=dim))) for i, c in enumerate(cseq)]
        return np.stack(parts, dim)
    parts, start = [], 0
    for c, n in zip(cseq, lengths):
        parts.append(np.asarray(c.ok(np.take(a, range(start, start + n), axis=dim))))
        start += n
    return np.concatenate(parts, dim)


def cat(cseq, dim=0, lengths=None):
    """torch's ``constraints.cat``: ``cseq[i]`` on the i-th slice of ``lengths[i]`` entries
    along ``dim`` (``biject_to`` of it is a ``CatTransform``)."""
    cseq = list(cseq)
    lengths = [1] * len(cseq) if lengths is None else list(lengths)
    if len(lengths) != len(cseq):
        raise AssertionError(f"lengths ({len(lengths)}) must match cseq ({len(cseq)})")
    return _tag(Constraint(f"_Cat({cseq!r}, dim={dim})",
                           lambda a: _cat_checks(cseq, dim, lengths, a, False)),
                "cat", max(getattr(c, "event_dim", 0) for c in cseq), cseq=cseq, dim=dim,
                lengths=lengths)


def stack(cseq, dim=0):
    """torch's ``constraints.stack``: ``cseq[i]`` on ``x.select(dim, i)``."""
    cseq = list(cseq)
    return _tag(Constraint(f"_Stack({cseq!r}, dim={dim})",
                           lambda a: _cat_checks(cseq, dim, None, a, True)),
                "stack", max(getattr(c, "event_dim", 0) for c in cseq), cseq=cseq, dim=dim)


def _dependent_check(a):
    raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    """torch's ``constraints.is_dependent``: the placeholder of a support that depends on
    other values (``constraints.dependent``)."""
    return getattr(constraint, "kind", None) == "dependent"


_tag(_v.real, "real")
_tag(_v.positive, "greater_than", lower_bound=0.0)
_tag(_v.nonnegative, "greater_than", lower_bound=0.0)
_tag(_v.unit_interval, "interval", lower_bound=0.0, upper_bound=1.0)
_tag(_v.simplex, "simplex", 1)
_tag(_v.boolean, "discrete")
_tag(_v.nonnegative_integer, "discrete")
_tag(_d38.lower_cholesky, "lower_cholesky", 2)
_tag(_d38.positive_definite, "positive_definite", 2)
_tag(_d38.corr_cholesky, "corr_cholesky", 2)

constraints = SimpleNamespace(
    Constraint=Constraint, real=_v.real, positive=_v.positive, nonnegative=_v.nonnegative,
    unit_interval=_v.unit_interval, simplex=_v.simplex, boolean=_v.boolean,
    nonnegative_integer=_v.nonnegative_integer,
    positive_integer=_tag(Constraint("IntegerGreaterThan(lower_bound=1)",
                                     lambda a: (a >= 1) & (a == np.floor(a))), "discrete"),
    real_vector=independent(_v.real, 1), lower_cholesky=_d38.lower_cholesky,
    positive_definite=_d38.positive_definite, corr_cholesky=_d38.corr_cholesky,
    greater_than=greater_than, greater_than_eq=greater_than_eq, less_than=less_than,
    interval=interval, half_open_interval=half_open_interval,
    integer_interval=integer_interval, independent=independent, cat=cat, stack=stack,
    dependent=_tag(Constraint("Dependent()", _dependent_check), "dependent"),
    is_dependent=is_dependent)


def _unsupported(c):
    return NotImplementedError(f"Cannot transform {c!r} constraints")


def _to(constraint, bijective):
    kind = getattr(constraint, "kind", None)
    if kind == "real":
        return ComposeTransform([])
    if kind == "greater_than":
        return ComposeTransform([ExpTransform(), AffineTransform(constraint.lower_bound, 1)])
    if kind == "less_than":
        return ComposeTransform([ExpTransform(), AffineTransform(constraint.upper_bound, -1)])
    if kind == "interval":
        lb, ub = constraint.lower_bound, constraint.upper_bound
        if isinstance(lb, (int, float)) and isinstance(ub, (int, float)) and lb == 0 and \
                ub == 1:
            return SigmoidTransform()
        return ComposeTransform([SigmoidTransform(), AffineTransform(lb, ub - lb)])
    if kind == "simplex":
        return StickBreakingTransform() if bijective else _d38.SoftmaxTransform()
    if kind == "corr_cholesky":
        return _d38.CorrCholeskyTransform()
    if kind == "lower_cholesky" and not bijective:
        return _d38.LowerCholeskyTransform()
    if kind == "positive_definite" and not bijective:
        return _d38.PositiveDefiniteTransform()
    if kind == "cat":
        from .distributions_r39 import CatTransform

        return CatTransform([_to(c, bijective) for c in constraint.cseq], constraint.dim,
                            constraint.lengths)
    if kind == "stack":
        from .distributions_r39 import StackTransform

        return StackTransform([_to(c, bijective) for c in constraint.cseq], constraint.dim)
    if kind == "independent":
        return _d38.IndependentTransform(_to(constraint.base_constraint, bijective),
                                         constraint.reinterpreted_batch_ndims)
    raise _unsupported(constraint)


def biject_to(constraint):
    """torch's ``biject_to(constraint)``: a bijection from the reals onto the set."""
    return _to(constraint, True)


def transform_to(constraint):
    """torch's ``transform_to(constraint)``: a transform onto the set (not always bijective:
    ``Softmax`` onto the simplex, ``LowerCholesky``, ``PositiveDefinite``)."""
    return _to(constraint, False)


def _uniform_support(d):
    return interval(d.low, d.high)


def _pareto_support(d):
    return greater_than_eq(d.scale)


def install():
    """Uniform's and Pareto's supports as tagged constraints (biject_to(d.support))."""
    from .distributions import Uniform
    from .distributions_r37 import Pareto

    Uniform.support = property(_uniform_support)
    Pareto.support = property(_pareto_support)


install()
