"""The runner entry of ``%train ocr-rec``: a train-kind config in, a :class:`FineTuneResult`
out (the exported ``rec.onnx`` named in it).

``%train ocr-rec --data labels.txt --from ch-v6 -o rec`` and
``python -m skiff train ocr-rec --data labels.txt --json`` both end here. The model is
written to ``--out DIR`` when given, else to the job's run folder (``model/``), else to
``./rec-finetuned``. A stopped run's state (``rec.ckpt``) is kept in ``checkpoint_dir``,
else the model's folder; ``resume`` goes on from it (a new job has a new run folder, so
resuming needs ``--out`` or ``--checkpoint-dir``).
"""

from __future__ import annotations

from pathlib import Path

from .finetune import FineTuneConfig, FineTuneResult, fine_tune

__all__ = ["run", "config_from", "forgetting", "worse_held_out"]


def config_from(config: dict, run_dir=None) -> FineTuneConfig:
    out = config.get("out") or (str(Path(run_dir) / "model") if run_dir else "rec-finetuned")
    cfg = FineTuneConfig(data=config["labels"], base=config.get("base") or "ch-v6", out=out,
                         val_data=config.get("val"), add_chars=bool(config.get("add_chars")),
                         seed=int(config.get("seed") or 0), name=config.get("name"),
                         checkpoint_dir=config.get("checkpoint_dir"),
                         resume=bool(config.get("resume")))
    if config.get("upright") is not None:   # --upright yes|no: said, not measured
        cfg.upright = bool(config["upright"])
    if config.get("freeze_head"):   # --freeze-head: the classifier kept fixed
        cfg.freeze_head = True
    if config.get("train_from"):   # --train-from WEIGHT: the weights before it kept fixed
        cfg.train_from = str(config["train_from"])
    if config.get("general_fonts"):   # --general-fonts F1,F2: the general lines' faces
        cfg.general_fonts = list(config["general_fonts"])
    if config.get("pull") is not None:   # --pull SHARE: the weights that far from the base
        cfg.pull = float(config["pull"])
    if config.get("val_split") is not None:   # --val-split: the share of --data held out
        cfg.val_fraction = float(config["val_split"])
    for key in ("epochs", "steps", "lr", "batch_size", "mix", "freeze", "checkpoint_every",
                "eval_every", "weight_decay", "general_eval"):
        if config.get(key) is not None:
            setattr(cfg, key, type(getattr(cfg, key) if getattr(cfg, key) is not None
                                   else 0)(config[key]))
    return cfg


def run(config: dict, reporter) -> FineTuneResult:
    device = config.get("device") or "cpu"
    if device != "cpu":
        reporter.log(f"ocr-rec fine-tuning runs on the CPU (device {device!r} was chosen by "
                     "auto; the GPU path of the ONNX importer is not measured yet)")
    cfg = config_from(config, getattr(reporter, "run_dir", None))
    reporter.log(f"fine-tuning {cfg.base} on {cfg.data} ("
                 + (f"{cfg.steps} steps" if cfg.steps else f"{cfg.epochs} epochs") + ", batch "
                 f"{cfg.batch_size}, lr {cfg.lr}, {cfg.mix:.0%} rendered general text)")
    result = fine_tune(cfg, reporter)
    reporter.log(f"exported {result.onnx}: held-out character accuracy "
                 f"{_acc(result.val_before)} -> {_acc(result.val_after)}; rendered general "
                 f"text {_acc(result.general_before)} -> {_acc(result.general_after)}")
    for note in (forgetting(result), worse_held_out(result)):
        if note:
            reporter.log(note, level="warning")
    return result


def _acc(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def forgetting(result: FineTuneResult, allowed: float = 0.005) -> str | None:
    """A warning when the tuned model reads rendered general text worse than its base by
    more than ``allowed`` (half a point): what a user then changes; None otherwise."""
    before, after = result.general_before, result.general_after
    if before is None or after is None or after >= before - allowed:
        return None
    return (f"the tuned model reads general text {100 * (before - after):.1f} points worse "
            f"than its base ({before:.4f} -> {after:.4f}): fewer steps or epochs, a lower "
            "--lr, or a larger --mix keep more of what it knew")


def worse_held_out(result: FineTuneResult, allowed: float = 0.005) -> str | None:
    """A warning when the tuned model reads the user's own held-out crops worse than its
    base did (by more than ``allowed``): such a model was exported and its run said only the
    two figures, "0.9154 -> 0.7523", as if it were the result asked for (round 45: one step
    of a 1-step run at the full rate). None otherwise."""
    before, after = result.val_before, result.val_after
    if before is None or after is None or after >= before - allowed:
        return None
    return (f"the tuned model reads the held-out crops {100 * (before - after):.1f} points "
            f"worse than its base ({before:.4f} -> {after:.4f}): the base model reads them "
            f"better; train longer ({result.steps} steps run; more crops or --steps), with a "
            "lower --lr, or keep the base model")
