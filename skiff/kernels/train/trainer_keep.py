"""Which checkpoints a run writes and keeps (round 41): a checkpoint at each epoch's end
(``checkpoint_every="epoch"``, transformers' ``save_strategy="epoch"``), the best
validation's checkpoint kept beside the newest ``keep_checkpoints`` (``keep_best=True``,
transformers' ``save_total_limit`` with ``metric_for_best_model``, which never deletes
``best_model_checkpoint``; Lightning's ``ModelCheckpoint(monitor=...)``), and the warning
of an early stopping that no validation before the last step can trigger.

The best checkpoint is chosen among checkpoints written at a step that validated (as
transformers requires ``save_steps`` to be a round multiple of ``eval_steps``): its score is
that validation's ``monitor`` value (the ranks' mean), in ``monitor``'s ``mode``. The scores
go into ``best.json`` in the checkpoint folder (rank 0), which a resume reads back and a user
reads to pick a checkpoint: ``{"monitor", "mode", "step", "value", "checkpoint", "scores"}``.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path

from skiff.kernels.backend.report import NullReporter

__all__ = ["check_cadence", "checkpoint_due", "BestCheckpoints", "warn_no_early_validation",
           "warn_unscored", "BEST_FILE", "keep_best_count"]

BEST_FILE = "best.json"


def check_cadence(every):
    """``checkpoint_every``: a positive number of optimizer steps, ``"epoch"`` (each epoch's
    end) or None; anything else refused, naming both."""
    if every is None or every == "epoch":
        return every
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValueError(f"checkpoint_every is a positive number of optimizer steps or "
                         f"'epoch' (a checkpoint at each epoch's end), got {every!r}")
    return every


def keep_best_count(keep_best) -> int:
    """``keep_best``: False/None/0 (off), True (the best one) or K >= 1 (the K best:
    Lightning's ``save_top_k=K``); anything else refused, naming what it takes."""
    if keep_best is None or keep_best is False:
        return 0
    if keep_best is True:
        return 1
    if isinstance(keep_best, int) and not isinstance(keep_best, bool) and keep_best >= 0:
        return int(keep_best)
    raise ValueError(f"keep_best is True (the best validation's checkpoint) or a number K "
                     f"of best checkpoints to keep (Lightning's save_top_k=K), got "
                     f"{keep_best!r}")


def checkpoint_due(every, run) -> bool:
    """A checkpoint after this step (the last step's is written by the run's end anyway)?"""
    if not every or run.step >= run.total:
        return False
    if every == "epoch":
        return run.epoch_done
    return run.step % every == 0


def _steps_an_epoch(trainer, run) -> int:
    return max(1, -(-len(run.loader) // trainer.grad_accum))


def warn_no_early_validation(trainer, run) -> str | None:
    """Early stopping in a run whose validation cadence (``eval_every``, else each epoch's
    end) gives no validation before its last step: its patience can never run out, so the
    run trains every step and early stopping only restores the one validation's weights.
    Said once (the log; a script's warning; returned for the result's notes), naming the
    cadence and the run's steps."""
    if trainer.early_stopping is None or run.val_dataset is None or run.step >= run.total:
        return None
    every = trainer.eval_every or _steps_an_epoch(trainer, run)
    first = (run.step // every + 1) * every  # the next validation after this step
    if first < run.total:
        return None
    what = (f"eval_every={trainer.eval_every} (--eval-every) validates every "
            f"{trainer.eval_every} steps" if trainer.eval_every else
            f"the validation comes at each epoch's end ({every} steps an epoch)")
    msg = (f"early_stopping={trainer.early_stopping} (--early-stop) cannot stop this run "
           f"early: {what}, and the run ends at step {run.total}, so it validates only "
           f"after its last step; give eval_every below {run.total - run.step} "
           "(--eval-every N) to validate during the run"
           + ("" if trainer.eval_every else ", or more epochs"))
    trainer.reporter.log(msg, level="warning")
    if getattr(trainer.reporter, "rank", 0) == 0:
        if trainer.verbose:
            print(msg, flush=True)
        elif type(trainer.reporter) is NullReporter:  # a script: nowhere else to say it
            warnings.warn(msg, UserWarning, stacklevel=4)  # the train() call
    return msg


def warn_unscored(trainer, run) -> str | None:
    """``keep_best`` whose checkpoints fall between validations (``checkpoint_every`` not a
    multiple of the validation cadence: ``eval_every``, else an epoch's steps): those are
    no candidates for the best (transformers refuses ``save_steps`` that are not a round
    multiple of ``eval_steps`` with ``load_best_model_at_end``). Said once, with the
    cadences; None when every checkpoint is scored."""
    every = trainer.checkpoint_every
    if not trainer.keep_best or not every or run.step >= run.total:
        return None
    epoch = _steps_an_epoch(trainer, run)
    saves = epoch if every == "epoch" else every
    checks = trainer.eval_every or epoch
    if saves % checks == 0:
        return None
    saving = "each epoch's end" if every == "epoch" else f"every {every} steps"
    checking = (f"every {checks} steps (eval_every)" if trainer.eval_every
                else f"at each epoch's end ({epoch} steps)")
    msg = (f"keep_best scores a checkpoint by the validation at its step: checkpoints "
           f"{saving} and validations {checking} meet only every "
           f"{saves * checks // math.gcd(saves, checks)} steps (and at the last), so the "
           f"others are no candidates for the best; give checkpoint_every a multiple of "
           f"{checks} (--checkpoint-every)")
    trainer.reporter.log(msg, level="warning")
    if getattr(trainer.reporter, "rank", 0) == 0 and type(trainer.reporter) is NullReporter:
        warnings.warn(msg, UserWarning, stacklevel=4)  # the train() call
    return msg


class BestCheckpoints:
    """``keep_best``: the scores of the checkpoints written at a validated step, and the
    rotation that keeps the newest ``keep`` plus the best one (rank 0 removes the others)."""

    def __init__(self, folder, keep: int | None, monitor: str, mode: str, *, resume: bool,
                 top: int = 1):
        self.folder, self.keep, self.top = Path(folder), keep, max(1, int(top))
        self.monitor, self.mode = monitor, mode
        self.scores: dict[int, float] = {}
        if resume:  # a new run into the folder: an earlier run's scores are not its own
            self._read()

    def _read(self) -> None:
        """A resume's scores so far (``best.json`` of the same monitor and mode)."""
        try:
            saved = json.loads((self.folder / BEST_FILE).read_text())
        except (OSError, ValueError):
            return
        if isinstance(saved, dict) and saved.get("monitor") == self.monitor and \
                saved.get("mode") == self.mode and isinstance(saved.get("scores"), dict):
            self.scores = {int(k): float(v) for k, v in saved["scores"].items()}

    def ranked(self, present=None) -> list[int]:
        """The scored steps (of the checkpoints ``present``, when given), best first; ties
        go to the earlier step, as early stopping's "better" is strict."""
        steps = [s for s in sorted(self.scores) if present is None or s in present]
        sign = 1.0 if self.mode == "min" else -1.0
        return sorted(steps, key=lambda s: (sign * self.scores[s], s))

    def best_step(self, present=None) -> int | None:
        """The step of the best score (of the checkpoints ``present``, when given)."""
        ranked = self.ranked(present)
        return ranked[0] if ranked else None

    def note(self, step: int, value) -> None:
        """This checkpoint's score (None: no validation at its step, not a candidate)."""
        if value is not None:
            self.scores[int(step)] = float(value)
        else:
            self.scores.pop(int(step), None)  # a step written again without a validation

    def rotate(self, root: bool) -> str | None:
        """On ``root``: remove the checkpoints beyond the newest ``keep`` except the best
        one, and write ``best.json``; return the best checkpoint's path (every rank)."""
        from .checkpoint import list_checkpoints
        from .parallel.checkpoint import list_sharded, remove_checkpoint

        def step_of(path: Path) -> int:
            return int(path.name.split("-")[1].split(".")[0])

        found = sorted(((step_of(p), p) for p in list_checkpoints(self.folder)
                        + list_sharded(self.folder)), key=lambda sp: sp[0])
        present = {s for s, _ in found}
        top = set(self.ranked(present)[:self.top])  # keep_best=K: the K best (save_top_k)
        best = self.best_step(present)
        if root:
            newest = {s for s, _ in found[-self.keep:]} if self.keep else present
            for step, path in found:
                if step in newest or step in top:
                    continue
                if path.is_dir():
                    remove_checkpoint(path)
                else:
                    path.unlink(missing_ok=True)
                present.discard(step)
            self.scores = {s: v for s, v in self.scores.items() if s in present}
            self._write(best, dict(found).get(best))
        path = dict(found).get(best)
        return None if path is None else str(path)

    def _write(self, best, path) -> None:
        record = {"monitor": self.monitor, "mode": self.mode, "step": best,
                  "value": None if best is None else self.scores.get(best),
                  "checkpoint": None if path is None else Path(path).name,
                  "scores": {str(s): v for s, v in sorted(self.scores.items())},
                  # keep_best=K: the K best kept, best first (round 41 h9)
                  "top_k": self.top, "best_steps": self.ranked()[:self.top]}
        tmp = self.folder / f".{BEST_FILE}.tmp"
        tmp.write_text(json.dumps(record, indent=1))
        os.replace(tmp, self.folder / BEST_FILE)
