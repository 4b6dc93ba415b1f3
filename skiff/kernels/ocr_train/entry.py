"""The runner entry of ``%train ocr-rec``: a train-kind config in, a :class:`FineTuneResult`
out (the exported ``rec.onnx`` named in it).

``%train ocr-rec --data labels.txt --from ch-v6 -o rec`` and
``python -m skiff train ocr-rec --data labels.txt --json`` both end here. The model is
written to ``--out DIR`` when given, else to the job's run folder (``model/``), else to
``./rec-finetuned``.
"""

from __future__ import annotations

from pathlib import Path

from .finetune import FineTuneConfig, FineTuneResult, fine_tune

__all__ = ["run", "config_from"]


def config_from(config: dict, run_dir=None) -> FineTuneConfig:
    out = config.get("out") or (str(Path(run_dir) / "model") if run_dir else "rec-finetuned")
    cfg = FineTuneConfig(data=config["labels"], base=config.get("base") or "ch-v6", out=out,
                         val_data=config.get("val"), add_chars=bool(config.get("add_chars")),
                         seed=int(config.get("seed") or 0), name=config.get("name"))
    for key in ("epochs", "steps", "lr", "batch_size", "mix", "freeze"):
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
    reporter.log(f"fine-tuning {cfg.base} on {cfg.data} ({cfg.epochs} epochs, batch "
                 f"{cfg.batch_size}, lr {cfg.lr}, {cfg.mix:.0%} rendered general text)")
    result = fine_tune(cfg, reporter)
    reporter.log(f"exported {result.onnx}: held-out character accuracy "
                 f"{result.val_before} -> {result.val_after}")
    return result
