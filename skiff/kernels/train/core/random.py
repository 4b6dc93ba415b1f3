"""Seeded random numbers for parameter init and dropout.

Every initializer and dropout mask draws from *the current generator* unless a layer is
given its own: the generator of the innermost :func:`using` block of this thread (a job, a
:class:`~skiff.kernels.train.trainer.Trainer` run), else one process-wide numpy
``Generator``. A job and a Trainer own their generator, seeded from their seed and saved in
their checkpoints, so two jobs with the same seed running at once on two threads of one
process draw the same numbers as either alone.

``seed(n)`` resets the current generator: the block's inside a :func:`using` block, else the
process-wide one, so the same seed gives the same weights. On a GPU the numbers are drawn on
the host and copied, so a model initialised on either backend has bit-identical weights.

>>> import numpy as np
>>> with using(np.random.default_rng(7)):
...     a = get_generator().random()
>>> a == np.random.default_rng(7).random()
True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

__all__ = ["seed", "initial_seed", "get_generator", "Generator", "get_state", "set_state", "using",
           "new_generator"]

Generator = np.random.Generator

_rng = np.random.default_rng(0)
_draw_hook = None  # set by vmap_r30 while a batched call runs whose draws must differ
# set by vmap_r30 while a batched call with randomness="different" runs:
# batched_draw(draw, shape, generator) -> a tensor of one draw per sample (draw(rng, shape))
batched_draw = None
# and batched_draw_of(x, draw, generator): a draw shaped by a tensor's values (vmap_r30's
# draw_per_sample_of), set with it
batched_draw_of = None
_current: ContextVar[Generator | None] = ContextVar("skiff_train_generator", default=None)
_initial = [0]  # the seed last given to seed() (torch.initial_seed); 0: _rng's default


def _check_seed(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"seed must be a non-negative integer, got {n!r}")
    return int(n)


def new_generator(n: int) -> Generator:
    """A fresh generator seeded with ``n`` (what a job or a Trainer owns)."""
    return np.random.default_rng(_check_seed(n))


def seed(n: int) -> Generator:
    """Reset the current generator to ``default_rng(n)`` and return it: the one of the
    innermost :func:`using` block of this thread, else the process-wide one."""
    gen = new_generator(n)
    _initial[0] = int(n)
    if _current.get() is not None:
        _current.set(gen)
    else:
        global _rng
        _rng = gen
    return gen


def initial_seed() -> int:
    """torch's ``initial_seed``: the seed last given to :func:`seed` (``skiff.manual_seed``),
    else the process-wide generator's (0)."""
    return _initial[0]


@contextmanager
def using(generator: Generator) -> Iterator[Generator]:
    """Make ``generator`` the current one of this thread while the block runs."""
    if not isinstance(generator, Generator):
        raise TypeError(f"using() takes a numpy Generator, got {type(generator).__name__}")
    token = _current.set(generator)
    try:
        yield generator
    finally:
        _current.reset(token)


def per_sample(draw, shape, generator=None):
    """Inside a batched vmap call with ``randomness="different"``: ``draw(rng, (n,) + shape)``
    once, a tensor batched at that level (one independent draw per sample); else None."""
    hook = batched_draw
    return None if hook is None else hook(draw, tuple(shape), generator)


def per_sample_of(x, draw, generator=None):
    """Inside a batched vmap call with ``randomness="different"``: ``draw(rng, values)`` once
    on the (n, ...) values of ``x`` over all samples, a tensor batched at that level; else
    None (vmap_r30.draw_per_sample_of)."""
    hook = batched_draw_of
    return None if hook is None else hook(x, draw, generator)


def get_generator(generator: Generator | None = None) -> Generator:
    """``generator`` when given, else the current one."""
    if _draw_hook is not None:  # a batched vmap call that must not draw (vmap_r30)
        _draw_hook()
    if generator is not None:
        return generator
    current = _current.get()
    return _rng if current is None else current


def get_state(generator: Generator | None = None) -> dict:
    """The state of ``generator`` (default: the current one), a JSON-able dict for
    checkpoints."""
    return get_generator(generator).bit_generator.state


def set_state(state: dict, generator: Generator | None = None) -> None:
    """Restore a state returned by :func:`get_state` into ``generator`` (default: the
    current one)."""
    get_generator(generator).bit_generator.state = state
