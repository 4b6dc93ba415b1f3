"""User hooks of ``generate``: transformers' ``logits_processor`` and ``stopping_criteria``.

``model.generate(ids, logits_processor=LogitsProcessorList([...]),
stopping_criteria=StoppingCriteriaList([...]))`` (transformers' lists, any iterable of
callables, or one callable) as transformers calls them:

* a processor is ``proc(input_ids, scores) -> scores``: ``input_ids`` (n, T) the rows so far
  (the padded prompt as given, then the new tokens), ``scores`` (n, V) float32 logits after
  skiff's own processors (repetition penalty, no-repeat n-grams, min new tokens) and before
  temperature / top-k / top-p, the place transformers puts a custom processor;
* a criterion is ``crit(input_ids, scores) -> bool tensor (n,)`` (or one bool), called after
  each step's token is appended: a row it marks is finished (that token kept, padding
  after; without an eos transformers pads nothing and the row goes on until every row is
  marked, and so does skiff), as transformers' ``unfinished_sequences & ~criteria(...)``;
  ``scores`` is None.

They get torch tensors when torch is installed (transformers' processors and ones written
for them index and return torch tensors), numpy arrays otherwise; what they return may be
either. In a batch of different lengths (``generate_batch``, a padded ``attention_mask``)
every row is passed as transformers passes it (round 41; before, only the rows still
generating, so a processor or criterion that reads row ``i`` met another row once one had
finished): the ids in transformers' layout (the padded prompt, the new tokens, a finished
row padded with the pad id after its end), a finished row's scores 0 (skiff runs no
forward for it; transformers' are the model's logits of the pad token, which a processor
of its own row only, as all of transformers' are, never reads); a criterion gets the whole
batch once a step, not one row at a time.
"""

from __future__ import annotations

import numpy as np

__all__ = ["UserHooks", "MaxTime", "with_max_time"]


def _as_list(hooks, name: str) -> list:
    if hooks is None:
        return []
    items = [hooks] if callable(hooks) and not isinstance(hooks, (list, tuple)) else list(hooks)
    for h in items:
        if not callable(h):
            raise TypeError(f"{name} holds callables (input_ids, scores) -> ..., got "
                            f"{type(h).__name__}")
    return items


def _torch():
    try:
        import torch
    except ImportError:  # numpy in and out
        return None
    return torch


def _host(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


class UserHooks:
    """The processors and criteria of one ``generate`` call (either may be empty)."""

    def __init__(self, logits_processor=None, stopping_criteria=None, pad: int = 0):
        self.processors = _as_list(logits_processor, "logits_processor")
        self.criteria = _as_list(stopping_criteria, "stopping_criteria")
        self.pad = int(pad or 0)
        self._torch = _torch() if (self.processors or self.criteria) else None
        # the packed loop's rows (``generate_batch``): each row's list of ids (it grows in
        # place), its prompt length, and its padded prompt as given (or None)
        self.every = None
        self.prompt_lengths = None
        self.padded = None

    def __bool__(self) -> bool:
        return bool(self.processors or self.criteria)

    def rows(self, histories) -> np.ndarray:
        """(n, T) int64 of the rows' ids (rows of different lengths left-padded)."""
        if isinstance(histories, np.ndarray) and histories.ndim == 2:
            return histories.astype(np.int64, copy=False)
        rows = [np.asarray(h, dtype=np.int64) for h in histories]
        width = max((len(r) for r in rows), default=0)
        out = np.full((len(rows), width), self.pad, dtype=np.int64)
        for b, r in enumerate(rows):
            out[b, width - len(r):] = r
        return out

    def layout(self, prompt_lengths, padded=None) -> None:
        """The packed loop's prompts: their lengths, and the padded prompts as the user gave
        them (``[(ids, real length)]``; None: left-padded here)."""
        self.prompt_lengths = [int(n) for n in prompt_lengths]
        self.padded = padded

    def full_rows(self, every=None) -> np.ndarray:
        """(B, T) int64: every row of the packed loop as transformers holds it (the padded
        prompt, the new tokens, a finished row padded with the pad id to the step)."""
        every = self.every if every is None else every
        plen = self.prompt_lengths or [0] * len(every)
        new = [list(e)[n:] for e, n in zip(every, plen)]
        steps = max(len(t) for t in new)
        rows = []
        for b, tail in enumerate(new):
            head = list(self.padded[b][0]) if self.padded is not None \
                else list(every[b])[:plen[b]]
            rows.append([*head, *tail, *[self.pad] * (steps - len(tail))])
        return self.rows(rows)

    def process_rows(self, z: np.ndarray, rows) -> np.ndarray:
        """:meth:`process` of the ``rows`` still generating (``z`` their scores), the
        processors given the whole batch (:meth:`full_rows`; a finished row's scores 0)."""
        rows = np.asarray(rows)
        full = np.zeros((len(self.every), z.shape[1]), dtype=z.dtype)
        full[rows] = z
        return self.process(full, self.full_rows())[rows]

    def _in(self, ids: np.ndarray, scores):
        t = self._torch
        if t is None:
            return ids, scores
        return (t.from_numpy(np.ascontiguousarray(ids)),
                None if scores is None else t.from_numpy(np.ascontiguousarray(scores)))

    def process(self, z: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """``z`` (n, V) after every processor; float64 as skiff's chooser keeps it."""
        if not self.processors:
            return z
        ids_in, scores = self._in(ids, z.astype(np.float32))
        for proc in self.processors:
            scores = proc(ids_in, scores)
            if scores is None:
                raise ValueError(f"logits processor {proc!r} returned None: it returns the "
                                 "scores (edited or new)")
        out = _host(scores).astype(np.float64)
        if out.shape != z.shape:
            raise ValueError(f"logits processor returned scores of shape {out.shape}, "
                             f"expected {z.shape}")
        return out

    def stopped(self, ids: np.ndarray) -> np.ndarray:
        """(n,) bool: rows any criterion marks as done."""
        done = np.zeros(ids.shape[0], dtype=bool)
        if not self.criteria:
            return done
        ids_in, _ = self._in(ids, None)
        for crit in self.criteria:
            value = _host(crit(ids_in, None)).astype(bool)
            done |= np.broadcast_to(value.reshape(-1) if value.ndim else value, done.shape)
        return done

    def batch_stopper(self):
        """``stop_all(every, rows) -> bool`` for the packed loop without an eos: rows the
        criteria mark (given the whole batch, :meth:`full_rows` of ``every``) stay marked
        (transformers' ``unfinished &= ~criteria``) and keep generating; True once every
        row going on (``rows``) is marked."""
        halted = None

        def stop_all(every, rows) -> bool:
            nonlocal halted
            hits = self.stopped(self.full_rows(every))
            halted = hits if halted is None else halted | hits
            return bool(halted[np.asarray(rows)].all())

        return stop_all

    def row_stopper(self):
        """``stop_rows(every, rows) -> (n,) bool`` for the packed loop with an eos: the
        criteria given the whole batch once a step (:meth:`full_rows` of ``every``), the
        answer of the ``rows`` still generating."""
        def stop_rows(every, rows) -> np.ndarray:
            return self.stopped(self.full_rows(every))[np.asarray(rows)]

        return stop_rows


class MaxTime:
    """transformers' ``max_time``: every row is done once ``seconds`` have passed since
    ``generate`` began (checked after each step, as ``MaxTimeCriteria``)."""

    def __init__(self, seconds: float):
        import time

        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ValueError(f"max_time must be a number of seconds >= 0, got {seconds!r}")
        self.seconds, self._clock = float(seconds), time.time
        self.start = time.time()

    def __call__(self, input_ids, scores=None):
        return self._clock() - self.start > self.seconds


def with_max_time(criteria, options: dict):
    """``criteria`` with :class:`MaxTime` added when ``options`` (a generate call's other
    keywords) set ``max_time``; taken out of ``options``."""
    seconds = options.pop("max_time", None)
    if seconds is None:
        return criteria
    return [*_as_list(criteria, "stopping_criteria"), MaxTime(seconds)]
