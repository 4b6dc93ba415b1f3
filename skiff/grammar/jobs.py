"""Grammar of ``%jobs`` / ``python -m skiff jobs`` and ``%devices``."""

from __future__ import annotations

import argparse
import math

from .common import (
    command,
    json_option,
    nonneg_float,
    nonneg_int,
    notebook_only,
    positive_int,
    variable_name,
)

JOB_ACTIONS = ("list", "show", "logs", "wait", "cancel", "resume", "attach", "trust", "rm",
               "prune")
STATUSES = ("queued", "running", "done", "failed", "cancelled")  # skiff.jobs.events' states
# --status also takes damaged: a run folder that cannot be read as a job (the Jobs sidebar's
# menu has it; `jobs --status damaged` was "invalid choice")
LISTED = (*STATUSES, "damaged")
_AGE = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# the words other tools taught (docker/kubectl ls, journalctl's log): `jobs ls` was "invalid
# choice: 'ls' (did you mean 'logs'?)", the wrong action suggested
ACTION_ALIASES = {"ls": "list", "log": "logs"}
# other tools' verbs for an action (kubectl, docker, slurm, systemctl): said, never done (a
# `jobs kill ID` cancels nothing unasked). `jobs remove ID` was "did you mean 'resume'?",
# `jobs kill ID` "a job? jobs show kill" (round 48)
OTHER_TOOLS_ACTIONS = {
    "kill": "cancel", "stop": "cancel", "scancel": "cancel", "abort": "cancel",
    "delete": "rm", "del": "rm", "remove": "rm", "clean": "prune", "gc": "prune",
    "status": "show", "info": "show", "inspect": "show", "describe": "show",
    "restart": "resume", "continue": "resume", "ps": "list", "tail": "logs",
}


def _action(word: str) -> str:
    """The action a word names (``ls``: ``list``); a word that is no action and close to
    none is taken for a job (``jobs 7a00``) and the error says how to show it."""
    from .common import did_you_mean

    word = ACTION_ALIASES.get(word, word)
    meant = OTHER_TOOLS_ACTIONS.get(word.lower()) if isinstance(word, str) else None
    if meant is not None:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {word!r} (did you mean {meant!r}?) (choose from "
            f"{', '.join(JOB_ACTIONS)})")
    if word in JOB_ACTIONS or did_you_mean(word, JOB_ACTIONS):
        return word  # argparse's own check names the closest action
    alias = did_you_mean(word, ACTION_ALIASES)  # `jobs lss` was taken for a job's id
    if alias:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {word!r}{alias} (choose from {', '.join(JOB_ACTIONS)})")
    raise argparse.ArgumentTypeError(
        f"invalid choice: {word!r} is no action (choose from {', '.join(JOB_ACTIONS)}); a "
        f"job? jobs show {word}")


def age_seconds(text: str) -> float:
    """``90s``, ``30m``, ``12h``, ``7d``, ``2w`` (or plain seconds)."""
    t = str(text).strip().lower()
    try:
        age = float(t[:-1]) * _AGE[t[-1]] if t and t[-1] in _AGE else float(t)
    except ValueError:
        age = None
    if age is None or not math.isfinite(age) or age < 0:  # -5d removed nothing, silently
        raise argparse.ArgumentTypeError(
            f"expected an age like 30m, 12h or 7d (0 or more), got {text!r}")
    return age


@command("jobs", help="List, show, wait for, cancel or reattach to jobs in the run folders; "
                      "logs ID prints a job's log (-f: as it is written, -n N: its last N "
                      "lines); resume ID goes on with a stopped train or ocr job where it "
                      "stopped (a train job that finished: as many steps again; resume ID "
                      "--lr X: with train's options changed, the line said); rm ID... "
                      "and prune remove finished runs; "
                      "trust ID signs a run folder's code with your key (after reading it).")
@json_option
def JOBS(p):
    p.add_argument("action", nargs="?", default="list", choices=JOB_ACTIONS, type=_action,
                   help="what to do (default: list); show, logs, cancel, resume, attach "
                        "and trust take an ID, wait and rm one or more, prune none")
    p.add_argument("job_id", nargs="?", default=None, metavar="ID",
                   help="a job id (a unique prefix or suffix is enough) or a job's name")
    p.add_argument("more_ids", nargs="*", default=[], metavar="ID",
                   help="rm: more jobs to remove; wait: more jobs to wait for")
    p.add_argument("--all", action="store_true",
                   help="list every job, not only the newest; rm NAME --all: every job of "
                        "that --name (a name several jobs share is refused without it)")
    p.add_argument("--limit", type=positive_int, default=20, metavar="N",
                   help="list the newest N jobs (default 20)")
    p.add_argument("--kind", default=None, metavar="KIND", help="list only jobs of this kind")
    p.add_argument("--status", default=None, choices=LISTED,
                   help="list only jobs in this state (damaged: run folders that cannot be "
                        "read as a job)")
    p.add_argument("--older-than", type=age_seconds, default=None, metavar="AGE",
                   help="prune: finished jobs started longer ago than AGE (30m, 12h, 7d)")
    p.add_argument("--keep", type=nonneg_int, default=None, metavar="N",
                   help="prune: keep the newest N finished jobs")
    p.add_argument("--dry-run", action="store_true",
                   help="rm, prune: list the jobs that would be removed, remove nothing; "
                        "resume: what it would run, start nothing")
    p.add_argument("-f", "--follow", action="store_true",
                   help="show: follow the job live until it ends (as attach); logs: print "
                        "each new log line as the job writes it, until it ends (with "
                        "--json: one JSON line each record)")
    p.add_argument("-n", "--tail", type=nonneg_int, default=None, metavar="N",
                   help="logs: only the last N lines (with -f: then each new one); "
                        "list: the newest N jobs (as --limit)")
    p.add_argument("--timeout", type=nonneg_float, default=None, metavar="SECONDS",
                   help="wait: seconds to wait at most (then exit status 124)")
    p.add_argument("--grace", type=nonneg_float, default=None, metavar="S",
                   help="cancel: seconds a job that does not stop at its next step is given "
                        "before it is signalled (default 5)")
    notebook_only(p.add_argument("--wait", action="store_true",
                                 help="resume: block until the new job ends (a terminal's "
                                      "jobs resume always does; %%jobs wait ID waits for "
                                      "any job)"))
    notebook_only(p.add_argument("-o", "--output", metavar="NAME", default=None,
                                 type=variable_name,
                                 help="store the job in the notebook variable NAME"))


# the options of one action or a few: given to another, refused (they were dropped unread)
_GOES_WITH = (("--all", "all", ("list",)), ("--limit", "limit", ("list",)),
              ("--kind", "kind", ("list", "prune")), ("--status", "status", ("list", "prune")),
              ("--older-than", "older_than", ("prune",)), ("--keep", "keep", ("prune",)),
              ("--timeout", "timeout", ("wait",)), ("--tail", "tail", ("logs",)),
              ("--grace", "grace", ("cancel",)))
_DEFAULTS = {"limit": 20}


def action_options(ns: argparse.Namespace) -> dict:
    """Keyword arguments of :func:`skiff.jobs.jobs_action` from a parsed ``jobs`` line
    (``--dry-run`` on an action that removes nothing is refused here, for every front)."""
    if getattr(ns, "dry_run", False) and ns.action not in ("rm", "prune", "resume"):
        raise ValueError(f"--dry-run goes with rm and prune (what they would remove) and with "
                         f"resume (what it would run); jobs {ns.action} changes nothing")
    if ns.action == "list" and getattr(ns, "tail", None) is not None:
        # `jobs ls -n 3` (git log -n): the newest N, as --limit N
        if ns.tail < 1:
            raise ValueError(f"jobs list -n N lists the newest N jobs (1 or more), got "
                             f"{ns.tail}")
        ns.limit, ns.tail = ns.tail, None
    if ns.action == "rm" and getattr(ns, "all", False) and not ns.job_id:
        # `jobs rm --all` said "rm needs a job ID"; --all goes with a name (rm NAME --all)
        raise ValueError("jobs rm removes the jobs named (rm NAME --all: every job of that "
                         "name); every finished job: jobs prune --keep 0")
    given = [(flag, actions) for flag, dest, actions in _GOES_WITH
             if getattr(ns, dest, None) not in (None, False, _DEFAULTS.get(dest))
             and ns.action not in actions and not (ns.action == "rm" and dest == "all")]
    if given:  # `jobs rm ID --older-than 7d` removed ID whatever its age, the option unread
        flag, actions = given[0]
        if ns.action == "rm" and flag in ("--kind", "--status", "--older-than", "--keep"):
            raise ValueError(f"{flag} goes with {' and '.join(actions)}; jobs rm removes the "
                             f"jobs named (finished jobs by age, kind or status: jobs prune "
                             f"--keep 0 or --older-than AGE)")
        raise ValueError(f"{flag} goes with {' and '.join(actions)}; jobs {ns.action} does not "
                         f"read it")
    if getattr(ns, "follow", False):
        if ns.action not in ("show", "logs", "attach"):
            raise ValueError(f"--follow goes with show and logs (a job followed live until it "
                             f"ends); jobs {ns.action} does not follow")
        if not ns.job_id or ns.more_ids:
            raise ValueError(f"jobs {ns.action} --follow follows one job: give its ID")
    return {"all": ns.all, "timeout": ns.timeout, "limit": ns.limit, "kind": ns.kind,
            "status": ns.status, "more_ids": tuple(ns.more_ids), "older_than": ns.older_than,
            "keep": ns.keep, "dry_run": ns.dry_run}


def resume_extras(words, *, cli: bool = False):
    """``(ID, the words left, the parsed line)`` of a ``jobs resume ID --lr 0.01`` line
    (words resume does not read: a kind's options), else None; the fronts ask the job's
    kind what they mean (:func:`skiff.jobs.going_on.resume_line`)."""
    from .common import GrammarError, split_line

    try:
        ns, extras = JOBS.parser(cli=cli).parse_known_args(split_line(words))
    except GrammarError:
        return None
    if ns.action != "resume" or not ns.job_id or not extras:
        return None
    return ns.job_id, [*ns.more_ids, *extras], ns


def removed_text(action: str, ids: list[str], dry_run: bool = False) -> str:
    """What ``jobs rm`` / ``jobs prune`` say they did (``--dry-run``: would do)."""
    if not ids:
        return f"{action}: no job {'would be ' if dry_run else ''}removed"
    many = f"{len(ids)} job{'s' if len(ids) != 1 else ''}: " + ", ".join(ids)
    if dry_run:
        return f"{action} (dry run, nothing removed): would remove {many}"
    return f"{action}: removed {many}"


def removed_document(ids: list[str], dry_run: bool = False) -> dict:
    """``--json`` of ``jobs rm`` / ``jobs prune``: the same keys either way (round 42: a
    script read ``removed`` of a dry run, a KeyError): ``{"dry_run": false, "removed":
    [...], "would_remove": []}``, or with ``--dry-run`` ``{"dry_run": true, "removed": [],
    "would_remove": [...]}``."""
    return {"dry_run": bool(dry_run), "removed": [] if dry_run else list(ids),
            "would_remove": list(ids) if dry_run else []}


@command("devices", help="List the CPU and every GPU with their memory.")
@json_option
def DEVICES(p):
    pass
