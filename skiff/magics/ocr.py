"""``%ocr PATH|GLOB|VAR [--lang SET] [--device DEV] [--batch-size B] [--out F.jsonl] [-o NAME]``.

Files, folders and patterns launch an ``ocr`` job (a thread, or MPI processes with ``--np``);
a notebook variable holding an image array, a PIL image, a path or a list of them is read by a
thread job of this kernel (``fn=``), since its pixels live here. The job shows progress per
image and the first images drawn with their boxes; ``job.value`` is an
:class:`~skiff.kernels.ocr.entry.OcrRun` whose HTML view is each image with its boxes and a
table of lines. With ``--wait`` the magic shows that view when the job ends.
"""

from __future__ import annotations

from IPython.core.magic import Magics, line_magic, magics_class

from skiff.grammar import split_launch
from skiff.grammar.ocr import COMMAND, to_config

from .base import finish_launch, parse_line, usage_errors

__all__ = ["OcrMagics", "launch_ocr"]


def _is_image(obj) -> bool:
    import os

    if isinstance(obj, (str, os.PathLike)):  # a path held in a variable: read like a file
        return True
    if hasattr(obj, "shape") and hasattr(obj, "dtype"):
        return len(obj.shape) in (2, 3)
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - pillow is a core dependency
        return False
    return isinstance(obj, Image.Image)


def _variable_images(names: list[str], user_ns: dict) -> list | None:
    """The images held by notebook variables ``names``, or None when they are not variables.
    Mixing variables and paths is refused."""
    found = [n for n in names if n.isidentifier() and n in user_ns]
    if not found:
        return None
    if len(found) != len(names):
        raise ValueError(f"give either notebook variables or paths, not both; got {names!r}")
    images = []
    for name in names:
        value = user_ns[name]
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        bad = [type(v).__name__ for v in items if not _is_image(v)]
        if bad or not items:
            raise TypeError(f"variable {name!r} must hold an image array, PIL image, path or "
                            f"a list of them, got {bad[0] if bad else 'an empty list'}")
        images.extend(items)
    return images


def launch_ocr(line: str, user_ns: dict | None = None):
    """Parse an ``%ocr`` line and launch its job: ``(job, launch options)``."""
    from skiff.jobs import launch

    ns = COMMAND.parse(line, prog="%ocr")
    values, opts = split_launch(ns)
    images = _variable_images(values["inputs"], user_ns or {})
    np_, runner = opts.get("np", 1), opts.get("runner", "auto")
    if images is None:
        config = to_config(values)
        job = launch("ocr", config, np=np_, runner=runner, device=config["device"])
        return job, opts
    if np_ > 1 or runner == "process":
        raise ValueError("images held in notebook variables are read on a thread of this "
                         f"kernel; drop --np/--runner process (got np={np_}, runner={runner!r})")
    config = to_config(values, check_inputs=False)
    config["inputs"] = [f"<variable {n}>" for n in values["inputs"]]
    from skiff.kernels.ocr.entry import run

    def job_fn(cfg, reporter):
        return run({**cfg, "images": images}, reporter)

    job = launch("ocr", config, fn=job_fn, runner="thread", device=config["device"],
                 label=f"%ocr {' '.join(values['inputs'])}")
    return job, opts


@magics_class
class OcrMagics(Magics):
    @line_magic
    def ocr(self, line=""):
        """Read the text in images: ``%ocr PATH|GLOB|VAR [--lang SET] [--device DEV]
        [--batch-size B] [--out FILE.jsonl] [--det-model F] [--rec-model F] [--dict F]
        [--np N] [--wait] [-o NAME]``."""
        parse_line(COMMAND, line)  # usage errors first, as one line
        with usage_errors():
            job, opts = launch_ocr(line, self.shell.user_ns)
        job = finish_launch(self.shell, job, opts)
        if opts.get("wait") and job.value is not None:
            from IPython.display import display

            display(job.value)
        return job
