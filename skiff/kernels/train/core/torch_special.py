"""torch's ``special`` names over skiff's ops (gradients from them): ``expit``, ``logit``,
``erf``, ``erfc``, ``erfinv``, ``gammaln``, ``digamma``/``psi``, ``xlogy``, ``sinc``,
``logsumexp``, ``softmax``, ``log_softmax``, ``log1p``, ``expm1``, ``exp2``, ``ndtr``
(``log_ndtr``, which needs a tail-safe form, is not here)."""

from __future__ import annotations

import math

__all__ = ["expit", "logit", "erf", "erfc", "erfinv", "gammaln", "digamma", "psi", "xlogy",
           "sinc", "logsumexp", "softmax", "log_softmax", "log1p", "expm1", "exp2", "ndtr"]


def expit(input):  # noqa: A002
    return input.sigmoid()


def logit(input, eps=None):  # noqa: A002
    return input.logit(eps)


def erf(input):  # noqa: A002
    return input.erf()


def erfc(input):  # noqa: A002
    return 1.0 - input.erf()


def erfinv(input):  # noqa: A002
    return input.erfinv()


def gammaln(input):  # noqa: A002
    return input.lgamma()


def digamma(input):  # noqa: A002
    return input.digamma()


psi = digamma


def xlogy(input, other):  # noqa: A002
    return input.xlogy(other)


def sinc(input):  # noqa: A002
    return input.sinc()


def logsumexp(input, dim, keepdim=False):  # noqa: A002
    return input.logsumexp(dim, keepdim=keepdim)


def softmax(input, dim, *, dtype=None):  # noqa: A002
    return (input if dtype is None else input.astype(dtype)).softmax(dim)


def log_softmax(input, dim, *, dtype=None):  # noqa: A002
    return (input if dtype is None else input.astype(dtype)).log_softmax(dim)


def log1p(input):  # noqa: A002
    return input.log1p()


def expm1(input):  # noqa: A002
    return input.expm1()


def exp2(input):  # noqa: A002
    return input.exp2()


def ndtr(input):  # noqa: A002
    """The standard normal CDF."""
    return 0.5 * (1.0 + (input * (1 / math.sqrt(2.0))).erf())
