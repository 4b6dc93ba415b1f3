"""One magic per job kind, made from the registry: ``%train``, ``%%train``, ``%solve``,
``%%solve``, ``%ocr``, and any kind added to :mod:`skiff.kinds` with a grammar.

Each magic parses with the kind's grammar, lets the kind prepare the job from the notebook's
variables, and launches it (:func:`skiff.jobs.submit`); then stores it (``-o NAME``), waits
(``--wait``) and returns it for display. Nothing here is specific to a kind.
"""

from __future__ import annotations

import sys

from skiff.grammar.common import asks_for_help
from skiff.jobs import submit
from skiff.kinds import KINDS, Kind

from .base import finish_launch, usage_errors

__all__ = ["kind_magic", "register_kind_magics", "magic_parser", "magic_usage", "FRONT_FLAGS",
           "view_first"]


def kind_magic(kind: Kind, *, doc: bool = True):
    """The magic function of ``kind`` (``shell`` is bound when it is registered); ``doc``:
    its usage as ``__doc__`` now (it builds the kind's grammar)."""

    def magic(line: str = "", cell: str | None = None, *, shell=None):
        if asks_for_help(line):  # anywhere on the line: %train mlp --steps 5 --help
            print(magic_usage(kind))
            return None
        with usage_errors(command=kind.name, line=line):
            as_json = _without_flag(line, "--json")  # the terminal's document, one grammar
            line = line if as_json is None else as_json
            dry = _without_flag(line, "--dry-run")
            if dry is not None:  # the plan and config, no run folder, no job
                return _show_dry_run(kind, dry, cell, shell, as_json=as_json is not None)
            _keep_variables(kind, line, shell.user_ns)
            first = None if as_json is not None else view_first(shell, line)
            job, opts = submit(kind.name, line, cell=cell, user_ns=shell.user_ns,
                               prog=f"%{kind.name}", on_created=first)
        if as_json is not None and getattr(job, "submission", None) is None:
            opts["wait"] = True  # waited for: the document needs its end (a Slurm job's:
            # its script and queue, with --wait its end too, as the terminal's)
        job = finish_launch(shell, job, opts)
        if as_json is not None:
            import json

            from skiff.jobs.render import job_document

            doc, going_on = job_document(job, kind, front="magic")
            print(json.dumps(doc, ensure_ascii=False, default=str), flush=True)
            if going_on:
                print(going_on, file=sys.stderr, flush=True)
            return None
        if opts.get("wait"):
            # the terminal's stdout, where a flag asks for it (%ocr --out -: the text)
            text = kind.cell_text(job) if job.status == "done" else None
            if text is not None:
                print(text, end="" if text.endswith("\n") else "\n")
            elif kind.show_value and job.done and job.value is not None:
                from IPython.display import display

                display(job.value)
        else:
            note = kind.cell_note(job)
            if note:
                print(note)
        return job

    magic.__name__ = kind.name
    if doc:  # the usage holds the description: ``%train?`` showed it twice
        magic.__doc__ = magic_usage(kind)
    return magic


def view_first(shell, line: str):
    """In a notebook, the ``on_created`` of a magic's job that is not waited for: the job's
    view (its widget) shown at once, before the job starts, and then not shown again as the
    cell's value (None: nothing to do). It was the cell's value, shown when the cell ended: a
    thread job's own first print (a warning, a model's line) came above it, or under it,
    as fast as the job was (round 43). A waited job is shown at its end, as before, and so
    is a job in IPython in a terminal (no widget: its text, a snapshot, is the newest at
    the cell's end)."""
    from skiff.grammar.common import split_line
    from skiff.widgets import display as shown

    if not shown.widgets_enabled():
        return None
    try:
        words = split_line(line)
    except ValueError:
        return None
    if "--wait" in words:
        return None

    def show(job) -> None:
        from IPython.display import display

        display(job)
        job._shown_in_cell = getattr(shell, "execution_count", None)

    return show


# the words every kind's magic takes beyond its grammar (taken out of the line before it is
# parsed, :func:`_without_flag`), with what they do in a notebook
FRONT_FLAGS = {
    "--json": "wait for the job and print the JSON document python -m skiff prints for it "
              "(the cell's value is None; -o NAME still keeps the job)",
    "--dry-run": "check the job and show what it would run (its plan, config and command), "
                 "starting nothing and making no run folder",
}
SLURM_WORDS = {"--dry-run": " (with --launcher slurm: the sbatch script, checked by sbatch "
                             "--test-only where it exists)",
               "--json": "; with --launcher slurm: its script and queue, at once (with --wait "
                         "its end too)"}


def magic_parser(kind: Kind):
    """The kind's grammar as its magic reads it: every option the grammar has, plus the
    words every magic takes (:data:`FRONT_FLAGS`), so that ``%solve?`` and ``%solve --help``
    name each word the magic takes (``--json`` was taken and never shown)."""
    parser = kind.command.parser(prog=f"%{kind.name}")
    group = None
    for flag, text in FRONT_FLAGS.items():
        if "--launcher" in parser._option_string_actions:
            text += SLURM_WORDS[flag]
        action = parser._option_string_actions.get(flag)
        if action is not None:
            action.help = text  # the grammar's own words are a terminal's
            continue
        if group is None:
            group = parser.add_argument_group("every magic also takes")
        group.add_argument(flag, action="store_true", help=text)
    return parser


def magic_usage(kind: Kind) -> str:
    """``%KIND?`` and ``%KIND --help``: :func:`magic_parser`'s help."""
    return magic_parser(kind).format_help()


def _keep_variables(kind: Kind, line: str, user_ns: dict) -> None:
    """``-o NAME`` where NAME is a variable the line itself reads (``%train mlp (X, y) -o
    X``, ``%solve A b -o A``): refused before the job starts. Storing the job there replaced
    the user's data with the job, and the same line run again read the job as its data."""
    import re

    from skiff.grammar.common import split_line
    from skiff.jobs import Job

    try:
        words = split_line(line)
    except ValueError:  # unbalanced quotes: the grammar says so
        return
    actions = kind.command.parser()._option_string_actions
    output, read, skip, depth = None, set(), False, 0
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if depth > 0 or word[:1] in "([":  # an expression: %train mlp (X, y), [a, b]
            read.update(re.findall(r"[A-Za-z_]\w*", word))
            depth += sum(word.count(c) for c in "([") - sum(word.count(c) for c in ")]")
            continue
        flag = word.split("=", 1)[0]
        if flag in ("-o", "--output"):
            output = word.split("=", 1)[1] if "=" in word else \
                (words[i + 1] if i + 1 < len(words) else None)
            skip = "=" not in word
            continue
        if word.startswith("-"):
            action = actions.get(flag)
            skip = "=" not in word and action is not None and action.nargs != 0
            continue
        if word.isidentifier():  # a variable's name (a path is none: data.csv, ./A.mtx)
            read.add(word)
    if output and output in read and output in user_ns and \
            not isinstance(user_ns[output], Job):
        raise ValueError(f"-o {output} would replace the notebook's {output}, which this line "
                         f"reads ({type(user_ns[output]).__name__}): store the job under "
                         f"another name, e.g. -o {output}_job")


def _without_flag(line: str, flag: str) -> str | None:
    """The line with its ``flag`` word taken out, or None when it has none. Every kind's
    magic takes ``--dry-run`` (in a terminal too), even where its grammar does not list it
    (%ocr, %chat, %generate: they run on this machine only), and ``--json`` (the terminal's
    document, printed once the job ended); the line shown and recorded is the one that
    would start the job. A flag inside a quoted text (a prompt) is text, not the option."""
    import re

    from skiff.grammar.common import split_line

    try:
        words = split_line(line)
    except ValueError:  # unbalanced quotes: the grammar says so
        return None
    if flag not in words:
        return None
    outside = []  # the matches outside quotes: the text before them splits cleanly
    for m in re.finditer(rf"\s*(?<!\S){re.escape(flag)}(?!\S)", line):
        try:
            split_line(line[:m.start()])
        except ValueError:
            continue
        outside.append(m)
    if not outside:
        return None
    for m in reversed(outside):
        line = line[:m.start()] + line[m.end():]
    return line.strip()


def _show_dry_run(kind: Kind, line: str, cell: str | None, shell, *, as_json: bool = False):
    """What the job would run, in the cell (``-o NAME``: stored); ``as_json``: printed as
    the terminal's ``--dry-run --json`` prints it."""
    from .dryrun import DryRun, dry_run_document

    doc = DryRun(dry_run_document(kind.name, line, cell, shell.user_ns, f"%{kind.name}"))
    if doc["options"].get("output"):
        shell.user_ns[doc["options"]["output"]] = doc
    if as_json:
        import json

        print(json.dumps(dict(doc), ensure_ascii=False, default=str))
        return None
    return doc


def register_kind_magics(ipython) -> list[str]:
    """Register the magic of every kind that has a grammar; returns their names. A magic's
    usage (``%train?``) is built when asked for: building every kind's grammar imported
    the OCR and solve kernels and SciPy (``%load_ext skiff`` took ~1.2 s)."""
    names = []
    for kind in KINDS.values():
        if kind.command is None:
            continue
        ipython.register_magic_function(_KindMagic(kind, ipython),
                                        magic_kind="line_cell" if kind.cell else "line",
                                        magic_name=kind.name)
        names.append(kind.name)
    return names


class _KindMagic:
    """A kind's magic bound to the shell; its ``__doc__`` (the usage) is made when read."""

    def __init__(self, kind: Kind, shell) -> None:
        self.kind, self.shell, self.__name__ = kind, shell, kind.name
        self._fn = kind_magic(kind, doc=False)

    def __call__(self, line: str = "", cell: str | None = None):
        return self._fn(line, cell, shell=self.shell)

    @property
    def __doc__(self) -> str:  # type: ignore[override]
        return magic_usage(self.kind)
