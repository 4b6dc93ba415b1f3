"""What a :class:`.trainer.Trainer` checkpoint holds and how a run is restored from one:
model, optimizer (through the strategy: a ZeRO rank saves its slice), schedule, random
state, data position, histories, the plan and the float32 masters of mixed precision. A
mixin of the Trainer."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .core import random as train_random

__all__ = ["TrainerState"]


class TrainerState:
    """The checkpoint state of a :class:`.trainer.Trainer` run."""

    def _state(self, step, loader, history, val_history) -> dict:
        st = self.strategy
        return {
            "model": self.model.state_dict(),
            "optimizer": st.optimizer_state_dict(self.optimizer),
            "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
            "rng": {"train": train_random.get_state(self.rng)},
            "data": loader.state_dict(),
            "step": step,
            "history": history,
            "val_history": val_history,
            "plan": {"strategy": self.plan.get("strategy"), "world_size": st.world_size},
            "precision": None if self.mixed is None else self.mixed.state_dict(),
        }

    def _save(self, step, loader, history, val_history):
        path = self.strategy.save_checkpoint(
            self.checkpoint_dir, self._state(step, loader, history, val_history), step=step,
            keep=self.keep_checkpoints)
        if path is not None:
            self.reporter.log(f"checkpoint {Path(path).name} at step {step}")
            self.reporter.info(checkpoint=str(path), checkpoint_step=step)
        return path

    def _restore(self, state, loader):
        self.model.load_state_dict(state["model"])
        self.strategy.load_optimizer_state_dict(self.optimizer, state["optimizer"])
        if self.scheduler is not None and state.get("scheduler") is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        if self.mixed is not None and state.get("precision") is not None:
            self.mixed.load_state_dict(state["precision"])  # the masters: the exact weights
        elif self.mixed is not None:  # a float32 checkpoint: the masters take its weights
            self._masters_from(state["model"])
        train_random.set_state(state["rng"]["train"], self.rng)
        loader.load_state_dict(state["data"])
        return int(state["step"]), list(state.get("history", [])), \
            list(state.get("val_history", []))

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
