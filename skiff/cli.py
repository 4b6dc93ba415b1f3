"""``python -m skiff devices|jobs|plan|predict|<kind>``: the magics' grammar in a terminal.

Every job kind with a grammar (:mod:`skiff.kinds`: train, solve, ocr, …) is a command: it
launches the job (:func:`skiff.jobs.submit`, as the magics do), follows it on stderr like
tqdm (:mod:`skiff.jobs.terminal`: one live line on a terminal, plain lines in a log) and
prints a short summary to stdout; ``--json`` prints only one JSON document to stdout
(``{"job": ..., "result": ..., "failed": [...]}``, non-ASCII text as it is). Options that
mean something only in a notebook (``-o NAME``) are not offered. ``--dry-run`` checks a job
and prints what it would run, starting nothing. Exit status: :data:`EXIT_CODES` (printed by
``--help``). SIGTERM to a command that runs a job cancels the job as Ctrl-C does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import tempfile
import threading
import warnings

from skiff.grammar import GrammarError, json_option, user_message
from skiff.grammar.common import did_you_mean, dry_run_option
from skiff.grammar.jobs import DEVICES, JOBS
from skiff.grammar.plan import COMMAND as PLAN
from skiff.grammar.predict import COMMAND as PREDICT

__all__ = ["main", "TOOLS"]

# commands that are not jobs
TOOLS = {"devices": DEVICES, "jobs": JOBS, "plan": PLAN, "predict": PREDICT}

# exit status of every command, for scripts (``--help`` prints this table)
OK, FAILED, USAGE, CANCELLED, TIMEOUT, INTERRUPTED = 0, 1, 2, 3, 124, 130
EXIT_CODES = (
    (OK, "done (jobs wait: the job it waited for is done)"),
    (FAILED, "the job failed, a solve did not converge, or some OCR inputs failed"),
    (USAGE, "bad usage: an unknown option or value, no such job or file (one line)"),
    (CANCELLED, "the job was cancelled elsewhere (jobs cancel, a notebook's Cancel)"),
    (TIMEOUT, "jobs wait --timeout ran out first (the job goes on)"),
    (INTERRUPTED, "Ctrl-C or SIGTERM here: the job it ran was cancelled (jobs wait: the "
                  "waiting stopped, the job goes on)"),
)


def _kinds() -> dict:
    from skiff.kinds import KINDS

    return {name: k for name, k in KINDS.items() if k.command is not None}


def _clean(text, *, keep_newlines: bool = False) -> str:
    """Text a job or a user wrote, safe on a terminal (:func:`skiff.jobs.terminal.clean`)."""
    from skiff.jobs.terminal import clean

    return clean(text, keep_newlines=keep_newlines)


def _commands() -> dict:
    """name -> Command, the job kinds first."""
    return {**{n: k.command for n, k in _kinds().items()}, **TOOLS}


def _usage() -> str:
    return ("usage: python -m skiff COMMAND [options]\n"
            "       python -m skiff COMMAND --help")


def _help() -> str:
    commands = _commands()
    width = max(map(len, commands)) + 2
    rows = [f"  {name.ljust(width)}{cmd.summary}" for name, cmd in commands.items()]
    codes = [f"  {str(code).ljust(5)}{what}" for code, what in EXIT_CODES]
    return "\n".join([_usage(), "", "Train models, solve PDEs and read documents from a "
                      "terminal: the notebook magics' grammar.", "", "commands:", *rows, "",
                      "Run 'python -m skiff COMMAND --help' for a command's options; "
                      "--json prints one JSON document on stdout (messages go to stderr), "
                      "--dry-run checks a job and starts nothing.", "", "exit status:",
                      *codes])


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_SHOWN: set[str] = set()  # skiff's warnings said in this command (once each)


def _skiff_warning(message, category, filename, lineno, file=None, line=None, *,
                   shown=warnings.showwarning):
    """skiff's own warnings (a corrupt event line skipped, a nose profile put in order) as one
    line on stderr, once each, as the errors are: `jobs` printed Python's two lines, the file
    and the source line that warned (``for event in self._reader.read():``), and a plain
    ``UserWarning`` raised inside the package was shown so, twice when the check before a
    launch and the job both warned. Others' warnings as Python shows them."""
    ours = getattr(category, "__module__", "").startswith("skiff.") or \
        os.path.abspath(str(filename)).startswith(_PACKAGE)
    if not ours:
        shown(message, category, filename, lineno, file, line)
        return
    text = _clean(message)
    if text not in _SHOWN:
        _SHOWN.add(text)
        print(f"skiff: warning: {text}", file=sys.stderr if file is None else file)


def main(argv: list[str] | None = None) -> int:
    _SHOWN.clear()
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _skiff_warning
            return _main(sys.argv[1:] if argv is None else list(argv))
    except BrokenPipeError:  # `python -m skiff ... | head`: the reader left; so do we
        with contextlib.suppress(OSError, ValueError):  # nothing more to flush at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return FAILED


def _main(argv: list[str]) -> int:
    for stream in (sys.stdout, sys.stderr):  # text no encoding can show is escaped, not fatal
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    if not argv:  # as git does: the commands, on stderr, and a usage error's status
        print(_help(), file=sys.stderr)
        return USAGE
    if argv[0] in ("-h", "--help") or argv == ["help"]:
        print(_help())
        return 0
    if argv[0] in ("-V", "--version"):
        from importlib.metadata import PackageNotFoundError, version

        try:  # the installed distribution's (skiff/__init__ is a layer above this front)
            print(f"skiff {version('skiff')}")
        except PackageNotFoundError:
            print("skiff (not installed: run from a checkout)")
        return 0
    if argv[0] == "help":  # `help train` is `train --help`
        argv = [*argv[1:2], "--help"]
    name, rest = argv[0], argv[1:]
    as_json = "--json" in rest
    if name not in _commands():
        hint = did_you_mean(name, list(_commands()))
        print(f"skiff: unknown command {name!r}{hint}: choose from "
              f"{', '.join(_commands())}\n{_usage()}", file=sys.stderr)
        return _refused(f"skiff: unknown command {name!r}{hint}", name, USAGE,
                        as_json="--json" in argv)
    try:
        if name in TOOLS:
            return _run_tool(name, rest)
        return _run_job(name, rest)
    except GrammarError as exc:
        msg = _clean(exc)  # argparse's own name the command; a grammar's check may not
        if not msg.startswith(("skiff", "python -m skiff")):
            msg = f"skiff {name}: {msg}"
        print(msg, file=sys.stderr)
        return _refused(msg, name, USAGE, as_json=as_json)
    except KeyboardInterrupt:  # a second Ctrl-C while a cancelled job stops: no traceback
        print("skiff: interrupted; a job cancelled here may still be stopping "
              "(python -m skiff jobs shows it)", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:
        from skiff.jobs.store import RunFolderError

        # RunFolderError: the runs folder cannot be made (SKIFF_RUNS names a file)
        msg = str(exc) if isinstance(exc, RunFolderError) else user_message(exc)
        if msg is None:
            raise
        print(f"skiff {name}: {_clean(msg)}", file=sys.stderr)
        return _refused(f"skiff {name}: {_clean(msg)}", name, USAGE, as_json=as_json)


def _refused(message: str, command: str, code: int, *, as_json: bool) -> int:
    """A refusal's exit status; with ``--json`` its document on stdout too, ``{"error":
    LINE, "command": NAME, "exit": CODE}`` (round 42: a script's ``json.loads`` of stdout
    met an empty string; the line on stderr is as before)."""
    if as_json:
        print(json.dumps({"error": message.splitlines()[0] if message else "",
                          "command": command, "exit": code}, ensure_ascii=False), flush=True)
    return code


def _help_requested(rest, cmd) -> bool:
    if "--help" in rest or "-h" in rest:
        print(cmd.usage(prog=f"python -m skiff {cmd.name}", cli=True))
        return True
    return False


def _refuse_notebook_flags(parser, notebook, rest: list[str]) -> None:
    """A notebook-only option typed in a terminal (``jobs -o x``: the store-in-a-variable
    option) is one line that says so and names what a terminal has instead; it was
    "invalid choice: 'x'" (argparse read the value as the action) or "unrecognized
    arguments". ``notebook`` is the same command's notebook parser (the option's help)."""
    import shlex

    flags = getattr(parser, "notebook_flags", {})
    for i, word in enumerate(rest):
        if word == "--":
            return
        flag = word.split("=", 1)[0]
        if flag not in flags and len(word) > 2 and word[:2] in flags and \
                not word.startswith("--"):
            flag = word[:2]  # -oNAME
        if flag not in flags:
            continue
        action = notebook._option_string_actions.get(flag)
        what = (action.help or "").split(";")[0].split(" (")[0].replace("%%", "%").strip() \
            if action is not None else ""
        prog = parser.prog
        options = parser._option_string_actions
        # the line typed without the option (and its value where given apart)
        takes_value = action is not None and action.nargs != 0
        apart = takes_value and word == flag and i + 1 < len(rest)
        kept = rest[:i] + rest[i + 1 + apart:]
        if "--wait" in flags[flag]:
            fix = (f"in a terminal {prog} resume waits for the new job, and {prog} wait ID "
                   f"waits for any job")
        elif "--out" in options and (not prog.endswith(" train") or "ocr-rec" in rest):
            # (train's --out is ocr-rec's model folder: `train mlp -o x` was told to use
            # --out DIR, which train mlp then refused)
            out = options["--out"]
            metavar = out.metavar if isinstance(out.metavar, str) else "FILE"
            fix = f"in a terminal, --out {metavar} writes the results there"
        elif "--json" in options:
            line = shlex.join([*kept, *(["--json"] if "--json" not in kept else [])])
            fix = (f"in a terminal, --json prints the result as one JSON document: "
                   f"{prog} {line} > FILE")
        else:
            fix = "leave it out in a terminal"
        raise GrammarError(f"{prog}: {flags[flag]} is for notebooks only"
                           f"{' (' + what + ')' if what else ''}; {fix}")


def _job_parser(k, kind: str):
    """The kind's grammar in a terminal: its options, ``--json`` and ``--dry-run``."""
    parser = k.command.parser(prog=f"python -m skiff {kind}", cli=True)
    json_option.add(parser)
    if "--dry-run" not in parser._option_string_actions:
        dry_run_option.add(parser)
    return parser


def _run_job(kind: str, rest: list[str]) -> int:
    k = _kinds()[kind]
    parser = _job_parser(k, kind)
    if "--help" in rest or "-h" in rest:
        print(parser.format_help())
        return 0
    _refuse_notebook_flags(parser, k.command.parser(), rest)
    values = vars(parser.parse_args(rest))
    stdin_file = _stdin_image(values) if kind == "ocr" else None
    if kind in ("generate", "chat"):  # a job id or --name: its run folder
        from skiff.jobs.launch import job_folder

        job_folder(values)
    try:
        if values.get("dry_run"):  # Slurm too: no run folder, no job id in no listing
            return _dry_run(kind, values, rest)
        return _submit_and_follow(k, kind, values, rest)
    finally:
        if stdin_file is not None:
            with contextlib.suppress(OSError):
                os.unlink(stdin_file)


def _dry_run(kind: str, values: dict, rest: list[str]) -> int:
    """``--dry-run``: every check a launch makes, then what it would run (stdout), with no
    run folder made and nothing started (``--launcher slurm``: the sbatch script it would
    write, in a temporary folder, checked by ``sbatch --test-only`` where sbatch exists)."""
    from skiff.jobs.dryrun_document import dry_run_document, dry_run_lines

    values = {**values, "dry_run": False}
    typed = [w for w in rest if w != "--dry-run"]
    doc = dry_run_document(kind, values=values, front="cli", typed=typed)
    if values.get("json"):
        print(json.dumps(doc, ensure_ascii=False, default=str))
        return 0
    print(_clean("\n".join(dry_run_lines(doc)), keep_newlines=True))
    return 0


def _stdin_image(values: dict) -> str | None:
    """``python -m skiff ocr -``: the image (or PDF) piped in on standard input, written to a
    temporary file the job reads (removed when it ends); its path replaces ``-``."""
    inputs = values.get("inputs") or []
    if "-" not in inputs:
        return None
    if inputs.count("-") > 1:
        raise GrammarError("skiff ocr: '-' (standard input) may be given once")
    if sys.stdin is None or sys.stdin.isatty():
        raise GrammarError("skiff ocr: '-' reads an image from standard input: pipe one in "
                           "(cat scan.png | python -m skiff ocr -)")
    data = sys.stdin.buffer.read()
    if not data:
        raise GrammarError("skiff ocr: nothing came on standard input (an empty pipe)")
    # no suffix needed: images and PDFs are told apart by their bytes when read
    fd, path = tempfile.mkstemp(prefix="skiff-stdin-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    values["inputs"] = [path if item == "-" else item for item in inputs]
    return path


def _submit_and_follow(k, kind: str, values: dict, rest: list[str]) -> int:
    from skiff.jobs import submit

    with _json_only(values.get("json")) as out:
        # the line before the job starts: a job's own first print came before it (round 42)
        job, opts = submit(kind, values=values, front="cli", typed=rest,
                           on_created=lambda j: print(f"skiff: {kind} job {j.id}",
                                                      file=sys.stderr, flush=True))
        if getattr(job, "submission", None) is not None:
            return _slurm_submitted(job, opts, out)
        return _follow_and_report(k, kind, job, opts, values, out)


@contextlib.contextmanager
def _json_only(enabled):
    """With ``--json``, stdout holds the one JSON document alone: whatever a job running on
    a thread here prints (a library's print, a warning sent to stdout) goes to stderr until
    then. Yields the stream the document goes to."""
    out = sys.stdout
    if not enabled:
        yield out
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield out


def _follow_and_report(k, kind: str, job, opts: dict, values: dict, out=None) -> int:
    """Follow a job started here to its end, print its summary (or ``--json``, to ``out``)
    and return the exit status."""
    from skiff.jobs.terminal import summary

    out = sys.stdout if out is None else out
    interrupted = _follow(job)
    failed = k.failures(job) if job.status == "done" else []
    if opts.get("json"):
        from skiff.jobs.render import job_document

        doc, going_on = job_document(job, k)  # a stopped job that can go on: how
        print(json.dumps(doc, ensure_ascii=False, default=str), file=out, flush=True)
        if going_on:
            print(f"skiff: {going_on}", file=sys.stderr, flush=True)
    else:
        text, alone = k.terminal_text(job, values) if job.status == "done" else (None, False)
        print(summary(job, k), file=sys.stderr if alone else sys.stdout)
        if text:  # what the job read (OCR's text), after the summary or alone on stdout
            sys.stdout.write(text if alone else "\n" + text)
    if failed and not (job.result or {}).get("images", 0) > len(failed):
        # the job's one result failed (a solve that did not converge): that, in one line
        print(f"skiff {kind}: " + "; ".join(_clean(f) for f in failed[:3]), file=sys.stderr)
        return FAILED
    if failed:
        shown = "\n".join(f"  {_clean(f)}" for f in failed[:20])
        more = f"\n  … and {len(failed) - 20} more" if len(failed) > 20 else ""
        print(f"skiff {kind}: {len(failed)} input{'s' if len(failed) > 1 else ''} failed "
              f"(the others were done):\n{shown}{more}", file=sys.stderr)
        return FAILED
    return _status_code(job, interrupted)


def _resume_line(job) -> tuple[str, str] | None:
    """(the line, the command) that goes on with a cancelled or failed job ``jobs resume``
    would take (train from its checkpoint, ocr-rec from its rec.ckpt, OCR from the pages
    read), else None: ``--json`` puts the command under ``resume`` and the line on stderr,
    as the summary shows it without ``--json``."""
    from skiff.jobs import resume_command
    from skiff.jobs.going_on import resume_hint

    hint = resume_hint(job)
    return (hint, resume_command(job.id)) if hint else None


def _status_code(job, interrupted: bool = False) -> int:
    """The exit status for a job that ended: :data:`EXIT_CODES` (Ctrl-C here: 130, also
    for a job that had not stopped when the waiting for it ended)."""
    if job.status == "done":
        return OK
    if job.status == "cancelled" or (interrupted and not job.done):
        return INTERRUPTED if interrupted else CANCELLED
    return FAILED


def _slurm_submitted(job, opts: dict, out=None) -> int:
    """``--launcher slurm``: the script was written (and submitted); follow only with --wait."""
    sub = job.submission
    print(f"skiff: job {job.id}: script {sub['script']}"
          + (f", Slurm job {sub['slurm_job_id']}" if sub["submitted"] else " (not queued)"),
          file=sys.stderr)
    if sub.get("plan"):
        print(f"skiff: {sub['plan']}", file=sys.stderr)
    interrupted = False
    if opts.get("wait") and sub["submitted"]:
        interrupted = _follow(job)
    if opts.get("json"):
        from skiff.jobs.render import job_document

        print(json.dumps(job_document(job, None)[0], ensure_ascii=False, default=str),
              file=sys.stdout if out is None else out, flush=True)
    if not (opts.get("wait") and sub["submitted"]):
        return OK
    return _status_code(job, interrupted)


def _attach(job_id: str):
    """``jobs attach ID``: follow a job started elsewhere live on stderr, as the command
    that started it does (it printed the job once and returned, as show does); Ctrl-C stops
    following, the job goes on. Returns the job, ended."""
    from skiff.jobs import follow, jobs_action
    from skiff.jobs.terminal import LiveDisplay

    job = jobs_action("attach", job_id)
    if not job.done:
        print(f"skiff: following job {job.id} ({job.status}); Ctrl-C stops following, the "
              f"job goes on", file=sys.stderr, flush=True)
        display = LiveDisplay(sys.stderr)
        try:
            follow(job, display.write, line=display.render, rate=display.rate, quiet_s=0.0,
                   cancel=False)
        finally:
            display.close(job)
    return job


# seconds a cancelled job (Ctrl-C, SIGTERM) is waited for before the command ends anyway
CANCEL_WAIT_S = 15.0


def _follow(job) -> bool:
    """Follow ``job`` on stderr until it ends: a live line on a TTY, plain lines otherwise;
    Ctrl-C or SIGTERM cancels it. Returns whether they did (an interrupt here)."""
    from skiff.jobs import follow
    from skiff.jobs.terminal import LiveDisplay

    display = LiveDisplay(sys.stderr)
    asked: list[bool] = []

    def interrupted():
        asked.append(True)
        display.close()
        print("skiff: cancelling…", file=sys.stderr)

    follow(job, display.write, line=display.render, rate=display.rate, quiet_s=0.0,
           on_interrupt=interrupted, terminate=True, wait_s=CANCEL_WAIT_S)
    display.close(job)
    if asked and not job.refresh().final:
        # its kernel reads a cancel only between its steps, and one step outlasted the wait
        # (it exited 1 and its summary said "running", then it was recorded failed)
        where = ("its thread ends with this process, recorded failed" if
                 job.meta.get("runner") == "thread" else "it is being stopped")
        print(f"skiff: job {job.id} still running {CANCEL_WAIT_S:g} s after the cancel (its "
              f"kernel reads a cancel between its steps only): {where}; python -m skiff jobs "
              f"show {job.id} shows how it ended", file=sys.stderr)
    return bool(asked)


def _run_tool(name: str, rest: list[str]) -> int:
    cmd = TOOLS[name]
    if _help_requested(rest, cmd):
        return 0
    _refuse_notebook_flags(cmd.parser(f"python -m skiff {name}", cli=True), cmd.parser(),
                           rest)
    if name == "jobs":  # `jobs resume ID --lr 0.01`: the train line that goes on with it
        from skiff.grammar.jobs import resume_extras
        from skiff.jobs.going_on import GOES_ON, resume_line

        found = resume_extras(rest, cli=True)
        going = found and resume_line(found[0], found[1], "cli")
        if going:
            job, words, line = going
            typed = " ".join(found[1])
            print(f"skiff: job {job.id} goes on from {GOES_ON[job.kind]} with {typed}: "
                  f"{line}", file=sys.stderr, flush=True)
            return _run_job(job.kind, [*words, *(["--json"] if found[2].json else []),
                                       *(["--dry-run"] if found[2].dry_run else [])])
    ns = cmd.parse(rest, prog=f"python -m skiff {name}", cli=True)
    if name == "devices":
        from skiff.jobs.render import DeviceTable
        from skiff.kernels.backend import list_devices

        devices = list_devices()
        if ns.json:
            print(json.dumps([d.to_json() for d in devices], ensure_ascii=False))
        else:
            print(repr(DeviceTable(devices)))
        return 0
    if name == "jobs":
        from skiff.grammar.jobs import action_options, removed_document, removed_text
        from skiff.jobs import jobs_action
        from skiff.jobs.render import JobTable, describe

        action_options(ns)  # its own mistakes (--dry-run on a wait) before any action
        showing = ns.action == "show"  # with -f: followed live, as attach, then shown
        if ns.follow and showing:
            ns.action = "attach"
        tailing = ns.follow and ns.action == "logs"
        if ns.action == "rm" and ns.all and not ns.job_id:  # `jobs rm --all` said "rm needs
            # a job ID" (rm NAME --all: every job of that name)
            raise GrammarError("skiff jobs: rm removes the jobs named (rm NAME --all: every "
                               "job of that name); every finished job: python -m skiff jobs "
                               "prune --keep 0")
        previous = None
        if ((ns.action in ("wait", "attach") or tailing)
                and threading.current_thread() is threading.main_thread()):
            # Ctrl-C stops the waiting even where the process started with SIGINT ignored
            # (a shell's background job: Python then installs no KeyboardInterrupt)
            previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            if ns.action == "wait" and ns.job_id and not ns.more_ids:  # Ctrl-C, said first
                job = jobs_action("show", ns.job_id)
                if not job.done:
                    print(f"skiff: waiting for job {job.id} ({job.status}); Ctrl-C stops "
                          f"waiting, the job goes on (jobs attach {job.id} shows it live)",
                          file=sys.stderr, flush=True)
            asked = True
            if ns.action == "attach" and ns.job_id and not ns.more_ids:
                out = _attach(ns.job_id)
            elif tailing:  # `jobs logs ID -f`: each new line as the job writes it
                from skiff.jobs.render import follow_logs

                out = follow_logs(jobs_action("show", ns.job_id, metrics=False),
                                  lambda text: print(text, flush=True), tail=ns.tail,
                                  as_json=ns.json)  # --json: JSON lines, one each record
                return FAILED if out.status == "done" and out.failures else _status_code(out)
            elif ns.action == "cancel" and ns.job_id and not ns.more_ids:
                from skiff.jobs import cancel_job

                out, asked = cancel_job(ns.job_id, getattr(ns, "grace", None))
            else:  # a listing printed and dropped, a finished job shown: no metric read (most
                # of a training's events), its fold from folded.json
                # a resume's line before its job starts (round 42: its first print came first)
                said = (lambda j: print(f"skiff: {j.kind} job {j.id} resumes {ns.job_id}",
                                        file=sys.stderr, flush=True)) \
                    if ns.action == "resume" and not getattr(ns, "dry_run", False) else None
                out = jobs_action(ns.action, ns.job_id, **action_options(ns),
                                  metrics=ns.action not in ("list", "show", "logs"),
                                  on_created=said)
        except KeyboardInterrupt:
            if ns.action not in ("wait", "attach") and not tailing:
                raise
            doing = "waiting" if ns.action == "wait" else "following"
            ids = " ".join([ns.job_id, *ns.more_ids]) if ns.action == "wait" else ns.job_id
            said = (f"skiff: stopped {doing}; job {ns.job_id} goes on (python -m skiff jobs "
                    f"cancel {ns.job_id} stops it)" if ids == ns.job_id else
                    f"skiff: stopped {doing}; jobs {ids} go on (python -m skiff jobs cancel "
                    f"ID stops one)")
            print(said, file=sys.stderr)
            # --json: a document on stdout too, as a timeout's (round 43: stdout was empty,
            # a script's json.loads met ""); `logs -f --json`'s JSON lines end as they were
            return _refused(f"skiff jobs: {said[len('skiff: '):]}", name, INTERRUPTED,
                            as_json=ns.json and not tailing)
        except TimeoutError as exc:  # jobs wait --timeout: as timeout(1) says it
            if ns.action != "wait":
                raise
            print(f"skiff: {_clean(exc)}", file=sys.stderr)
            return _refused(f"skiff jobs: {_clean(exc)}", name, TIMEOUT, as_json=ns.json)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        if ns.action in ("rm", "prune"):
            print(json.dumps(removed_document(out, ns.dry_run)) if ns.json
                  else removed_text(ns.action, out, ns.dry_run))
            return 0
        if ns.action == "logs":
            from skiff.jobs.render import logs_document, logs_text

            print(json.dumps(logs_document(out, ns.tail), ensure_ascii=False) if ns.json
                  else logs_text(out, ns.tail))
            return 0
        if ns.action == "resume" and ns.dry_run:  # what it would run, nothing started
            from skiff.jobs.dryrun_document import dry_run_lines

            print(json.dumps(out, ensure_ascii=False, default=str) if ns.json
                  else _clean("\n".join(dry_run_lines(out)), keep_newlines=True))
            return 0
        if ns.action == "resume":  # a new job, run from here: followed like `skiff train`
            kind = out.kind  # "skiff: KIND job ID resumes ..." was said as it started
            with _json_only(ns.json) as stdout:
                return _follow_and_report(_kinds()[kind], kind, out, {"json": ns.json}, {},
                                          stdout)
        if ns.json:
            doc = [j.summary() for j in out] if isinstance(out, list) else out.summary()
            if ns.action == "trust":  # what it was before: signed now, or needed no trust
                doc["trust_before"] = getattr(out, "trust_before", None)
            if showing and isinstance(getattr(out, "meta", None), dict):
                doc["options"] = out.meta.get("options")  # all it ran with, defaults too
                going_on = _resume_line(out)  # the line `jobs show` prints, as a command
                if going_on:
                    doc["resume"] = going_on[1]
            print(json.dumps(doc, ensure_ascii=False, default=str))
            hidden = getattr(out, "hidden", 0) if isinstance(out, list) else 0
            if hidden:  # a script's `jobs --json | jq length` was cut at 20 without a word
                print(f"skiff jobs: {hidden} older job{'s' if hidden != 1 else ''} not in "
                      f"this list (--limit N or --all)", file=sys.stderr)
        elif isinstance(out, list):
            print(_clean(repr(JobTable(out)), keep_newlines=True))
        else:
            from skiff.jobs.terminal import running_lines

            text = "\n".join([describe(out), *running_lines(out)])
            print(_clean(text, keep_newlines=True))
            if ns.action == "cancel" and asked:  # it may have stopped since the lines above
                print(f"  cancel asked: it stopped ({out.status})" if out.refresh().final else
                      "  cancel asked: it stops at its next step (a training writes a "
                      "checkpoint first)")
        if ns.action == "trust":  # signed now, or it needed none: one line (round 42)
            from skiff.jobs import trust_note

            print(f"skiff: {_clean(trust_note(out))}", file=sys.stderr)
        if ns.action == "cancel" and not asked:  # not a cancel of ours: said, not shown as one
            from skiff.jobs import ended_note

            print(f"skiff: {_clean(ended_note(out))}", file=sys.stderr)
        if ns.action in ("wait", "attach"):  # `jobs wait ID && next` goes on only when done
            # several (`jobs wait A B C`): the first job's status that is not 0, in order
            codes = [FAILED if j.status == "done" and j.failures else _status_code(j)
                     for j in (out if isinstance(out, list) else [out])]
            return next((c for c in codes if c), 0)
        return 0
    if name == "predict":
        from pathlib import Path

        from skiff.grammar.predict import cli as predict_cli
        from skiff.jobs.listing import job_run_dir

        try:
            run = Path(ns.run).expanduser()
            document, text = predict_cli(ns, run if run.is_dir() else
                                         job_run_dir(ns.run, "predict"))
        except (ValueError, KeyError) as exc:  # a bad job, run folder or file: one line
            print(f"skiff predict: {user_message(exc)}", file=sys.stderr)
            return _refused(f"skiff predict: {user_message(exc)}", name, USAGE,
                            as_json=ns.json)
        print(json.dumps(document, ensure_ascii=False) if ns.json else text)
        return 0
    from skiff.grammar.plan import cli

    document, text = cli(ns)
    print(json.dumps(document, ensure_ascii=False, default=str) if getattr(ns, "json", False)
          else text)
    return 0
