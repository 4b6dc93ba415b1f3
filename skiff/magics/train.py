"""``%train`` and ``%%train``: train a model from a cell, as a job with a live loss curve.

``%train MODEL [DATA] [options]``: MODEL and DATA are notebook variables (a model object, a
data set object) or built-in names / a text file. Notebook objects run on a thread of this
kernel (they cannot travel to other processes); built-in names can also run on ``--np N``
MPI ranks. ``%%train [options]`` runs the cell, which defines ``model`` and ``dataset``
(optionally ``val_dataset``, ``optimizer``, ``loss``), as the job, in a fresh namespace; with
``--np N`` the cell's source runs on every rank. When the job ends the trained model is in the
notebook: ``job.value.model``, and for ``%%train`` also the variable ``model``.
"""

from __future__ import annotations

import shlex

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class

from skiff.grammar.common import split_launch
from skiff.grammar.train import COMMAND, to_config
from skiff.jobs import launch

from .base import finish_launch, parse_line, usage_errors

__all__ = ["TrainMagics", "launch_train"]


def _is_model(obj) -> bool:
    return hasattr(obj, "parameters") and callable(obj.parameters) and not isinstance(obj, type)


def _is_dataset(obj) -> bool:
    return hasattr(obj, "__len__") and hasattr(obj, "__getitem__") and \
        not isinstance(obj, (str, bytes))


class _Loaded:
    """``job.value`` of a process job once done: the trained model and the JSON result."""

    def __init__(self, model, result: dict | None):
        self.model = model
        self.result = result or {}

    def to_json(self):
        return self.result

    def __repr__(self):
        return f"<trained {type(self.model).__name__}: {self.result.get('steps')} steps, " \
               f"final loss {self.result.get('final_loss')}>"


def launch_train(line: str, cell: str | None = None, user_ns: dict | None = None):
    """Parse a ``%train`` line (and ``%%train`` cell), launch the job; return
    ``(job, launch options)``. Used by the magic; callable without IPython."""
    user_ns = {} if user_ns is None else user_ns
    if cell is None:
        line, user_ns = _data_expression(line, user_ns)
    ns = parse_line(COMMAND, line)
    values, opts = split_launch(ns)
    np_ = opts.get("np", 1)
    slurm = opts.get("launcher") == "slurm"
    as_process = np_ > 1 or opts.get("runner") == "process" or slurm
    with usage_errors():
        if cell is not None:
            if not cell.strip():
                raise ValueError("%%train needs a cell that defines model and dataset")
            config = to_config({**values, "source": cell})
            if slurm:
                return _slurm(config, opts), opts
            if as_process:
                job = launch("train", config, np=np_, runner=opts.get("runner", "auto"),
                             device=config["device"], label="%%train")
            else:  # on a thread the cell sees the notebook's variables
                job = launch("train", config, fn=_cell_job(user_ns), runner="thread",
                             device=config["device"], label="%%train")
            job.add_done_callback(_deliver(user_ns, config, set_model=True))
            return job, opts
        model_obj, data_obj = _lookup(values, user_ns)
        if model_obj is None and data_obj is None:
            config = to_config(values)
            if slurm:
                return _slurm(config, opts), opts
            job = launch("train", config, np=np_, runner=opts.get("runner", "auto"),
                         device=config["device"], label=f"%train {config['model']}")
            if as_process:
                job.add_done_callback(_deliver(user_ns, config, set_model=False))
            return job, opts
        if as_process:
            raise ValueError(f"notebook objects ({values['model']}"
                             f"{', ' + str(values['data']) if data_obj is not None else ''}) "
                             "cannot travel to other processes: use --np 1, built-in names, or "
                             "%%train --np N with a cell that builds them")
        return _launch_objects(values, model_obj, data_obj), opts


def _slurm(config: dict, opts: dict):
    from skiff.jobs.slurm import SlurmError, slurm_job

    try:
        return slurm_job("train", config, nodes=opts.get("nodes", 1),
                         gpus_per_node=opts.get("gpus_per_node", 0),
                         dry_run=bool(opts.get("dry_run")))
    except SlurmError as exc:  # sbatch missing or refusing: the user's to fix, one line
        raise ValueError(str(exc)) from None


def _data_expression(line: str, user_ns: dict) -> tuple[str, dict]:
    """``%train model (X, y) --epochs 3``: a DATA written as a Python tuple or list expression
    is evaluated in the notebook and stands in as a variable (the line keeps its options)."""
    head, sep, rest = line.strip().partition(" ")
    rest = rest.lstrip()
    if not sep or not head or head.startswith("-") or rest[:1] not in ("(", "["):
        return line, user_ns
    cuts = [i for i in range(len(rest)) if rest.startswith(" -", i)] + [len(rest)]
    for cut in cuts:
        expr = rest[:cut].strip()
        try:
            code = compile(expr, "<%train DATA>", "eval")
        except SyntaxError:
            continue
        with usage_errors():
            try:
                value = eval(code, user_ns)  # noqa: S307  (the user's own expression)
            except NameError as exc:
                raise ValueError(f"DATA {expr!r}: {exc}") from None
        if isinstance(value, list) and value and all(hasattr(v, "shape") for v in value):
            value = tuple(value)  # [X, y] written on the line means the arrays X and y
        return f"{head} {shlex.quote(expr)} {rest[cut:]}", {**user_ns, expr: value}
    return line, user_ns


def _cell_job(user_ns: dict):
    """The job of a ``%%train`` cell on a thread: the cell runs with the notebook's
    variables visible (a copy of the namespace), then trains."""
    from skiff.kernels.train.entry import CELL_NAMES, exec_cell, train_parts

    def job(cfg, reporter):
        ns = exec_cell(cfg["source"], seed=int(cfg.get("seed") or 0), namespace=user_ns)
        return train_parts({k: ns.get(k) for k in CELL_NAMES}, cfg, reporter)

    return job


def _lookup(values: dict, user_ns: dict):
    """Notebook objects named by MODEL / DATA (None where the word is a name or path)."""
    model_obj = data_obj = None
    mname, dname = values.get("model"), values.get("data")
    if mname is not None and mname in user_ns:
        value = user_ns[mname]
        if isinstance(value, type) and hasattr(value, "parameters"):
            raise TypeError(f"MODEL {mname!r} is a class; train an instance of it, e.g. "
                            f"net = {mname}(...) then %train net DATA")
        if _is_model(value):
            model_obj = value
        elif isinstance(value, str):
            values["model"] = value
        else:
            raise TypeError(f"MODEL {mname!r} is a {type(value).__name__}, not a skiff model")
    if dname is not None and dname in user_ns:
        value = user_ns[dname]
        if _is_dataset(value):
            data_obj = value
        elif isinstance(value, str):
            values["data"] = value
        else:
            raise TypeError(f"DATA {dname!r} is a {type(value).__name__}, not a data set "
                            "(it needs len() and items)")
    if model_obj is not None and data_obj is None and values.get("data") is None:
        raise ValueError(f"DATA is needed to train the notebook model {mname!r} "
                         "(only built-in models have their own data)")
    return model_obj, data_obj


def _launch_objects(values: dict, model_obj, data_obj):
    from skiff.kernels.train import models
    from skiff.kernels.train.data import ArrayDataset, as_dataset, builtin_dataset
    from skiff.kernels.train.entry import train_parts

    if data_obj is not None:
        data_obj = as_dataset(data_obj, what=f"DATA {values['data']!r}")
        has_loss = model_obj is not None and callable(getattr(model_obj, "loss", None))
        if model_obj is not None and not has_loss and isinstance(data_obj, ArrayDataset) and \
                len(data_obj.arrays) == 1:
            raise ValueError(f"DATA {values['data']!r} is one array, and the model has no "
                             f"loss(batch) of its own: pass inputs and targets, e.g. "
                             f"%train {values['model']} (X, y)")

    # validate every other option through the grammar, with stand-in names for the objects
    stand_in = {**values, "model": values["model"] if model_obj is None else "mlp",
                "data": values.get("data") if data_obj is None else None}
    if stand_in["data"] is None:
        stand_in["data"] = "blobs"
    config = to_config(stand_in)
    config["model"] = values["model"] if model_obj is None else f"<notebook {values['model']}>"
    config["data"] = config["data"] if data_obj is None else f"<notebook {values['data']}>"
    seed = config["seed"]

    def job(cfg, reporter):
        model = model_obj
        if model is None:
            from skiff.kernels.train.core import random as train_random

            train_random.seed(seed)
            model = models.get(values["model"])
        dataset = data_obj
        if dataset is None:
            block = cfg.get("block_size") or getattr(getattr(model, "config", None),
                                                     "block_size", 128)
            dataset = builtin_dataset(values["data"], block_size=int(block), seed=seed)
        parts = {"model": model, "dataset": dataset, "val_dataset": None}
        return train_parts(parts, cfg, reporter)

    return launch("train", config, fn=job, runner="thread", device=config["device"],
                  label=f"%train {values['model']}")


def _deliver(user_ns: dict, config: dict, *, set_model: bool):
    """Done callback: put the trained model where the notebook can reach it."""

    def callback(job):
        if job.status != "done":
            return
        model = None
        if job.value is not None and hasattr(job.value, "model"):
            model = job.value.model
        else:  # a process job: rebuild and load the weights it wrote
            from skiff.kernels.train.entry import load_trained_model

            model = load_trained_model(job.run_dir, config)
            job.value = _Loaded(model, job.result)
        if set_model and model is not None:
            user_ns["model"] = model

    return callback


@magics_class
class TrainMagics(Magics):
    @line_cell_magic
    def train(self, line="", cell=None):
        """Train a model as a job: ``%train MODEL [DATA] [--epochs N | --steps N] [--lr X]
        [--batch-size B] [--device DEV] [--strategy S] [--checkpoint-dir DIR] [--resume]
        [--np N] [--wait] [-o NAME]``, or ``%%train [options]`` with a cell that defines
        ``model`` and ``dataset``. Non-blocking unless ``--wait``; returns the Job."""
        if line.strip() in ("-h", "--help"):
            print(COMMAND.usage(prog="%train"))
            return None
        try:
            job, opts = launch_train(line, cell, self.shell.user_ns)
        except UsageError:
            raise
        return finish_launch(self.shell, job, opts)
