"""What a :class:`.trainer.Trainer` checkpoint holds and how a run is restored from one:
model, optimizer (through the strategy: a ZeRO rank saves its slice), schedule, random
state, data position, histories, the plan and the float32 masters of mixed precision. A
mixin of the Trainer.

A run whose base is frozen (a LoRA fine-tune) stores only the parameters that train, with a
record of the base they go with (:mod:`.trainer_frozen`); resuming checks that record against
the model. A checkpoint that holds the whole model (any written before round 28) still
loads."""

from __future__ import annotations

import math
import re
import sys
import warnings
from pathlib import Path

import numpy as np

from .core import random as train_random
from .trainer_frozen import check_frozen, frozen_names, frozen_record, trainable_model_state
from .trainer_schedule import (
    other_schedule,
    restore_list_settings,
    schedule_name,
    schedule_settings,
)

__all__ = ["TrainerState"]


WHOLE_MODEL = ("single", "dp", "zero1", "zero2")  # strategies whose ranks hold every weight
# split layouts whose checkpoints keep each rank's slice of early stopping's best weights
# (parallel/hybrid.py's and ernie_experts.py's writers: per-rank state, read back by the
# same layout); ep: a rank's dense weights and its own experts
PER_RANK_BEST = ("tp", "pp", "hybrid", "ep")
HISTORY_CHUNKS = 32  # side files of the history a checkpoint lists before they are joined
_CHUNK = re.compile(r"^history-(\d{8,})-(\d{8,})\.npz$")


def _chunk_span(name: str):
    """``(start, end)`` rows of a history side file's name; None for another name."""
    found = _CHUNK.match(name) if isinstance(name, str) else None
    return (int(found.group(1)), int(found.group(2))) if found else None


def _history_writer(strategy, reporter) -> bool:
    """Whether this process writes the history side files: the trainer's own rank 0 (its
    strategy's rank; a script's own reporter may say rank 0 on every rank), so one writer
    per training, also for a one-process training run on rank 1 of an MPI world (it wrote
    none when the MPI world's rank decided: its resume lost the history before it)."""
    rank = getattr(strategy, "rank", None)
    if isinstance(rank, int):
        return rank == 0
    return int(getattr(reporter, "rank", 0) or 0) == 0


def _global_rngs() -> dict:
    """numpy's, Python's and (imported) torch's global generators, which a user's dataset draws its
    augmentations from (``np.random.rand()`` in ``__getitem__``): transformers' checkpoints
    keep them (``rng_state.pth``), so a resumed run draws what the uninterrupted one drew;
    skiff's kept its own generator only, and a resume after step 5 was 1e-2 off in loss
    from step 6 on (round 42 h13). One process: ranks draw their own."""
    import random

    npst = np.random.get_state(legacy=False)
    version, inner, gauss = random.getstate()
    kept = {"numpy": {"key": np.asarray(npst["state"]["key"], np.uint32),
                      "pos": int(npst["state"]["pos"]), "has_gauss": int(npst["has_gauss"]),
                      "gauss": float(npst["gauss"])},
            "python": {"version": int(version), "state": np.asarray(inner, np.uint64),
                       "gauss": None if gauss is None else float(gauss)}}
    torch = sys.modules.get("torch")  # torchvision's transforms draw from torch's (CPU)
    if torch is not None and hasattr(torch, "get_rng_state"):
        kept["torch"] = np.asarray(torch.get_rng_state().numpy(), np.uint8).copy()
    return kept


def _draws_nothing(dataset) -> bool:
    """Whether ``dataset`` is skiff's own arrays or text (a table too), or a
    ``TensorDataset`` (skiff's, torch's), which draw nothing from the global generators, a
    ``Subset`` of them included, or behind a loader's sampler (a ``WeightedRandomSampler``,
    torch's generator's order: drawn from skiff's seed or the user's generator, the same on
    any world size; round 43 h10: such a loader's resume said the line)."""
    from .data import ArrayDataset, Subset, TextDataset
    from .data_collate import Drawn, Sampled

    while isinstance(dataset, (Subset, Sampled, Drawn)):
        dataset = dataset.dataset
    if type(dataset).__name__ == "TensorDataset" and type(dataset).__module__.split(".")[0] in (
            "skiff", "torch"):
        return True
    return isinstance(dataset, (ArrayDataset, TextDataset))


def _set_global_rngs(saved) -> None:
    """Put back what :func:`_global_rngs` kept (a checkpoint without it: nothing)."""
    import random

    if not isinstance(saved, dict):
        return
    npst = saved.get("numpy")
    if isinstance(npst, dict) and "key" in npst:
        np.random.set_state({"bit_generator": "MT19937",
                             "state": {"key": np.asarray(npst["key"], np.uint32),
                                       "pos": int(npst["pos"])},
                             "has_gauss": int(npst["has_gauss"]),
                             "gauss": float(npst["gauss"])})
    torch = sys.modules.get("torch")
    if torch is not None and saved.get("torch") is not None:
        torch.set_rng_state(torch.from_numpy(np.array(saved["torch"], np.uint8)))
    py = saved.get("python")
    if isinstance(py, dict) and "state" in py:
        random.setstate((int(py["version"]), tuple(int(v) for v in np.asarray(py["state"])),
                         py.get("gauss")))


class TrainerState:
    """The checkpoint state of a :class:`.trainer.Trainer` run."""

    def _state(self, step, loader, history, val_history, early=None) -> dict:
        st = self.strategy
        model_state = self.model.state_dict()
        frozen = frozen_names(self.model) if getattr(st, "frozen_base_checkpoints",
                                                     False) else []
        if frozen:  # the base never changes: what identifies it, not a copy of it
            model_state = trainable_model_state(self.model, model_state, frozen)
        state = {
            "model": model_state,
            "optimizer": st.optimizer_state_dict(self.optimizer),
            "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
            "rng": {"train": train_random.get_state(self.rng), **self._global_rngs_kept()},
            "data": loader.state_dict(),
            "step": step,
            "history": self._history_for_checkpoint(history),
            "val_history": val_history,
            "plan": {"strategy": self.plan.get("strategy"), "world_size": st.world_size},
            "precision": None if self.mixed is None else self._mixed_state(),
        }
        reads = getattr(self, "_epoch_reads", None)
        kept = None if reads is None else reads.state()
        if kept is not None:  # a stateful stream's state at its pass's start (round 45 h5)
            state["stream"] = kept
        if frozen:
            state["frozen"] = frozen_record(self.model, frozen)
        if st.name in ("single", "dp"):  # moments per parameter, by the optimizer's index
            from .parallel.sliced_state import optimizer_order

            named = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
            if self.mixed is not None and not self.mixed.owned:  # it steps the masters
                name_of = {id(p): n for n, p in named}
                named = [(name_of.get(id(p)), m)
                         for p, m in zip(self.mixed.params, self.mixed.master)]
            order = optimizer_order(self.optimizer, [n for n, _ in named],
                                    [p for _, p in named])
            if order is not None and all(order):
                # an instance's groups (decay, no decay) step the parameters in their own
                # order: a layout that reads the moments by name (tp, ep) took them by the
                # model's order and put them on the wrong parameters (round 42 h5)
                state["optimizer_names"] = list(order)
        # what a resume checks it goes on with (round 39): AdamW's moments loaded into SGD
        # trained on silently; another batch size or accumulation was not said
        state["settings"] = {"optimizer": type(self.optimizer).__name__,
                             "grad_accum": int(getattr(self, "grad_accum", 1)),
                             # round 39 (h14): another schedule on resume was not said
                             "schedule": schedule_name(self.scheduler)}
        states = self.callbacks.state_dict() if self.callbacks else None
        if states and st.name in WHOLE_MODEL:  # stateful callbacks (an EMA)
            state["callbacks"] = states
        elif states and st.name in PER_RANK_BEST:  # each rank's own (an EMA of its slices)
            from .parallel.checkpoint import PerRank

            state["callbacks"] = {key: PerRank(value) for key, value in states.items()}
            state["callbacks_layout"] = self._split_layout()
        if early is not None:  # early stopping's count and best weights (tp, pp, ep: per rank)
            state["early"] = early.state_dict(step, whole=st.name in WHOLE_MODEL,
                                              per_rank=st.name in PER_RANK_BEST)
            kept = state["early"].get("weights")
            if frozen and isinstance(kept, dict):  # the base never changes: resume fills it
                state["early"]["weights"] = trainable_model_state(self.model, kept, frozen)
                state["early"]["base_left_out"] = True
        return state

    def _global_rngs_kept(self) -> dict:
        """numpy's and Python's generators (:func:`_global_rngs`): one process's as they
        are; on several ranks, each rank's own (read back by the same world size only)."""
        if self.strategy.world_size == 1:
            return _global_rngs()
        from .parallel.checkpoint import PerRank

        return {"ranks": PerRank(_global_rngs())}

    def _history_for_checkpoint(self, history: list) -> dict:
        """The rows since the last checkpoint as a side file of the checkpoint folder
        (written once, by rank 0), and what the checkpoint stores instead of the whole
        history: the side files so far (round 34; :func:`.checkpoint.write_history_chunk`).

        The side files are merged as a binary counter's bits (round 42 h13): the new rows
        and every last file no longer than them go into one file, so a checkpoint lists
        about log2(checkpoints) files and each row is written about log2 times. They were
        joined only at 32 files, so 25 checkpoints kept 25 files (``keep_checkpoints=3``:
        all listed by the newest); now 7. The files no checkpoint lists are removed at each
        merge where checkpoints rotate out."""
        from .checkpoint import history_chunk_name, history_ref, sweep_history, write_history_chunk

        log = getattr(self, "_history_log", None)
        if log is None or log["rows"] is not history or log["n"] > len(history):
            log = {"rows": history, "n": 0, "chunks": []}  # a new run's history
        root = _history_writer(self.strategy, self.reporter)
        start = log["n"]
        merged = []
        if len(history) > log["n"]:
            if len(log["chunks"]) >= HISTORY_CHUNKS:
                merged, log["chunks"] = log["chunks"], []
                start = 0
            while log["chunks"]:
                span = _chunk_span(log["chunks"][-1])
                if span is None or span[1] != start or span[1] - span[0] > len(history) - start:
                    break
                merged.append(log["chunks"].pop())
                start = span[0]
        rotating = self.keep_checkpoints is not None or bool(getattr(self, "keep_best", None))
        dropped = log.setdefault("dropped", set())  # merged away, still listed by a kept one
        if rotating:
            dropped.update(merged)
        if root and not log.get("swept"):
            # the side files no checkpoint in the folder lists are removed: at a run's (or a
            # resume's) first checkpoint, the files of a run before it into the same folder
            # and of its own chunks before a resume; after a merge, those of the merged
            # files whose checkpoints rotated out (:meth:`_sweep_merged`; round 34: at each
            # join of 32 only)
            sweep_history(self.checkpoint_dir)
            log["swept"] = True
        if len(history) > log["n"]:
            if root:
                name = write_history_chunk(self.checkpoint_dir, history[start:], start)
            else:  # the same name: the other ranks' checkpoints list it too
                name = history_chunk_name(start, len(history))
            log["chunks"].append(name)
            log["n"] = len(history)
        self._history_log = log
        return history_ref(log["chunks"], log["n"])

    def _sweep_merged(self) -> None:
        """After a checkpoint's rotation: remove the merged-away side files no checkpoint
        lists any more (rank 0; nothing to do while none waits)."""
        from .checkpoint import sweep_history

        log = getattr(self, "_history_log", None)
        dropped = None if log is None else log.get("dropped")
        if not dropped or not _history_writer(self.strategy, self.reporter):
            return
        sweep_history(self.checkpoint_dir)
        dropped.intersection_update(
            [n for n in dropped if (Path(self.checkpoint_dir) / n).is_file()])

    def _restored_history(self, state: dict) -> list:
        """The history rows of a checkpoint's state (a list in checkpoints before round 34,
        else its side files' rows), and the side files the next checkpoints go on from."""
        from .checkpoint import is_history_ref, read_history

        saved, problem = state.get("history"), state.get("history_note")
        ref = state.get("history_ref")  # read already (load_checkpoint)
        if is_history_ref(saved):
            ref = saved
            saved, problem = read_history(self.checkpoint_dir, saved)
        if problem:
            self.reporter.log(f"{problem}: the run goes on, its history from here on",
                              level="warning")
            ref = None
        rows = list(saved or [])
        chunks = list(ref["chunks"]) if is_history_ref(ref) and ref.get("n") == len(rows) \
            else []  # an older checkpoint's whole history: one side file at the next save
        self._history_log = {"rows": rows, "n": len(rows) if chunks else 0, "chunks": chunks}
        return rows

    def _mixed_state(self) -> dict:
        """The masters and scaler, with the masters' parameter names (one full array per
        parameter: not ZeRO's slices), so that a float32 run resumed from it takes them."""
        state = self.mixed.state_dict()
        if not self.mixed.owned:
            names = {id(p): n for n, p in self.model.named_parameters()}
            state["names"] = [names.get(id(p), "") for p in self.mixed.params]
        return state

    def _save(self, step, loader, history, val_history, early=None):
        run_dir = getattr(self.reporter, "run_dir", None)
        if run_dir is not None and Path(self.checkpoint_dir).parent == Path(run_dir) \
                and not Path(run_dir).is_dir():  # the writer makes parents: not a run folder
            raise FileNotFoundError(f"{run_dir}: the run folder was removed while the job "
                                    f"ran; the checkpoint of step {step} is not written")
        path = self.strategy.save_checkpoint(
            self.checkpoint_dir, self._state(step, loader, history, val_history, early),
            step=step,
            keep=self.keep_checkpoints)
        if self.keep_checkpoints is not None:  # rotated: keep_best's rotates in _checkpoint
            self._sweep_merged()
        if path is not None:
            self.reporter.log(f"checkpoint {Path(path).name} at step {step}")
            self.reporter.info(checkpoint=str(path), checkpoint_step=step)
        return path

    _PLANNED = ("warmup_steps", "total_steps", "min_lr_ratio")  # a built-in schedule's

    def _replan_schedule(self, planned: tuple, step: int) -> None:
        """The Trainer's own schedule ("cosine", "linear") goes on as this call plans it
        (``planned``: its warm-up, total and floor, :data:`_PLANNED`), as transformers'
        Trainer resumes (its schedule made for the new total, the step count restored): a
        run of 5 steps resumed with ``steps=12`` takes the lrs of a 12-step run from step 6
        on. The checkpoint's schedule (restored as torch restores a scheduler's state) ended
        at step 5, and the 7 steps after ran at the floor, ``min_lr_ratio`` of the lr,
        without a word (round 37). The same settings as before: nothing changes."""
        sched = self.scheduler
        saved = tuple(getattr(sched, k) for k in self._PLANNED)
        if saved == planned:
            return
        for key, value in zip(self._PLANNED, planned):
            setattr(sched, key, value)
        sched._apply()
        said = ", ".join(f"{k} {a} (the checkpoint's {b})"
                         for k, a, b in zip(self._PLANNED, planned, saved) if a != b)
        self.reporter.log(
            f"the learning-rate schedule is this call's: {said}; from step {step + 1} on, "
            f"the lrs of a {planned[1]}-step run (lr {sched.get_last_lr()[0]:.3g} at step "
            f"{step + 1})", level="info")

    def _check_settings(self, state, loader) -> None:
        """A resume with another optimizer is refused (its state is not this optimizer's:
        AdamW's moments went into SGD, which trained on with AdamW's lr and weight decay,
        silently); another batch size or gradient accumulation is said (transformers warns
        of another batch size too): the epoch goes on after the rows it had seen."""
        saved = state.get("settings") or {}
        name, here = saved.get("optimizer"), type(self.optimizer).__name__
        if name and name != here:
            raise ValueError(
                f"the checkpoint in {self.checkpoint_dir} holds {name}'s optimizer state "
                f"and this run's optimizer is {here}: resume with {name}, or "
                f"start a run of {here} in another checkpoint_dir from the checkpoint's "
                "weights (model.load_state_dict of its 'model')")
        changes = []
        old_batch = (state.get("data") or {}).get("batch_size")
        if old_batch and int(old_batch) != int(loader.batch_size):
            changes.append(f"batch_size {loader.batch_size} (the checkpoint's run had "
                           f"{old_batch})")
        old_accum = saved.get("grad_accum")
        here_accum = int(getattr(self, "grad_accum", 1))
        if old_accum and int(old_accum) != here_accum:
            changes.append(f"grad_accum {here_accum} (the checkpoint's run had {old_accum})")
        if changes:
            said = (f"resumed with {' and '.join(changes)}: the epoch goes on after the "
                    "rows it had seen, and the steps from here are not the uninterrupted "
                    "run's")
            self._say_resume(said)

    def _end_at_the_epochs(self, run, state) -> None:
        """``train(epochs=E)`` resumed with another batch size or ``grad_accum`` ends where
        epoch E ends: the total was E x this call's steps an epoch, as if the checkpoint's
        steps had been taken at this size (round 44 h5: 2 steps of 8 rows resumed at batch
        4 over 21 rows and ``epochs=3`` ran 18 steps, ending at epoch 3.33, rows 0-7 of a
        fourth epoch trained). Steps left: the batches the epoch has left, then the whole
        epochs to E; the Trainer's own schedule is planned to that total."""
        saved = (state.get("settings") or {}).get("grad_accum")
        old_batch = (state.get("data") or {}).get("batch_size")
        loader, accum = run.loader, int(getattr(self, "grad_accum", 1))
        if run.epochs is None or ((not old_batch or int(old_batch) == loader.batch_size) and
                                  (not saved or int(saved) == accum)):
            return
        per_epoch = max(1, -(-len(loader) // accum))
        done = loader.epoch * per_epoch + -(-loader.position // accum)
        total = run.step + max(0, math.ceil(run.epochs * per_epoch - 1e-9) - done)
        if total == run.total:
            return
        run.total = run.resumed["total"] = total
        sched = self.scheduler
        if isinstance(self.schedule, str) and sched is not None and \
                hasattr(sched, "total_steps"):
            sched.total_steps = total
            sched._apply()
        self.reporter.log(f"epochs={run.epochs:g} end at step {total} at this batch size "
                          f"({run.step} done)", level="info")

    def _replan_stream(self, run, *, resumed: bool = False) -> None:
        """A stream's pass of another length than the one before (round 45 h5): an epoch is
        one pass however long, as torch's loop takes it (it was refused: the run's steps
        were planned from the first pass). ``train(epochs=E)`` ends where epoch E ends: this
        pass's steps, then the epochs left at this pass's length (re-planned at each pass);
        the Trainer's own schedule is planned to that total. ``steps=N`` is left alone."""
        reads, loader = self._epoch_reads, run.loader
        if reads is None or run.epochs is None:
            return
        accum = int(getattr(self, "grad_accum", 1))
        per = max(1, -(-len(loader) // accum))
        start = run.step - -(-loader.position // accum)  # the steps before this epoch's
        total = start + max(1, math.ceil((run.epochs - loader.epoch) * per - 1e-9))
        if total == run.total:
            return
        run.total = total
        if run.resumed is not None:
            run.resumed["total"] = total
        sched = self.scheduler
        if isinstance(self.schedule, str) and sched is not None and \
                hasattr(sched, "total_steps"):
            sched.total_steps = total
            sched._apply()
        self.reporter.log(
            f"epoch {loader.epoch + 1}'s pass of the stream yielded {len(reads.items)} "
            f"samples ({per} steps; the first pass had {reads.first}): an epoch is one pass "
            f"however long, as torch's loop takes it; epochs={run.epochs:g} now end at step "
            f"{total}" + (" (resumed)" if resumed else ""), level="info")

    def _agree_pass(self, comm, epoch: int, n: int) -> int:
        """The samples of epoch ``epoch``'s pass every data-parallel rank reads: the shortest
        rank's count (round 46 h7). A stream whose passes differ over the ranks (a filter
        that depends on the rank, a length drawn from each rank's generator) planned other
        ends per rank from round 45 on, and the longer rank waited in the all-reduce of a
        step the other never took. As ``DistributedSampler(drop_last=True)`` and a
        ``zip`` of the ranks' loaders, each rank trains on the shortest pass's count of its
        samples and leaves the rest (torch's ``Join`` would let the longer ranks go on
        alone, stepping with the others' zero gradients); said once a pass. A pass of no
        samples on a rank is refused on every rank."""
        counts = [int(c) for c in comm.allgather(int(n))]
        least = min(counts)
        each = ", ".join(f"rank {r}: {c}" for r, c in enumerate(counts))
        if least == 0:
            exc = ValueError(f"the dataset yielded no samples in epoch {epoch + 1} on a rank "
                             f"({each}): a pass must yield samples on every rank")
            exc.all_ranks = True
            raise exc
        if max(counts) != least:
            self.reporter.log(
                f"epoch {epoch + 1}'s passes of the stream differ over the ranks ({each} "
                f"samples): every rank trains on {least} (the shortest pass; the rest of the "
                "longer ones left, as DistributedSampler(drop_last=True) cuts a data set), "
                "so the ranks take the same steps", level="warning")
        return least

    def _say_resume(self, said: str) -> None:
        """A warning in a job's log and, in a script (nowhere else to say it), a
        ``UserWarning`` on rank 0."""
        self.reporter.log(said, level="warning")
        from skiff.kernels.backend.report import NullReporter

        if type(self.reporter) is NullReporter and getattr(self.reporter, "rank", 0) == 0:
            warnings.warn(said, UserWarning, stacklevel=3)

    def _restore(self, state, loader):
        self._check_settings(state, loader)
        self._load_model_state(state)
        self.strategy.load_optimizer_state_dict(self.optimizer, state["optimizer"])
        own = isinstance(self.schedule, str)  # "cosine", "linear": made for this call
        here = schedule_settings(self.scheduler)  # as this call made it
        if self.scheduler is not None and state.get("scheduler") is not None:
            planned = tuple(getattr(self.scheduler, k) for k in self._PLANNED) if own else None
            self.scheduler.load_state_dict(state["scheduler"])
            if not own:  # a MultiStepLR's milestones are the checkpoint's, as torch's are
                restore_list_settings(self.scheduler, state["scheduler"])
            if own:
                self._replan_schedule(planned, int(state["step"]))
        # another schedule than the checkpoint's went on without a word (round 39, h14)
        said = other_schedule((state.get("settings") or {}).get("schedule"),
                              state.get("scheduler"), self.scheduler, here, own=own,
                              step=state.get("step"))
        if said:
            self._say_resume(said)
        if self.mixed is not None and state.get("precision") is not None:
            self.mixed.load_state_dict(state["precision"])  # the masters: the exact weights
        elif self.mixed is not None:  # a float32 checkpoint: the masters take its weights
            self._masters_from(state["model"])
        elif state.get("precision") is not None:  # mixed, resumed in float32: the masters
            self._weights_from_masters(state["precision"])
        train_random.set_state(state["rng"]["train"], self.rng)
        self._global_rngs_back(state, getattr(loader, "dataset", None))
        stream = getattr(loader, "stream", None)
        if stream is not None:  # a stream: the checkpoint's epoch's pass, of its own length
            stream.pending = state.get("stream")  # a stateful dataset's, put back first
            stream.to(int((state.get("data") or {}).get("epoch", 0)), replan=False)
            state = {**state, "data": self._pass_read_again(state["data"], stream, loader)}
        loader.load_state_dict(state["data"])
        self._restore_callbacks(state)
        return int(state["step"]), self._restored_history(state), \
            list(state.get("val_history", []))

    def _pass_read_again(self, data: dict, stream, loader) -> dict:
        """The checkpoint's data position on a stream's pass read again at resume (round 45
        h5): one of another length than the checkpoint's run read (a stream drawing its
        samples from its own state, without ``state_dict``) was refused "the checkpoint's
        data position is for 13 items, this dataset has 10". Now the new pass is taken, its
        first batches skipped as far as they go (transformers skips as many batches of
        whatever the pass yields), and said."""
        saved = data.get("num_items")
        if saved is None or int(saved) == len(stream.items):
            return data
        batch = max(1, int(data.get("batch_size") or loader.batch_size))
        per = -(-len(stream.items) // batch)
        self._say_resume(
            f"resumed on a stream whose epoch {int(data.get('epoch', 0)) + 1} pass yielded "
            f"{len(stream.items)} samples where the checkpoint's run read {saved}: its first "
            f"{min(int(data.get('position', 0)), per)} batches are skipped and the epochs "
            "re-planned, but the samples are not the uninterrupted run's (a stream that draws "
            "from its own state: give it state_dict() and load_state_dict(), torchdata's "
            "StatefulDataLoader convention, and the checkpoint keeps its state)")
        stream.resized = True
        return {**data, "num_items": len(stream.items),
                "position": min(int(data.get("position", 0)), per)}

    def _global_rngs_back(self, state, dataset=None) -> None:
        """numpy's, Python's and torch's generators as the checkpoint kept them, where it was
        written on this world size; from another one (2 ranks resumed on 1, or 1 on 2) they
        cannot be (each rank drew its own) and the run went on from the script's seeds
        without a word, the reshard line saying "RNG restored" (round 43 h5): now said,
        as transformers says it ("reproducibility is not guaranteed")."""
        saved = state["rng"]
        here = self.strategy.world_size
        mine = saved if here == 1 else saved.get("ranks")
        if isinstance(mine, dict) and "numpy" in mine:
            _set_global_rngs(mine)
            return
        if "numpy" not in saved and "ranks" not in saved:
            return  # an older checkpoint: skiff's own generator was all it kept
        if _draws_nothing(dataset):  # arrays, a table, a text: no augmentations to say
            return
        plan = state.get("plan") if isinstance(state.get("plan"), dict) else {}
        there = int(plan.get("world_size") or (1 if "numpy" in saved else 0))
        saved_on = f"{there} ranks" if there > 1 else "one process" if there == 1 \
            else "another world size"
        if there == here:  # the same world in another layout (a split model's per rank)
            saved_on = f"{saved_on} in another layout"
        self._say_resume(
            f"the global random generators (numpy's, Python's, torch's) were saved on "
            f"{saved_on}, one per process, and are not put back on "
            f"{f'{here} ranks' if here > 1 else 'one process'}: a dataset that draws its "
            f"augmentations from them (np.random, random, torch.rand in __getitem__) draws "
            f"others than the run would have; skiff's own generator, the data position and "
            f"the weights are restored. Resume on {saved_on} to draw the same")

    def _restore_callbacks(self, state) -> None:
        """The stateful callbacks' states (an EMA of the weights) from the checkpoint; one
        it has none for (another callback then, or a split layout, which keeps none) starts
        afresh, said in the log."""
        if not self.callbacks:
            return
        saved, why = state.get("callbacks"), ""
        kept_for, here = state.get("callbacks_layout"), self._split_layout()
        if saved and kept_for != here:  # a split model's states are its ranks' own slices
            saved, why = None, (f" (it kept them for {kept_for or 'the whole model'}, this "
                                f"run is {here or 'the whole model on every rank'})")
        # another world size gives each rank's state as None
        saved = {key: value for key, value in (saved or {}).items() if value is not None}
        fresh = self.callbacks.load_state_dict(saved)
        if fresh:
            said = (f"the checkpoint holds no state of callback(s) {', '.join(fresh)}{why}: "
                    "they start afresh")
            self.reporter.log(said, level="warning")
            from skiff.kernels.backend.report import NullReporter

            # a script's resume=True: nowhere else to say it (its EMA restarted silently)
            if type(self.reporter) is NullReporter and getattr(self.reporter, "rank", 0) == 0:
                warnings.warn(said, UserWarning, stacklevel=2)

    def _split_layout(self) -> str | None:
        """The layout of a model split over the ranks (tp, pp, ep) whose ranks' callback
        states are their own, as a checkpoint records it; None where every rank holds the
        whole model."""
        st = self.strategy
        if st.name not in PER_RANK_BEST:
            return None
        choice = self.plan.get("choice") or {}
        dims = ",".join(f"{d}={choice[d]}" for d in ("dp", "tp", "pp", "ep") if d in choice)
        return f"{st.name} on {st.world_size} ranks" + (f" ({dims})" if dims else "")

    def _load_model_state(self, state) -> None:
        """The checkpoint's weights into the model: all of them, or (a run whose base was
        frozen) the trained ones, after checking that this model's frozen base is the one
        they were trained on."""
        record = state.get("frozen")
        if record is None:  # the whole model
            self.model.load_state_dict(state["model"])
            return
        check_frozen(self.model, record)
        got = self.model.load_state_dict(state["model"], strict=False)
        frozen = set(frozen_names(self.model))
        missing = [k for k in got["missing"] if k not in frozen]
        if missing or got["unexpected"]:
            raise ValueError(f"the checkpoint's trained parameters do not fit this model "
                             f"(missing: {missing[:3]}, unexpected: {got['unexpected'][:3]}): "
                             "apply the same adapters (apply_lora with the same options) "
                             "before resuming")

    def _weights_from_masters(self, mixed: dict) -> None:
        """A float32 run resumed from a mixed-precision checkpoint takes its float32 masters
        (by name; the 16-bit weights are their rounding: 1e-4 off in fp16), as torch, whose
        parameters stay float32 under autocast, resumes; ZeRO's flat slice of masters goes
        into ZeRO's flat slice. Otherwise (an older checkpoint without names) the weights stay
        the checkpoint's 16-bit ones, widened."""
        names, masters = mixed.get("names"), mixed.get("master")
        shard = getattr(self.strategy, "shard", None)  # ZeRO: this rank's flat float32 slice
        if not names and shard is not None and masters is not None and len(masters) == 1 \
                and np.asarray(masters[0]).shape == tuple(shard.shape):
            shard._data[...] = shard.xp.asarray(np.asarray(masters[0], np.float32))
            self.strategy.gather_params()  # collective: every rank resumes the same way
            return
        if not names or masters is None or len(names) != len(masters):
            return
        params = dict(self.model.named_parameters())
        for name, arr in zip(names, masters):
            p = params.get(name)
            arr = np.asarray(arr)
            if p is not None and tuple(p.shape) == arr.shape and p.dtype == np.float32:
                p._data[...] = p.xp.asarray(arr.astype(np.float32))

    def _masters_from(self, weights: dict) -> None:
        """Set the float32 masters from a checkpoint's float32 weights (by parameter name),
        not from the 16-bit parameters they were just rounded into."""
        if self.mixed.owned:  # ZeRO: the masters are this rank's flat slice
            st, m = self.strategy, self.mixed.master[0]
            m._data[...] = m.xp.asarray(st.flat_slice([weights[n] for n in st.names]))
            return
        names = {id(p): n for n, p in self.model.named_parameters()}
        for p, m in zip(self.mixed.params, self.mixed.master):
            m._data[...] = m.xp.asarray(np.asarray(weights[names[id(p)]], dtype=np.float32))
