"""Grammar of ``python -m skiff predict``: a table or image model's predictions for new data.

``python -m skiff predict JOB new.csv`` prints the file's rows with a ``<target> predicted``
column (and the class's probability) as CSV; for a ``cnn`` trained on a folder of class
folders, ``python -m skiff predict JOB image|folder`` prints each image's class and
probability (several images or folders: their rows joined in the order given; several
CSV files are refused in one line). ``--out FILE`` writes them there instead and prints the
score when the truth is known (the target column; the images' class folders); ``--json``
prints one JSON document. In a notebook ``%predict JOB DATA`` is the same command (JOB may
also be a job variable); it shows the rows as a table (pandas), ``-o NAME`` keeps it.
"""

from __future__ import annotations

import argparse
import io
import os

from .common import command, json_option, notebook_only, variable_name

__all__ = ["COMMAND", "cli"]


@command("predict", help="Predict with a model trained on a table file (mlp data.csv) or a "
                         "folder of images (cnn photos/) for new rows or images")
@json_option
def COMMAND(p):
    p.add_argument("run", metavar="JOB",
                   help="the training job: its id (a prefix or suffix is enough), its --name, "
                        "or its run folder")
    p.add_argument("data", nargs="+", metavar="DATA",
                   help="a .csv or .tsv file with the columns the model trained on, or "
                        "images, folders of images or of class folders (several: their "
                        "rows joined in the order given)")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="write the rows with their predictions to this CSV file")
    notebook_only(p.add_argument("-o", "--output", metavar="NAME", default=None,
                                 type=variable_name,
                                 help="store the predictions (a table) in the notebook "
                                      "variable NAME"))


def _score_text(score: dict, target: str) -> str:
    if "accuracy" in score:
        return f"accuracy {100 * score['accuracy']:.1f}% on {score['rows']} rows ({target})"
    if "r2" in score:
        return f"R^2 {score['r2']:.4f}, RMSE {score['rmse']:.4g} on {score['rows']} rows ({target})"
    return ""


def _check_predicts(run_dir) -> None:
    """A job no model of which ``predict`` reads (no ``table.json``, no ``images.json``):
    one line naming both it takes and, for an OCR fine-tune, an OCR job or another
    training, what reads or uses that job's model instead ("has no table.json: predict
    needs mlp on a table file" said nothing of images, nor of ``ocr --rec-model``)."""
    import json
    from pathlib import Path

    if (run_dir / "table.json").is_file() or (run_dir / "images.json").is_file():
        return
    try:
        meta = json.loads((run_dir / "config.json").read_text())
    except (OSError, ValueError):
        return  # not a run folder the front knows: the kernel's own message
    config = meta.get("config") if isinstance(meta, dict) else None
    if not isinstance(config, dict):
        return
    kind, model = meta.get("kind"), config.get("model")
    takes = ("predict takes a job that trained mlp on a table file (train mlp data.csv) or "
             "cnn on a folder of class folders (train cnn photos/)")
    if kind == "train" and model in ("mlp", "cnn"):
        ended = _ended_without_model(run_dir)
        if ended:
            raise ValueError(f"{run_dir.name} {ended}")
        return  # the kernel names what is missing (no table.json: built-in data)
    if kind == "train" and model == "ocr-rec":
        folder = Path(str(config.get("out") or run_dir / "model"))
        use = (f"read images with it by ocr IMAGES --rec-model {folder}"
               if (folder / "rec.onnx").is_file() else
               f"it exported no model ({meta.get('status') or 'stopped'} before its end; "
               f"jobs resume {run_dir.name} goes on), then ocr IMAGES --rec-model {folder} "
               f"reads with it")
        raise ValueError(f"{run_dir.name} fine-tuned an OCR recognizer: {use}; {takes}")
    if kind == "train" and isinstance(model, str) and model.startswith("gpt"):
        raise ValueError(f"{run_dir.name} trained {model}: continue a text with it by "
                         f"generate {run_dir.name} \"TEXT\"; {takes}")
    if kind != "train":
        raise ValueError(f"{run_dir.name} is a{'n' if str(kind)[:1] in 'aeiou' else ''} "
                         f"{kind} job, not a training; {takes}")


def _ended_without_model(run_dir) -> str:
    """Why a table/image training's folder holds no model to predict with, when its event
    log says it did not finish ("" when it did, or the log cannot be read): a failed job
    gave "has no table.json: predict needs a job that trained mlp on a table file" for a job
    that did exactly that and failed on its data."""
    import json

    status, message = None, ""
    try:
        with open(run_dir / "events.jsonl", encoding="utf-8") as fh:
            for line in fh:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict) and event.get("type") == "status":
                    status, message = event.get("status"), str(event.get("message") or "")
    except OSError:
        return ""
    if status == "failed":
        why = f" ({message.splitlines()[0][:300]})" if message.strip() else ""
        return (f"failed{why} and saved no model to predict with: train again "
                f"(python -m skiff jobs logs {run_dir.name} has its log)")
    if status == "cancelled":
        return (f"was cancelled before it saved a model to predict with: python -m skiff "
                f"jobs resume {run_dir.name} goes on")
    if status in ("queued", "running"):
        return (f"is still {status}: its model is saved when it ends (python -m skiff jobs "
                f"wait {run_dir.name}, then predict)")
    return ""


def _check_out(out) -> None:
    """``--out FILE`` that cannot be written, said before any prediction (a folder gave
    IsADirectoryError, a file where a folder must be FileExistsError, both as tracebacks
    after every row or image was predicted); its missing folders are made when it is
    written."""
    if not out:
        return
    path = os.path.abspath(os.path.expanduser(str(out)))
    if os.path.isdir(path):
        raise ValueError(f"--out {out} is a folder: name a file in it, e.g. --out "
                         f"{os.path.join(str(out), 'predictions.csv')}")
    there = os.path.dirname(path)
    while not os.path.exists(there) and os.path.dirname(there) != there:
        there = os.path.dirname(there)
    if not os.path.isdir(there):
        raise ValueError(f"--out {out}: {there} is a file, not a folder: write the rows "
                         f"elsewhere")
    if not os.access(there, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out}: cannot write in {there} (not writable by you)")


def cli(ns: argparse.Namespace, run_dir) -> tuple[dict, str]:
    """(JSON document, text) for ``python -m skiff predict`` with the job's run folder (the
    front finds it from the id); a bad run or file raises ValueError with one line."""
    from pathlib import Path

    from skiff.kernels.train.table_predict import predict_table

    paths = ns.data if isinstance(ns.data, (list, tuple)) else [ns.data]
    _check_predicts(Path(run_dir))
    _check_out(ns.out)
    if (Path(run_dir) / "images.json").is_file():
        from skiff.kernels.train.image_predict import predict_images

        result = predict_images(run_dir, paths)  # several: the model loaded once
        result.target, result.rows = "class", result.files
        score = (f"accuracy {100 * result.score['accuracy']:.1f}% on "
                 f"{result.score['rows']} images (their class folders)" if result.score else "")
    else:
        if len(paths) > 1:  # one table: its rows and their predictions, as CSV
            files = " ".join(paths[:3]) + (" ..." if len(paths) > 3 else "")
            raise ValueError(f"a table model predicts for one CSV file, got {len(paths)} "
                             f"({files}): give one (join their rows into one file first, "
                             f"or predict each: for f in {paths[0]} ...; do python -m skiff "
                             f"predict RUN \"$f\"; done)")
        result = predict_table(run_dir, paths[0])
        score = _score_text(result.score, result.target)
    doc = result.to_json()
    notes = "".join(f"\n# {n}" for n in result.notes)  # filled cells, words never seen
    if ns.out:  # its missing folders made, as every output path's (Kind.output_folders)
        os.makedirs(os.path.dirname(os.path.abspath(os.path.expanduser(ns.out))), exist_ok=True)
        with open(os.path.expanduser(ns.out), "w", newline="", encoding="utf-8") as fh:
            result.write_csv(fh)
        doc["out"] = ns.out
        text = f"{len(result.rows)} predictions of {result.target} written to {ns.out}"
        return doc, text + (f"\n{score}" if score else "") + notes.replace("\n# ", "\n")
    buf = io.StringIO()
    result.write_csv(buf)
    return doc, buf.getvalue().rstrip("\n") + (f"\n# {score}" if score else "") + notes
