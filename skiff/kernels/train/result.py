"""What a training run did: :class:`TrainResult` (loss curve, validation, throughput,
checkpoint), its PNG loss curve and notebook view, and the plan's estimates set against it.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field

__all__ = ["TrainResult", "predicted_vs_measured"]


# ------------------------------------------------------------------------------------------
@dataclass
class TrainResult:
    """What a training run did: loss curve, validation metrics, throughput, checkpoint.

    ``model`` is the trained model itself (not part of :meth:`to_json`).
    """

    steps: int
    epochs: float
    final_loss: float | None
    history: list[dict] = field(default_factory=list)  # one row per logged step
    val_history: list[dict] = field(default_factory=list)  # one row per epoch
    evaluation: list[dict] = field(default_factory=list)  # evaluator rows {"step", metric...}
    time_s: float = 0.0
    samples_per_s: float | None = None
    tokens_per_s: float | None = None
    peak_memory_bytes: int | None = None
    checkpoint: str | None = None
    # keep_best=True: the checkpoint of the best validation (its monitor), kept in the folder
    best_checkpoint: str | None = None
    strategy: dict = field(default_factory=dict)
    stopped: str | None = None  # why it ended early ("cancelled", "early stopping: ..")
    best_step: int | None = None  # early stopping: the step whose weights the model holds
    best_val_loss: float | None = None  # early stopping: that step's validation loss
    best_metric: dict | None = None  # early stopping on monitor="val_accuracy": {name: best}
    notes: list = field(default_factory=list)  # what reading the data decided (a job's)
    num_parameters: int | None = None
    weights: str | None = None  # the final full weights (npz), written by a job
    step_time_s: float | None = None  # median seconds per optimizer step (first one left out)
    # the first step with its one-time costs (numba's kernels loaded: 1-2 s in a fresh
    # process) and the speed of the steps after it (None: one step)
    first_step_s: float | None = None
    samples_per_s_after_first: float | None = None
    tokens_per_s_after_first: float | None = None
    predicted: dict = field(default_factory=dict)  # the plan's estimates against measurements
    plan_check: dict | None = None  # several ranks: the plan with its measured fixed costs
    resumed: dict | None = None  # resume=True: {"from_step": N or None (none found), ...}
    # a classifier job's validation of the weights kept: {"val_accuracy", "f1" (macro),
    # "per_class": {"class", "precision", "recall", "f1", "support"}, "confusion"}
    class_metrics: dict | None = None
    model: object = field(default=None, repr=False)

    def to_json(self) -> dict:
        out = {
            "steps": self.steps, "epochs": self.epochs, "final_loss": self.final_loss,
            "history": self.history, "val_history": self.val_history,
            "time_s": round(self.time_s, 4), "samples_per_s": self.samples_per_s,
            "tokens_per_s": self.tokens_per_s, "peak_memory_bytes": self.peak_memory_bytes,
            "checkpoint": self.checkpoint, "strategy": self.strategy, "stopped": self.stopped,
            "num_parameters": self.num_parameters, "weights": self.weights,
            "step_time_s": self.step_time_s, "predicted": self.predicted,
            "plan_check": self.plan_check,
        }
        if self.first_step_s is not None:
            out["first_step_s"] = round(self.first_step_s, 4)
            out["samples_per_s_after_first"] = self.samples_per_s_after_first
            out["tokens_per_s_after_first"] = self.tokens_per_s_after_first
        if self.evaluation:  # held-out evaluations during training (an evaluator was given)
            out["evaluation"] = self.evaluation
        if self.notes:  # what reading the data decided (words one-hot, gaps filled, ...)
            out["notes"] = self.notes
        if self.best_checkpoint is not None:  # keep_best: the one to pick (round 41)
            out["best_checkpoint"] = self.best_checkpoint
        if self.resumed is not None:  # where a resumed run went on from (or that it could not)
            out["resumed"] = self.resumed
        if self.class_metrics is not None:  # per class, with the confusion matrix
            out["class_metrics"] = self.class_metrics
        if self.best_step is not None:  # early stopping: whose weights the model holds
            out["best_step"], out["best_val_loss"] = self.best_step, self.best_val_loss
        if self.best_metric is not None:
            out["best_metric"] = self.best_metric
        return out

    @property
    def losses(self) -> list[float]:
        return [row["loss"] for row in self.history]

    def loss_curve_png(self) -> bytes:
        """The training (and validation) loss curve as PNG bytes."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(5, 2.6), dpi=90)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot(1, 1, 1)
        if self.history:
            ax.plot([r["step"] for r in self.history], self.losses, lw=1.2, label="train")
        if self.val_history:
            ax.plot([r["step"] for r in self.val_history],
                    [r["val_loss"] for r in self.val_history], "o-", ms=3, label="validation")
        ax.set_xlabel("step")
        ax.set_ylabel("loss")
        ax.grid(alpha=0.3)
        if self.val_history:
            ax.legend(fontsize=8)
        from skiff.kernels.backend.figures import render_png

        return render_png(fig)

    def _repr_html_(self) -> str:
        rows = [("steps", self.steps), ("epochs", f"{self.epochs:.2f}"),
                ("final loss", _fmt(self.final_loss)), ("time", f"{self.time_s:.1f} s"),
                ("samples/s", _fmt(self.samples_per_s)), ("tokens/s", _fmt(self.tokens_per_s)),
                ("strategy", self.strategy.get("strategy")),
                ("checkpoint", self.checkpoint), ("stopped", self.stopped)]
        if self.class_metrics is not None:
            rows.insert(3, ("macro F1", _fmt(self.class_metrics.get("f1"))))
        if self.val_history:
            last = self.val_history[-1]
            rows.insert(3, ("validation", ", ".join(f"{k} {_fmt(v)}" for k, v in last.items()
                                                    if k.startswith("val_"))))
        cells = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
                        f"<td>{html.escape(str(v))}</td></tr>" for k, v in rows if v is not None)
        img = ""
        if self.history:
            data = base64.b64encode(self.loss_curve_png()).decode("ascii")
            img = f"<img src='data:image/png;base64,{data}' alt='loss curve'/>"
        report = self.class_metrics or {}  # the matrix drawn too (round 45 h11)
        if report.get("confusion") is not None and (report.get("per_class") or {}).get("class"):
            from .class_metrics import confusion_png

            data = base64.b64encode(confusion_png(report["per_class"]["class"],
                                                  report["confusion"])).decode("ascii")
            img += f"<img src='data:image/png;base64,{data}' alt='confusion matrix'/>"
        return (f"<div class='skiff-train-result'><b>TrainResult</b>"
                f"<table>{cells}</table>{img}</div>")

    def __repr__(self) -> str:
        return (f"TrainResult(steps={self.steps}, final_loss={_fmt(self.final_loss)}, "
                f"time_s={self.time_s:.2f}, stopped={self.stopped!r})")


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def predicted_vs_measured(plan: dict, result: TrainResult) -> dict:
    """The planner's step time and peak memory next to what this run measured (memory on
    the CPU is the process's resident set, so it includes the interpreter and libraries)."""
    est = plan.get("estimate") if isinstance(plan, dict) else None
    if not isinstance(est, dict):
        return {}
    out = {}
    if est.get("step_time") is not None and result.step_time_s is not None:
        out["step_time_s"] = {"predicted": est["step_time"], "measured": result.step_time_s}
    if est.get("peak_memory") is not None and result.peak_memory_bytes:
        out["peak_memory_bytes"] = {"predicted": est["peak_memory"],
                                    "measured": result.peak_memory_bytes}
    return out
