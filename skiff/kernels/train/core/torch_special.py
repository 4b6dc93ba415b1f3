"""torch's ``special`` names over skiff's ops (gradients from them): ``expit``, ``logit``,
``erf``, ``erfc``, ``erfinv``, ``gammaln``, ``digamma``/``psi``, ``xlogy``, ``sinc``,
``logsumexp``, ``softmax``, ``log_softmax``, ``log1p``, ``expm1``, ``exp2``, ``ndtr``, and
round 32's (special_r32.py): ``entr``, ``xlog1py``, ``log_ndtr``, ``ndtri``, ``erfcx``,
``i0``/``i0e``/``i1``/``i1e``, ``multigammaln``, ``zeta``, ``bessel_j0``/``j1``/``y0``/``y1``,
and round 38's (special_r38.py): ``polygamma``, ``round``, the modified and spherical Bessel
functions, ``airy_ai`` and the orthogonal polynomials."""

from __future__ import annotations

import math

from .special_r32 import *  # noqa: F403
from .special_r32 import __all__ as _R32
from .special_r38 import *  # noqa: F403
from .special_r38 import __all__ as _R38

__all__ = ["expit", "logit", "erf", "erfc", "erfinv", "gammaln", "digamma", "psi", "xlogy",
           "sinc", "logsumexp", "softmax", "log_softmax", "log1p", "expm1", "exp2", "ndtr",
           *_R32, *_R38]


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
