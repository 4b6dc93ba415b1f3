"""Job entry point for kind ``train``: ``run(config, reporter) -> TrainResult``.

The config comes from :func:`skiff.kinds.train.to_config`. The model and data are either
built-in names (``model="gpt-mini"``, ``data="classics"`` or a text file path) or a
``%%train`` cell (``source``), executed in a fresh namespace, that defines ``model`` and
``dataset`` and optionally ``val_dataset``, ``optimizer`` and ``loss``.

With several ranks (``reporter.world_size > 1``) every rank runs this same function on the
same config: the cell source travels in the config, so every rank builds the same model
(seeded) and data, and the strategy shards the work. Rank 0 reports. At the end the full
weights are gathered and rank 0 writes them to ``run_dir/model.npz``, from which the
notebook loads the trained model back.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from skiff.kernels.backend.devices import DEFAULT_DEVICE
from skiff.kernels.train.result import TrainResult
from skiff.kernels.train.tables import is_table, read_table

__all__ = ["run", "train_parts", "build_from_config", "exec_cell", "load_trained_model",
           "held_out", "nothing_trained", "untrained", "CheckpointTrainResult", "CELL_NAMES"]

# what a %%train cell may define for the Trainer (round 38: schedule, e.g. a
# ReduceLROnPlateau factory, and callbacks, e.g. an EMA of the weights, were silently unread)
CELL_NAMES = ("model", "dataset", "val_dataset", "optimizer", "loss", "schedule", "callbacks")


def exec_cell(source: str, *, seed: int = 0, namespace: dict | None = None,
              notebook: bool = False) -> dict:
    """Run a ``%%train`` cell (parameter init seeded by ``seed``) and return its namespace;
    it must define ``model`` and ``dataset``.

    ``namespace`` holds the names the cell starts with, given by the caller: the notebook's
    variables for a cell run on a thread of the kernel (``notebook=True``), or a fresh
    namespace for a cell run on MPI ranks. It is copied, so the cell never changes it.
    """
    from skiff.kernels.train.core import random as train_random

    ns: dict = {k: v for k, v in (namespace or {}).items()
                if k not in CELL_NAMES and not k.startswith("_")}
    ns["__name__"] = "__skiff_train_cell__"
    try:
        with train_random.using(train_random.new_generator(seed)):   # this job's own
            exec(compile(source, "<%%train cell>", "exec"), ns)  # noqa: S102  (the user's cell)
    except NameError as exc:
        if notebook:
            raise
        raise NameError(f"{exc} (a %%train cell run as processes starts from a fresh "
                        "namespace: build or load the data inside the cell)") from None
    missing = [n for n in ("model", "dataset") if n not in ns]
    if missing:
        raise ValueError(f"the %%train cell must define model and dataset; missing: "
                         f"{', '.join(missing)}")
    return ns


def build_from_config(config: dict, namespace: dict | None = None, reporter=None) -> dict:
    """{"model", "dataset", "val_dataset", "optimizer", "loss", ...} for a train config
    (``namespace``: what a ``%%train`` cell in the config starts with)."""
    from skiff.kernels.train import models
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.data import builtin_dataset

    seed = int(config.get("seed") or 0)
    if config.get("source"):
        ns = exec_cell(config["source"], seed=seed, namespace=namespace)
        return {k: ns.get(k) for k in CELL_NAMES}
    name = config.get("model")
    if name == "mlp" and config.get("data") and is_table(config["data"]):
        return _table_parts(config["data"], seed, config.get("target"), config.get("drop"),
                            config.get("val_split"), config.get("text"),
                            int(config.get("ngrams") or 1), bool(config.get("tfidf")))
    if name == "cnn" and config.get("data") and os.path.isdir(str(config["data"])):
        return _image_parts(config["data"], seed, config.get("image_size") or 32,
                            config.get("val_split"), bool(config.get("augment")), reporter)
    with train_random.using(train_random.new_generator(seed)):   # this job's own generator
        model = models.get(name, **({"path": config["from"]} if config.get("from") else {}))
    if config.get("lora"):  # adapters only: the base weights frozen
        from skiff.kernels.train.models.lora import apply_job_lora

        apply_job_lora(model, config["lora"], seed=seed)
    cfg = getattr(model, "config", None)
    block = config.get("block_size") or getattr(cfg, "block_size", 128)
    data = config.get("data") or models.DEFAULT_DATA[name]
    if hasattr(model, "tokenizer"):  # a checkpoint's model: text in its own tokens
        from skiff.kernels.train.models.hf_checkpoint import text_dataset

        dataset = text_dataset(model, data, block_size=int(block))
    else:
        dataset = builtin_dataset(data, block_size=int(block), seed=seed)
    val = None
    notes = [dataset.read_note] if getattr(dataset, "read_note", None) else []  # decoding
    held = config.get("val_split") or 0.1
    # text splits here (a tenth by default); arrays (blobs, shapes) are held out by the
    # Trainer with --val-split, so split_done says only a split made here
    split_done = hasattr(dataset, "split")
    if split_done:
        try:
            dataset, val = dataset.split(1.0 - held)
        except ValueError:  # a short text: train on all of it rather than fail
            if config.get("val_split") or config.get("early_stopping"):
                raise ValueError(f"the text is too short to hold out {held:g} of it as whole "
                                 f"sequences of {int(block) + 1} tokens for a validation "
                                 f"loss") from None
            notes.append(f"the text is too short to hold out a tenth of it as whole "
                         f"sequences of {int(block) + 1} tokens: training on all of it, "
                         f"without a validation loss")
    return {"model": model, "dataset": dataset, "val_dataset": val, "optimizer": None,
            "loss": None, "notes": notes, "split_done": split_done}


def training_rows(seed: int, val_split=None):
    """``fit_rows(n, labels)`` for :func:`read_table`: the rows a table job trains on, those
    its Trainer keeps before ``val_split`` (the last of :func:`table_order`, as
    :func:`.data.split_off` cuts them); None without a split (every row trains)."""
    if not val_split or not 0 < val_split < 1:
        return None

    def rows(n: int, labels=None):
        from .tables import class_ids

        order = table_order(seed, n, val_split, class_ids(labels))
        return order[:n - int(round(n * val_split))]

    rows.by_labels = True
    return rows


def table_order(seed: int, n: int, val_split=None, ids=None) -> np.ndarray:
    """The order a table job's rows take (the seed's permutation); with ``val_split`` and
    classes (``ids``) the last ``round(n x val_split)`` rows, which the Trainer holds out, are
    stratified as scikit-learn's ``train_test_split(stratify=y)`` holds them out (round 46
    h7; an image folder's since round 45): each class's share of the held-out rows, floored,
    the rest to the largest remainders (``image_folder.stratified_counts``), the class's last
    rows of the permutation. The last rows of the permutation were held out: a class of 3
    rows in 200 was often not scored at all."""
    order = np.random.default_rng(seed).permutation(n)
    if ids is None or not val_split or not 0 < val_split < 1:
        return order
    n_val = int(round(n * val_split))
    if n_val < 1 or n_val >= n:
        return order
    from .image_folder import stratified_counts

    ranked = np.asarray(ids, np.int64)[order]
    counts = stratified_counts(ranked, int(ranked.max()) + 1, n_val)
    held = np.zeros(n, bool)
    for c, k in enumerate(counts):
        if k:
            held[np.flatnonzero(ranked == c)[-k:]] = True
    return np.concatenate([order[~held], order[held]])


def _table_parts(path: str, seed: int, target: str | None = None, drop=None,
                 val_split=None, text=None, ngrams: int = 1, tfidf: bool = False) -> dict:
    """``mlp`` on a table file: as wide as its features, as many outputs as its classes (one
    for a regression); the table's scaling goes beside the weights (``table.json``)."""
    from skiff.kernels.train import models
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.data import ArrayDataset

    # drop: a config's "drop" (columns left out); scaled by the training rows alone
    table = read_table(path, target, drop, training_rows(seed, val_split), text, ngrams, tfidf)
    with train_random.using(train_random.new_generator(seed)):
        model = models.get("mlp", in_features=table.x.shape[1], out_features=table.outputs)
    # the rows in an order of the seed's, as an image folder's are: --val-split holds out the
    # last rows, and a file sorted by its classes (iris.csv) held out one class only; those
    # of each class in its share (round 46 h7: not stratified, a rare class unscored)
    order = table_order(seed, len(table.x), val_split,
                        table.y if table.classes is not None else None)
    return {"model": model, "dataset": ArrayDataset(table.x[order], table.y[order]),
            "val_dataset": None, "optimizer": None, "loss": None, "table": table}


def _image_parts(path: str, seed: int, size: int, val_split=None, augment=False,
                 reporter=None) -> dict:
    """``cnn`` on a folder of class folders: as many input channels as the images have, one
    output per class; a tenth held out unless ``val_split`` says otherwise (none under 20
    images); with ``augment`` the training part is mirrored and shifted at random; the
    classes and the scaling go beside the model (``images.json``)."""
    from skiff.kernels.train import models
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.image_folder import ImageFolder

    def progress(done, total):  # a large folder takes a while to read: say how far
        reporter.progress(done, total, unit="image", message="reading images")

    folder = ImageFolder(path, size=int(size), seed=seed,
                         progress=progress if reporter is not None else None)
    with train_random.using(train_random.new_generator(seed)):
        model = models.get("cnn", in_channels=folder.channels, num_classes=len(folder.classes),
                           image_size=folder.size)
    notes = list(folder.notes)
    split = val_split if val_split is not None else (0.1 if len(folder) >= 20 else None)
    if split is not None:
        train, val = folder.held_out(split, augment=augment, seed=seed)
    else:
        train, val = (folder.augmented(seed=seed) if augment else folder), None
        notes.append("fewer than 20 images: none held out, so no validation accuracy")
    if augment:
        notes.append("training images mirrored and shifted at random (--augment)")
    return {"model": model, "dataset": train, "val_dataset": val, "optimizer": None,
            "loss": None, "images": folder, "notes": notes, "split_done": True}


def run(config: dict, reporter, namespace: dict | None = None):
    """Train as the config says, reporting through ``reporter``; returns a TrainResult.
    ``namespace``: the names a ``%%train`` cell in the config starts with."""
    return train_parts(build_from_config(config, namespace, reporter), config, reporter)


def train_parts(parts: dict, config: dict, reporter):
    """Train ``parts["model"]`` on ``parts["dataset"]`` with the options of ``config``
    (the magic calls this directly with notebook objects on a thread)."""
    from skiff.kernels.train.trainer import Trainer

    model, dataset = parts["model"], parts["dataset"]
    evaluator = held_out(model, config)  # before training: a bad --eval file fails here
    reporter.info(model=type(model).__name__, data=str(dataset)[:200])
    notes = [*(getattr(parts.get("table"), "notes", None) or []), *(parts.get("notes") or [])]
    if getattr(evaluator, "read_note", None):  # --eval rows cut or left out by the block
        notes.append(evaluator.read_note)
    for note in notes:
        reporter.log(note)  # what reading the data decided (a row index left out, no val)
    default_batch = 16 if hasattr(dataset, "block_size") else 32
    monitor = config.get("monitor") or "val_loss"
    if monitor == "val_nll" and parts.get("loss") in (None, "auto"):
        from skiff.kernels.train.inference import gives_val_nll

        if not gives_val_nll(model):  # round 44 h18: failed after the first validation
            monitor = "val_loss"
            reporter.log(f"--monitor val_nll: {type(model).__name__} adds no balancing loss, "
                         "so its val_loss is its NLL: early stopping watches val_loss")
    trainer = Trainer(
        model,
        strategy=config.get("strategy") or "auto",
        optimizer=parts.get("optimizer"),
        loss=parts.get("loss") or "auto",
        lr=config.get("lr"),
        batch_size=config.get("batch_size") or default_batch,
        device=config.get("device") or DEFAULT_DEVICE,
        grad_accum=config.get("grad_accum") or 1,
        # --weight-decay, --clip (0: none), --schedule, --warmup: the trainer's defaults else
        weight_decay=config.get("weight_decay"),  # None: the optimizer's own default
        decay_bias_norm=bool(config.get("decay_bias_norm", True)),  # --no-bias-norm-decay
        clip=None if config.get("clip") == 0 else float(config.get("clip", 1.0)),
        # the cell's schedule (a factory: ReduceLROnPlateau), else --schedule's
        schedule=parts.get("schedule") or config.get("schedule") or "cosine",
        # --schedule-interval epoch: the cell's scheduler stepped at each epoch's end (round
        # 46 h7: Trainer(schedule_interval=) had no flag)
        schedule_interval=config.get("schedule_interval") or "step",
        warmup_steps=config.get("warmup_steps"),
        device_memory=config.get("device_memory"),  # --device-memory: the plan's limit
        checkpoint_dir=config.get("checkpoint_dir"),
        checkpoint_every=config.get("checkpoint_every"),
        keep_checkpoints=int(config.get("keep_checkpoints") or 3),  # --keep-checkpoints
        keep_best=int(config.get("keep_best") or 0),  # --keep-best [K] (round 41)
        resume=bool(config.get("resume")),
        seed=int(config.get("seed") or 0),
        stop_on_divergence=bool(config.get("stop_on_divergence", False)),
        precision=config.get("precision") or "32",
        reporter=reporter,
        evaluator=evaluator,
        eval_every=config.get("eval_every"),
        recompute=True if config.get("recompute") else None,  # else as the plan chose
        early_stopping=config.get("early_stopping"),
        # what early stopping watches, and clipping by value (round 36: the grammar's part
        # is kinds/train.py's; absent keys give the Trainer's defaults)
        monitor=monitor, mode=config.get("mode") or "auto",
        clip_by=config.get("clip_by") or "norm",
        class_weight=parts.get("class_weight"),  # --class-weight's, by class id
        callbacks=parts.get("callbacks"),  # the cell's (an EMA of the weights, say)
    )
    epochs, steps = config.get("epochs"), config.get("steps")
    if epochs is None and steps is None:
        epochs = 1
    val, split = parts.get("val_dataset"), config.get("val_split")
    if parts.get("split_done"):
        split = None  # the text's split is made already (with --val-split's fraction)
    elif split is not None and val is not None:
        raise ValueError("--val-split and a val_dataset in the cell: give one of them")
    _curve_library(reporter)  # loss.png's library, loaded before the steps, not after
    result = trainer.train(dataset, epochs=epochs, steps=steps, val_dataset=val,
                           val_split=split)
    result.notes = [*notes, *(n for n in result.notes if n not in notes)]  # the Trainer's too
    result.class_metrics = _named_classes(result.class_metrics, parts)
    run_dir = getattr(reporter, "run_dir", None)
    if untrained(result):  # stopped before its first step (the same on every rank)
        if run_dir is not None and getattr(reporter, "rank", 0) == 0:
            reporter.log(f"{result.stopped or 'stopped'} before its first step: no weights "
                         "written (model.npz would hold the untrained initial weights)",
                         level="warning")
        _report_curve(result, reporter)
        return result
    weights = trainer.strategy.full_state_dict(trainer.model)  # a collective with many ranks
    if run_dir is not None and getattr(reporter, "rank", 0) == 0:
        path = Path(run_dir) / "model.npz"
        tmp = path.with_name(".model.npz.tmp")
        with open(tmp, "wb") as fh:
            np.savez(fh, **{k: np.asarray(v) for k, v in weights.items()})
        tmp.replace(path)
        reporter.artifact("model", path, kind="file")
        result.weights = str(path)
        if parts.get("images") is not None:  # classes, size, scaling: predict needs them
            meta = Path(run_dir) / "images.json"
            meta.write_text(json.dumps(parts["images"].to_json(), indent=1) + "\n")
            reporter.artifact("image classes and scaling", meta, kind="file")
        if parts.get("table") is not None:  # how the table was scaled: predictions need it
            scaling = Path(run_dir) / "table.json"
            scaling.write_text(json.dumps(parts["table"].to_json(), indent=1) + "\n")
            reporter.artifact("table scaling", scaling, kind="file")
        _write_class_metrics(result, parts, Path(run_dir), reporter)
        if hasattr(model, "source_folder"):  # a checkpoint's model: its layout back too
            from skiff.kernels.train.models.hf_checkpoint import save_pretrained

            folder = Path(run_dir) / "hf-model"
            model = trainer.strategy.whole_model(trainer.model, weights)  # split: made whole
            save_pretrained(model, folder, state=weights)  # a LoRA model: merged
            reporter.artifact("model (Hugging Face layout)", folder, kind="folder")
            adapter = None
            if getattr(model, "lora_config", None):
                from skiff.kernels.train.models.lora import save_adapter

                adapter = Path(run_dir) / "hf-adapter"
                result.notes.extend(_adapter_warnings(save_adapter, model, adapter))
                reporter.artifact("LoRA adapter (peft layout)", adapter, kind="folder")
            result = CheckpointTrainResult.of(result, hf_model=str(folder),
                                              hf_adapter=adapter and str(adapter))
    _report_curve(result, reporter)
    return result


def _adapter_warnings(save_adapter, model, folder: Path) -> list[str]:
    """Save the adapter; what it warned (round 42 h17: peft reading an MoE's MLP targets as
    the routed experts' weights) as notes for the job's summary, said again as a warning
    (the CLI prints it on stderr, as before)."""
    import warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        save_adapter(model, folder)
    notes = []
    for w in seen:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if issubclass(w.category, UserWarning):
            notes.append(f"hf-adapter: {w.message}")
    return notes


@dataclass
class CheckpointTrainResult(TrainResult):
    """The result of training a checkpoint's model: a :class:`TrainResult` that also names
    the folders the job wrote, ``hf_model`` (the Hugging Face layout; merged for LoRA) and,
    with LoRA, ``hf_adapter`` (peft's layout), in its JSON (``--json``, ``result.json``)."""

    hf_model: str | None = None
    hf_adapter: str | None = None

    @classmethod
    def of(cls, result: TrainResult, **folders) -> CheckpointTrainResult:
        return cls(**{f.name: getattr(result, f.name) for f in fields(TrainResult)}, **folders)

    def to_json(self) -> dict:
        out = super().to_json()
        out["hf_model"] = self.hf_model
        if self.hf_adapter is not None:
            out["hf_adapter"] = self.hf_adapter
        return out

    def _repr_html_(self) -> str:
        import html

        rows = "".join(f"<tr><th style='text-align:left'>{name}</th><td>{html.escape(path)}"
                       "</td></tr>" for name, path in (("hf-model", self.hf_model),
                                                       ("hf-adapter", self.hf_adapter)) if path)
        return super()._repr_html_().replace("</table>", rows + "</table>", 1)


def held_out(model, config: dict):
    """``--eval FILE``: the held-out set the Trainer evaluates (None without it), in the
    model's own tokens, blocks of the training ``block_size``."""
    if not config.get("eval"):
        return None
    from skiff.kernels.train.models.evaluate import HeldOut

    block = config.get("block_size") or getattr(getattr(model, "config", None), "block_size",
                                                None) or 256
    return HeldOut.from_file(config["eval"], getattr(model, "tokenizer", None),
                              block_size=int(block))


def _named_classes(report: dict | None, parts: dict) -> dict | None:
    """The Trainer's ``class_metrics`` (counted in its validations, of the weights the model
    holds: after early stopping, the best one's) with the classes by name where the data
    names them (a table's classes, an image folder's), on one rank or several."""
    names = getattr(parts.get("table"), "classes", None) or getattr(parts.get("images"),
                                                                    "classes", None)
    per = (report or {}).get("per_class")
    if not names or not per or len(names) != len(per.get("class", ())):
        return report
    return {**report, "per_class": {**per, "class": [str(n) for n in names]}}


def _write_class_metrics(result, parts: dict, run_dir: Path, reporter) -> None:
    """``metrics.json`` and the log lines of ``result.class_metrics``."""
    from skiff.kernels.train.class_metrics import report_lines

    report = getattr(result, "class_metrics", None)
    if not report:
        return
    path = run_dir / "metrics.json"
    step = result.best_step or result.steps
    path.write_text(json.dumps({"step": step, **report}, indent=1) + "\n")
    reporter.artifact("validation metrics per class", path, kind="file")
    # the matrix drawn as scikit-learn's ConfusionMatrixDisplay (round 45 h11)
    if report.get("confusion") is not None and (report.get("per_class") or {}).get("class"):
        from skiff.kernels.train.class_metrics import confusion_png

        drawn = run_dir / "confusion.png"
        confusion_png(report["per_class"]["class"], report["confusion"], drawn,
                      title=f"held-out rows, step {step}")
        reporter.artifact("confusion matrix", drawn, kind="image")
    for line in report_lines(report):
        reporter.log(f"validation of the model kept: {line}")


def nothing_trained(result) -> bool:
    """A resumed run that took no step: its checkpoint already reached the steps asked
    (``--epochs`` reached again), or the run it resumed had stopped early."""
    resumed = getattr(result, "resumed", None) or {}
    at = resumed.get("from_step")
    return at is not None and (result.steps == at or at >= (resumed.get("total") or at + 1))


def untrained(result) -> bool:
    """A run that started from step 0 and took no step (cancelled, its launcher gone, or a
    callback's stop, before the first): the model holds its initial weights (round 34: the
    job wrote them as ``model.npz``, which ``predict`` then used as if trained)."""
    resumed = getattr(result, "resumed", None) or {}
    return not result.steps and resumed.get("from_step") is None


def _curve_library(reporter) -> None:
    """Load matplotlib before the first step where the run draws ``loss.png`` (rank 0 of a
    job): loaded at the end, its 1.4-2.9 s (under load) came after the last step's
    progress, outside every ETA: a 1000-step mlp's ETA at 50% was 0.57-0.59x the time left
    (round 46 h11; 0.87-0.96x loaded first). The run takes as long."""
    if getattr(reporter, "run_dir", None) is None or getattr(reporter, "rank", 0) != 0:
        return
    try:
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
    except ImportError:  # pragma: no cover - a core dependency; drawn (or not) as before
        pass


def _report_curve(result, reporter) -> None:
    """``loss.png`` of the run's losses (not drawn again when nothing was trained: the
    curve is the checkpoint's run's, drawn by it)."""
    run_dir = getattr(reporter, "run_dir", None)
    if run_dir is None or getattr(reporter, "rank", 0) != 0 or not result.history or \
            nothing_trained(result):
        return
    path = Path(run_dir) / "loss.png"
    path.write_bytes(result.loss_curve_png())
    reporter.artifact("loss curve", path, kind="image")


def load_trained_model(run_dir, config: dict, namespace: dict | None = None):
    """The trained model of a finished train job: built as the job built it, with the
    weights the job wrote to ``run_dir/model.npz``."""
    path = Path(run_dir) / "model.npz"
    if not path.is_file():
        why = ""
        try:
            done = json.loads((Path(run_dir) / "result.json").read_text())
            if not done.get("steps") and not (done.get("resumed") or {}).get("from_step"):
                why = ": it was stopped before its first step, so it has none"
        except (OSError, ValueError, AttributeError):
            pass
        raise FileNotFoundError(f"the job wrote no trained weights ({path} is missing{why})")
    parts = build_from_config(config, namespace)
    model = parts["model"]
    with np.load(path, allow_pickle=False) as z:
        model.load_state_dict({k: z[k] for k in z.files})
    return model
