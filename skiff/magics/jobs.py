"""``%jobs`` and ``%devices``."""

from __future__ import annotations

import json
import sys

from IPython.core.magic import Magics, line_magic, magics_class

from skiff.grammar.jobs import DEVICES, JOBS, action_options, removed_document, removed_text
from skiff.jobs import cancel_job, ended_note, jobs_action
from skiff.jobs.render import DeviceTable, JobTable, logs_document

from .base import grammar_doc, parse_line, usage_errors, wait_quietly

__all__ = ["JobsMagics"]


# the most log lines ``%jobs logs ID`` shows in a cell by itself (round 38: a job of 100,000
# log lines put 6 MB of text in the cell's output, saved with the notebook)
NOTEBOOK_LOG_LINES = 1000
# the exit status `python -m skiff jobs wait --timeout` gives when the time ran out (as
# timeout(1)); `%jobs wait ... --json` puts it in the same document
WAIT_TIMEOUT = 124
# and when Ctrl-C stopped the waiting (the job goes on), as `python -m skiff jobs wait`'s
WAIT_INTERRUPTED = 130


def _shown_logs(job, logs):
    """What a cell shows of a job's whole log: all of it, or its last
    :data:`NOTEBOOK_LOG_LINES` lines after a line saying how to see the rest."""
    from skiff.jobs.render import JobLogs, last_lines

    count = logs.count("\n") + 1 if logs else 0
    if count <= NOTEBOOK_LOG_LINES:
        return logs
    print(f"(the last {NOTEBOOK_LOG_LINES:,} of {count:,} lines; -o NAME keeps them all, "
          f"-n N shows the last N, python -m skiff jobs logs {job.id} prints them in a "
          f"terminal)")
    return JobLogs(last_lines(logs, NOTEBOOK_LOG_LINES))


def _stopped(doing: str, job, as_json: bool) -> None:
    """What a cell prints when Ctrl-C stops ``%jobs wait`` (or a terminal IPython's ``%jobs
    show -f``): the line, or with ``--json`` the terminal's document of it alone, ``{"error",
    "command": "jobs", "exit": 130}`` (round 43: the line was printed where a cell's
    captured stdout was to be JSON). The job goes on either way."""
    said = (f"stopped {doing}; job {job.id} goes on ({job.status}): %jobs cancel {job.id} "
            f"stops it")
    if as_json:
        print(json.dumps({"error": said, "command": "jobs", "exit": WAIT_INTERRUPTED},
                         ensure_ascii=False))
    else:
        print(said)


# what %jobs? says after the usage
JOBS_NOTES = """A list is newest first; ID may be a job's --name or a variable holding a job
(a name several jobs share is refused, listing them: give an id, or rm NAME --all; a run
resumed is its newest). resume ID --lr X: train's options changed (the %train line run).
rm/prune --dry-run lists what they would remove, resume --dry-run what it would run;
show ID -f follows a job live (as attach), logs ID -f prints each new log line until it
ends (--json: a JSON line each record), logs ID -n N the last N lines only (with -f:
first); wait A B C waits for every one. Interrupting %jobs wait stops the waiting, not the
job."""


@magics_class
class JobsMagics(Magics):
    @line_magic
    @grammar_doc(JOBS, JOBS_NOTES)
    def jobs(self, line=""):
        went = _resume_with_options(self.shell, line)
        if went is not None:  # `%jobs resume ID --lr 0.01`: its %train line, run
            return went[0]
        ns = parse_line(JOBS, line)
        if ns is None:  # --help
            return None
        with usage_errors(command="jobs", line=line):
            if ns.wait and ns.action != "resume":  # it was "unrecognized arguments"
                raise ValueError(f"--wait goes with resume (the new job); %jobs wait "
                                 f"{ns.job_id or 'ID'} waits for a job")
            if ns.wait and ns.dry_run:
                raise ValueError("--dry-run starts no job for --wait to wait for: give one of "
                                 "them")
            _name_variables(ns, self.shell.user_ns)
            action_options(ns)  # its own mistakes (--dry-run on a wait) before any action
            showing = ns.action == "show"
            if ns.follow and showing:  # followed live: the attached view
                ns.action = "attach"
            if ns.follow and ns.action == "logs":  # each new line as the job writes it
                from skiff.jobs.render import follow_logs

                job = jobs_action("show", ns.job_id, front="magic", metrics=False)
                try:
                    follow_logs(job, lambda text: print(text, flush=True), tail=ns.tail,
                                as_json=ns.json)
                except KeyboardInterrupt:
                    print(f"stopped following; job {job.id} goes on ({job.status}): "
                          f"%jobs cancel {job.id} stops it")
                return None
            if ns.action == "wait" and ns.job_id and ns.more_ids:  # every one (round 44)
                try:
                    out = jobs_action("wait", ns.job_id, more_ids=ns.more_ids,
                                      timeout=ns.timeout)
                except KeyboardInterrupt:
                    ids = " ".join([ns.job_id, *ns.more_ids])
                    said = f"stopped waiting; jobs {ids} go on: %jobs cancel ID stops one"
                    print(json.dumps({"error": said, "command": "jobs",
                                      "exit": WAIT_INTERRUPTED},
                                     ensure_ascii=False) if ns.json else said)
                    return None
                except TimeoutError as exc:  # an answer: said, the jobs shown
                    if ns.json:
                        print(json.dumps({"error": str(exc), "command": "jobs",
                                          "exit": WAIT_TIMEOUT}, ensure_ascii=False))
                        return None
                    print(exc)
                    out = exc.jobs
            elif ns.action == "wait":
                if not ns.job_id:  # said as the terminal says it: it was "jobs show
                    # needs a job ID"
                    jobs_action("wait", ns.job_id, more_ids=ns.more_ids)  # raises
                job = jobs_action("show", ns.job_id)
                try:
                    if ns.timeout is None and not ns.json:
                        wait_quietly(job, cancel=False)
                    else:  # --json: no progress line before the document (round 43)
                        job.wait(timeout=ns.timeout)
                except KeyboardInterrupt:
                    _stopped("waiting", job, ns.json)
                    return None
                except TimeoutError as exc:  # an answer, not a mistake: said, job shown
                    if ns.json:  # the terminal's document of it, alone (round 43): the
                        # cell does not fail, as the line without --json does not
                        print(json.dumps({"error": str(exc), "command": "jobs",
                                          "exit": WAIT_TIMEOUT}, ensure_ascii=False))
                        return None
                    print(f"job {job.id} still {job.status} after {ns.timeout:g} s")
                out = job
            elif ns.action == "cancel" and ns.job_id and not ns.more_ids:
                out, asked = cancel_job(ns.job_id, getattr(ns, "grace", None))
                if not asked:  # a finished job, shown as it ended: not by this cancel
                    # (--json: the cell's stdout is its one document, as the terminal's)
                    print(ended_note(out), file=sys.stderr if ns.json else sys.stdout)
            else:
                # a list: snapshots without metrics, which read them once asked (job.plot())
                extra = {}
                if ns.action == "resume" and not (ns.wait or ns.json or ns.dry_run):
                    from .kinds import view_first  # the view before the job starts

                    extra["on_created"] = view_first(self.shell, "")
                out = jobs_action(ns.action, ns.job_id, **action_options(ns), front="magic",
                                  metrics=ns.action != "list", **extra)
        if ns.action in ("rm", "prune"):
            print(json.dumps(removed_document(out, ns.dry_run)) if ns.json
                  else removed_text(ns.action, out, ns.dry_run))
            return None
        if ns.action == "logs":
            if ns.json:  # the terminal's document, non-ASCII text as it is
                print(json.dumps(logs_document(out, ns.tail), ensure_ascii=False))
                return None
            from skiff.jobs.render import JobLogs, logs_text

            logs = out.logs if ns.tail is None else JobLogs(logs_text(out, ns.tail))
            if ns.output:
                self.shell.user_ns[ns.output] = logs
            return _shown_logs(out, logs) if ns.tail is None else logs
        if ns.action == "resume" and ns.dry_run:  # what it would run, nothing started
            from .dryrun import DryRun

            if ns.json:
                print(json.dumps(out, ensure_ascii=False, default=str))
                return None
            out = DryRun(out)
            if ns.output:
                self.shell.user_ns[ns.output] = out
            return out
        if ns.action == "trust" and not ns.json:  # signed now, or it needed none (round 42)
            from skiff.jobs import trust_note

            print(trust_note(out))
        if isinstance(out, list):
            out = JobTable(out)
        if ns.output:
            self.shell.user_ns[ns.output] = out
        if ns.action == "attach" and not getattr(out, "done", True):
            from skiff.widgets.display import widgets_enabled

            if not widgets_enabled():  # IPython in a terminal: no live widget to follow
                # it (the snapshot it showed said "-f follows it live"): the progress line
                # until it ends, as `jobs attach` in a terminal (round 40)
                try:
                    wait_quietly(out, cancel=False)
                except KeyboardInterrupt:
                    _stopped("following", out, ns.json)
                    return None
        if ns.wait:  # resume --wait: stored first, then followed as %train --wait does
            wait_quietly(out)
        if ns.json:  # the document `python -m skiff jobs ... --json` prints
            doc = [j.summary() for j in out] if isinstance(out, list) else out.summary()
            if ns.action == "trust":  # as the terminal's document: what it was before
                doc["trust_before"] = getattr(out, "trust_before", None)
            if showing and isinstance(getattr(out, "meta", None), dict):
                doc["options"] = out.meta.get("options")  # all it ran with, defaults too
                from skiff.jobs import resume_command
                from skiff.jobs.going_on import resume_hint

                if resume_hint(out):  # as the terminal's document (round 47 h11: absent)
                    doc["resume"] = resume_command(out.id)
            print(json.dumps(doc, ensure_ascii=False, default=str))
            hidden = getattr(out, "hidden", 0) if isinstance(out, list) else 0
            if hidden:  # as the terminal says it: the list was cut at --limit
                print(f"{hidden} older job{'s' if hidden != 1 else ''} not in this list "
                      f"(--limit N or --all)", file=sys.stderr)
            return None
        return out

    @line_magic
    @grammar_doc(DEVICES)
    def devices(self, line=""):
        ns = parse_line(DEVICES, line)
        if ns is None:
            return None
        from skiff.kernels.backend import list_devices

        devices = list_devices()
        if ns.json:
            print(json.dumps([d.to_json() for d in devices]))
            return None
        return DeviceTable(devices)


def _resume_with_options(shell, line: str):
    """``%jobs resume ID --lr 0.01`` (a train option given to resume): the ``%train`` line
    that goes on from the job's newest checkpoint with it, said and run (round 47: it was
    "unrecognized arguments: --lr 0.01"); ``--wait``, ``-o NAME``, ``--json`` and
    ``--dry-run`` go with it. Returns ``(what the line gave,)``, or None where the line is
    no such resume (the grammar's word then)."""
    import shlex

    from skiff.grammar.common import GrammarError, asks_for_help
    from skiff.grammar.jobs import resume_extras

    if asks_for_help(line):
        return None
    try:
        found = resume_extras(line)
    except GrammarError:
        return None
    if found is None:
        return None
    job_id, extra, ns = found
    held = shell.user_ns.get(job_id) if job_id.isidentifier() else None
    from skiff.jobs import Job
    from skiff.jobs.going_on import GOES_ON, resume_line

    with usage_errors(command="jobs", line=line):
        going = resume_line(held.id if isinstance(held, Job) else job_id, extra, "magic")
    if going is None:
        return None
    job, words, said = going
    flags = [*(["--wait"] if ns.wait else []), *(["-o", ns.output] if ns.output else []),
             *(["--json"] if ns.json else []), *(["--dry-run"] if ns.dry_run else [])]
    if not ns.json:  # a --json cell's stdout is its one document
        print(f"job {job.id} goes on from {GOES_ON[job.kind]} with {shlex.join(extra)}: "
              f"{said}")
    return (shell.find_line_magic(job.kind)(shlex.join([*words, *flags])),)


def _name_variables(ns, user_ns: dict) -> None:
    """``%jobs show j`` where ``j`` holds a job (``%train ... -o j``): that job. It said "no
    job 'j'": a notebook's variable is the name its user knows the job by. A job whose id or
    --name is the word itself comes first (what the terminal finds); a variable holding a
    job comes before a prefix or suffix of some id that the word happens to be."""
    from skiff.jobs import Job
    from skiff.jobs.store import find_run_dir, read_json

    def job_of(word):
        value = user_ns.get(word) if isinstance(word, str) and word.isidentifier() else None
        if not isinstance(value, Job):
            return word
        if not value.run_dir.is_dir():   # it said "no job 'ID'" of the job the variable holds
            error = value.error or ""
            removed = f"its run folder {value.run_dir} was removed while it ran"
            if error.startswith(removed):  # the folder's path said once (it was thrice)
                rest = error[len(removed):].split(")", 1)[-1].strip(" -")
                raise ValueError(f"{word} holds job {value.id}, whose run folder "
                                 f"{value.run_dir} was removed while it ran (it ended "
                                 f"{value.status}{': ' + rest if rest else ''}): nothing of "
                                 f"it is left for %jobs {ns.action}")
            raise ValueError(f"{word} holds job {value.id}, whose run folder {value.run_dir} "
                             "is gone (removed or moved): nothing of it is left for "
                             f"%jobs {ns.action}" + (f"; it ended {value.status}: "
                                                    f"{error}" if error else ""))
        try:
            found = find_run_dir(word)
        except KeyError:  # no such job, or an ambiguous prefix: the variable's
            return value.id
        meta = read_json(found / "config.json")
        named = isinstance(meta, dict) and meta.get("name") == word
        return word if found.name == word or named else value.id

    ns.job_id = job_of(ns.job_id)
    ns.more_ids = [job_of(word) for word in ns.more_ids]

