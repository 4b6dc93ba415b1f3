"""What a job kind is: one object that knows its grammar, its config, the kernel entry that
runs it, how it recognises and uses notebook objects, and how its result comes back.

Fronts (magics, the CLI, panels) never decide any of this themselves: they parse words with
``kind.command``, hand the values to ``kind.prepare``, and pass the :class:`JobRequest` it
returns to :func:`skiff.jobs.launch`, which alone decides thread, MPI processes or Slurm.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass

from skiff.grammar.common import Command

__all__ = ["Kind", "JobRequest", "resolve_entry", "figure"]


def figure(value) -> str:
    """A number for people: 3 significant digits (``0.000201``, ``3.31``, ``1,234``,
    ``7.0e-09``); integers whole; anything else as text."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return str(value)
    size = abs(value)
    if size == 0:
        return "0"
    if size < 1e-3 or size >= 1e6:
        mantissa, _, exponent = f"{value:.2e}".partition("e")
        return f"{_trim(mantissa)}e{exponent}"
    if size >= 1:
        return _trim(f"{value:,.{max(0, 2 - int(math.floor(math.log10(size))))}f}")
    return f"{value:.3g}"


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


@dataclass
class JobRequest:
    """What a kind asks the launcher to run.

    ``config`` is the JSON config a kernel entry runs from (what ``config.json`` records).
    ``fn(config, reporter)``, when given, is how the job runs on a thread of this process
    (it may use notebook objects); as processes the kind's entry runs from ``config`` alone.
    ``local_only`` says why a job cannot run as processes at all (its objects live here):
    the launcher raises it if asked to. ``on_done`` is called with the Job once it ends
    (e.g. to put a trained model in the notebook).
    """

    kind: str
    config: dict
    fn: Callable | None = None
    local_only: str | None = None
    label: str | None = None
    on_done: Callable | None = None


# the seconds Kind.unread_options may spend asking a kind which options a job reads (the
# options it has no time to ask about are listed, as every option was before)
PROBE_BUDGET_S = 0.25


class Kind:
    """A job kind. Subclasses set ``name``, ``command``, ``entry`` and override what differs.

    ``entry`` is ``"module:function"``; the function runs the job from its config as
    ``fn(config, reporter)`` on any runner (a thread, each MPI rank, a Slurm task).
    """

    name: str = ""
    command: Command | None = None
    entry: str = ""
    cell: bool = True         # a %%NAME cell magic too
    show_value: bool = False  # display the job's value when a magic waited for it

    # grammar ------------------------------------------------------------------------------
    def to_config(self, values: dict) -> dict:
        """Validate parsed values and return the kernel config (ValueError: one line); keys
        that start with ``_`` are the front's (``_given``: the options the user named)."""
        return {k: v for k, v in values.items() if not str(k).startswith("_")}

    def preparse(self, line: str, user_ns: dict) -> tuple[str, dict]:
        """Rewrite a magic line before parsing (e.g. evaluate an inline expression)."""
        return line, user_ns

    # notebook objects ---------------------------------------------------------------------
    def prepare(self, values: dict, *, cell: str | None = None, user_ns: dict | None = None,
                where: str = "thread") -> JobRequest:
        """The job these parsed values (and ``%%`` cell) describe. ``user_ns`` holds the
        notebook's variables (empty in a terminal); ``where`` is where the launcher will
        run it (:func:`skiff.jobs.choose_runner`: thread, process or slurm)."""
        if cell is not None:
            raise ValueError(f"%%{self.name} takes no cell")
        values.pop("source", None)
        return JobRequest(self.name, self.to_config(values), label=f"%{self.name}")

    def unread_options(self, values: dict, config: dict, *, cell: str | None = None,
                       user_ns: dict | None = None, where: str = "thread",
                       prepare_s: float = 0.0, budget_s: float | None = None) -> set[str]:
        """The options in ``values`` (parsed, the launch options split off, as
        :meth:`prepare` took them) that the job ``config`` was prepared from does not read:
        ``jobs show`` leaves them out (a cylinder solve listed ``grid [256, 256]`` and
        ``rtol 1e-08``, a poisson grid's options). An option is read when its value reaches
        the config (by its name, ``no_X`` as ``X`` or ``use_X``, ``X_Y`` as ``X`` set: the
        ``lora_*`` options as ``lora``) while it is unset; set, when the kind takes it typed
        here, for a kind refuses an option the job does not read, typed even at its default
        (``solve cylinder --grid 256x256``; a config may hold keys its problem ignores).
        Typed options are read. The probes stop (the options left are listed) before they
        would take more than ``budget_s`` seconds (:data:`PROBE_BUDGET_S`), each costing
        what the last one did, or ``prepare_s`` (the kind's prepare, timed by the caller)
        when that took over a second: a large matrix file is read by each (0.06 s for 600k
        entries). A kind with a table (:meth:`typed_refusals`) is not probed: the table says
        it at once."""
        from skiff.grammar.common import GIVEN

        typed = set(values.get(GIVEN) or ())
        mine = [name for name in values if not str(name).startswith("_") and name not in typed]
        # unset: read if something in the config came from it
        unread = {name for name in mine if values[name] is None and not _reaches(name, config)}
        asked = [name for name in mine if values[name] is not None]
        table = self.typed_refusals(values, asked, cell=cell, user_ns=user_ns)
        if table is None:
            table = self.probe_refusals(values, asked, cell=cell, user_ns=user_ns,
                                        where=where, prepare_s=prepare_s, budget_s=budget_s)
        return unread | set(table)

    def probe_refusals(self, values: dict, names: list[str], *, cell: str | None = None,
                       user_ns: dict | None = None, where: str = "thread",
                       prepare_s: float = 0.0, budget_s: float | None = None) -> set[str]:
        """Of ``names``, those :meth:`prepare` refuses typed, asked once per option (a flag
        left off typed turns it on), within ``budget_s`` (:meth:`unread_options`): what a
        kind's table (:meth:`typed_refusals`) must answer."""
        import time

        from skiff.grammar.common import GIVEN

        budget_s = PROBE_BUDGET_S if budget_s is None else budget_s
        refused: set[str] = set()
        # a prepare over a second read data (imports take less): each probe would too
        spent, last = 0.0, float(prepare_s) if prepare_s > 1.0 else 0.0
        for name in names:
            if spent + last > budget_s:  # listed rather than slow: nothing else differs
                continue
            start = time.perf_counter()
            probe = {k: v for k, v in values.items() if k != GIVEN}
            probe[GIVEN] = [name]
            if probe[name] is False:  # a flag left off: typing it turns it on
                probe[name] = True
            try:
                self.prepare(probe, cell=cell, user_ns=dict(user_ns or {}), where=where)
            except Exception:  # noqa: BLE001  (refused only when typed: not read here)
                refused.add(name)
            last = time.perf_counter() - start
            spent += last
        return refused

    def typed_refusals(self, values: dict, names: list[str], *, cell: str | None = None,
                       user_ns: dict | None = None) -> set[str] | None:
        """Of ``names`` (options set in ``values``, not typed), those the job would refuse
        typed, told from the kind's own tables without preparing it again (the solve kind:
        ``SolveKind.typed_refusals``, by the rule its option checks raise from); None: no
        table, :meth:`unread_options` asks :meth:`prepare` once per option. A table must
        answer as those probes do (tests/cli/test_typed_refusals_r27.py checks it)."""
        return None

    # the kind's kernel logs the line check_launch returns itself (train: the trainer's
    # "plan: ..."): launch leaves it out of the job's log, where it was twice
    kernel_logs_plan = False

    def check_launch(self, config: dict, *, ranks: int) -> str | None:
        """Checks that need to know how many ranks the job gets (ValueError: one line);
        :func:`skiff.jobs.launch` calls it before the run folder exists. It may record what
        it decided in ``config`` and return it as a line for the job's log (solve: the
        grid's decomposition over the ranks)."""

    def output_folders(self, config: dict) -> list[str]:
        """The folders a job's output files go in that :func:`skiff.jobs.launch` makes when
        it starts the job (not on a dry run): the one rule for a path the user names for
        something a job writes is that its missing folders are made, as ``mkdir -p`` would
        (``ocr --out DIR/x.txt``, ``train --out``/``--checkpoint-dir`` by their writers,
        ``solve --save DIR/x.npz`` here); the front checks first that the nearest folder
        that is there is writable."""
        return []

    def trusted_folders(self, config: dict) -> list[str]:
        """Run folders whose recorded config the job builds from (``generate JOB``: the
        model a train job built, a ``%%train`` cell's source run again): :func:`skiff.jobs.
        launch` refuses one whose code is not signed by this user, as ``jobs resume`` does
        (round 37: an altered folder's cell ran in ``generate``)."""
        return []

    def launch_device(self, spec: str | None, *, ranks: int = 1,
                      gpus: int | None = None) -> tuple[str, str]:
        """``(device, why)``: ``--device`` resolved once, at launch, for a job of ``ranks``
        ranks (``gpus``: GPUs per node of a cluster launch); the config carries the answer."""
        from skiff.kernels.backend.devices import DEFAULT_DEVICE, launch_device

        device = launch_device(spec, ranks=ranks, gpus=gpus)
        asked = DEFAULT_DEVICE if spec is None else str(spec)
        return device, "as asked" if asked == device else f"{asked}: resolved at launch"

    # results ------------------------------------------------------------------------------
    def live_html(self, job, state) -> str | None:
        """What the job view shows while the job runs, from its folded events (chat: the
        answer so far); None: nothing."""
        return None

    def summary(self, result: dict) -> list[str]:
        """A few lines for a terminal about a finished job's ``result.json``: its key
        figures, rounded for people. The default lists the plain numbers and words."""
        lines = []
        for key, value in result.items():
            if isinstance(value, (int, float, str)) and value != "":
                lines.append(f"{key}: {figure(value)}")
        return lines[:8]

    def summary_of(self, job, result: dict) -> list[str]:
        """:meth:`summary` of ``job``'s result, where the fronts have the job (the terminal's
        summary, ``jobs show``): a kind that names the job in its lines (how to go on from a
        checkpoint kept outside its run folder) overrides this."""
        return self.summary(result)

    def terminal_text(self, job, values: dict) -> tuple[str | None, bool]:
        """What ``python -m skiff`` prints on stdout for a finished job besides its summary
        (OCR: the text it read), and whether stdout holds that alone (the summary then goes
        to stderr): ``(None, False)`` for nothing. ``values``: the command's options."""
        return None, False

    def cell_text(self, job) -> str | None:
        """What a magic started with ``--wait`` prints in the cell for a finished job instead
        of displaying its value, as the terminal prints it (OCR with ``--out -``: the text
        read); None: the value is displayed."""
        return None

    def cell_note(self, job) -> str | None:
        """A line a magic started without ``--wait`` prints under the job's view (an option
        whose terminal meaning needs the job's end: OCR's ``--out -``); None: nothing."""
        return None

    def failures(self, job) -> list[str]:
        """``"input: why"`` for each part of a finished job that failed while the rest
        went on (OCR: the images it could not read); a front exits non-zero when any."""
        return []

    def resume_config(self, job) -> dict:
        """The config that continues ``job`` from where it stopped."""
        raise ValueError(f"{self.name} jobs cannot be resumed (job {job.id})")

    def run(self, config: dict, reporter):
        """Run the kind's entry point (what the runners call)."""
        return resolve_entry(self.entry)(config, reporter)


def _reaches(name: str, config: dict) -> bool:
    """Whether option ``name``'s value reaches ``config``: under its name, a negated flag
    (``no_det``) as ``det`` or ``use_det``, or a group's option (``lora_r``) as its group set
    (``lora``); ``early_stop`` as ``early_stopping``."""
    bare = name.removeprefix("no_")
    if any(key in config for key in (name, bare, f"use_{bare}")):
        return True
    head = name.split("_", 1)[0]
    if "_" in name and config.get(head) not in (None, False, "", {}, []):
        return True
    return len(name) > 4 and any(str(key).startswith(name) for key in config)


def resolve_entry(target: str | Callable) -> Callable:
    """The function behind ``"module:function"`` (a callable passes through)."""
    if callable(target):
        return target
    module, sep, name = str(target).partition(":")
    if not sep:
        raise ValueError(f"an entry point is 'module:function', got {target!r}")
    return getattr(importlib.import_module(module), name)
