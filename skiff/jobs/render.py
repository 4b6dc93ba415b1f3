"""Static HTML and text views of jobs and devices (no widget front end needed).

Everything shown comes from a run folder, which anyone who can write it may have crafted:
HTML views escape every value (:func:`esc`), terminal views replace control characters
(ANSI escapes included) with their visible ``\\x..`` form (:func:`plain`).
"""

from __future__ import annotations

import html
import json
import os
import re
import time
import unicodedata

__all__ = ["job_html", "jobs_table_html", "JobTable", "DeviceTable", "STATUS_COLORS",
           "fmt_bytes", "fmt_seconds", "describe", "esc", "plain", "summarise_logs",
           "ranks_html", "ranks_text", "job_ranks", "JobLogs", "log_records", "logs_text",
           "logs_document", "job_document", "follow_logs"]

STATUS_COLORS = {"queued": "#888", "running": "#1f77b4", "done": "#2ca02c", "failed": "#d62728",
                 "cancelled": "#ff7f0e", "damaged": "#8c564b"}

# C0 controls but newline and tab, DEL, C1 controls, and the bidirectional overrides that
# make a terminal show text in another order than it is
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _cells(text: str) -> int:
    """Columns ``text`` takes on a terminal: wide (CJK) characters take two, combining marks
    none (a job named 名前 shifted every column after it)."""
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _cut(text: str, width: int) -> str:
    """``text`` at most ``width`` characters, an ellipsis where it was cut."""
    return text if len(text) <= width else text[:width - 1] + "…"


def esc(value) -> str:
    """``value`` as text safe inside HTML (element content and quoted attributes)."""
    return html.escape(str(value), quote=True)


def plain(value, *, newlines: bool = True) -> str:
    """``value`` as text safe for a terminal: control characters shown as ``\\xNN``
    (``newlines=False``: newlines and tabs too, for one-line fields)."""
    text = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"),
                        str(value))
    if not newlines:
        text = text.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return text


def fmt_bytes(n) -> str:
    if n is None:
        return "?"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def fmt_seconds(s) -> str:
    if s is None:
        return "–"
    s = float(s)
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def badge(status: str) -> str:
    status = str(status)
    color = STATUS_COLORS.get(status, "#888")
    cls = status if status in STATUS_COLORS else "unknown"
    return (f'<span class="skiff-badge skiff-{cls}" style="background:{color};'
            f'color:white;border-radius:4px;padding:1px 6px;font-size:90%">'
            f"{esc(status)}</span>")


def _untrusted_html(job) -> str:
    trust = getattr(job, "trust", "trusted")
    if trust == "trusted":
        return ""
    return (f' <span class="skiff-untrusted" style="color:#d62728" title="its code is '
            f'{esc(trust)}: python -m skiff jobs trust {esc(job.id)}">{esc(trust)}</span>')


def job_html(job) -> str:
    if getattr(job, "status", None) == "damaged":
        return job._repr_html_()
    getattr(job, "read_metrics", lambda: None)()  # a listed snapshot shown: its last metrics
    state = job.refresh()
    now = time.time()
    pct = ""
    if state.total:
        frac = min(1.0, state.done / float(state.total))
        pct = (f'<progress value="{frac:.3f}" max="1" style="width:12em"></progress> '
               f"{100 * frac:.0f}% ({state.done:g}/{float(state.total):g} "
               f"{html.escape(state.unit)})")
    metrics = ", ".join(f"{esc(k)}={v[-1][1]:.4g}" for k, v in state.metrics.items()
                        if v and isinstance(v[-1][1], (int, float)))
    err = ""
    if state.error:
        tb = esc(state.traceback or "")
        from .blame import users_error

        if users_error(state.error, state.traceback):  # the user's to fix: its line first,
            # skiff's traceback folded (round 47 h11: it filled the cell under a bad column)
            tb = (f"<details><summary>skiff's traceback (for a bug report)</summary>"
                  f"<pre style='font-size:85%'>{tb}</pre></details>")
        elif tb:
            tb = f"<pre style='font-size:85%'>{tb}</pre>"
        err = f'<div style="color:#d62728"><b>{esc(state.error)}</b>{tb}</div>'
    note = f"<br><i>{esc(state.inferred)}</i>" if state.inferred else ""
    return (f'<div class="skiff-job"><b>{esc(job.kind)}</b> '
            f"<code>{esc(job.id)}</code> {badge(state.status)}{_untrusted_html(job)} {pct} "
            f"<span>elapsed {fmt_seconds(state.elapsed(now))}</span>"
            f"{'<br>' + metrics if metrics else ''}{err}{note}</div>")


_CHECKPOINT = re.compile(r"^checkpoint (\S+) at step (\d+)$")


def summarise_logs(lines: list) -> list:
    """Log lines ``(t, level, message)`` with the trainer's checkpoint lines (one per
    checkpoint, they flood a log) folded into one line where the last of them stood:
    ``checkpoints: 120 written (steps 2-240), latest step-00000240``."""
    ckpts = [(i, m) for i, (_, level, msg) in enumerate(lines)
             if level == "info" and (m := _CHECKPOINT.match(str(msg)))]
    if len(ckpts) < 2:
        return list(lines)
    last_i, last = ckpts[-1]
    first = ckpts[0][1]
    text = (f"checkpoints: {len(ckpts)} written (steps {first.group(2)}-{last.group(2)}), "
            f"latest {last.group(1)}")
    drop = {i for i, _ in ckpts}
    return [(lines[i][0], "info", text) if i == last_i else line
            for i, line in enumerate(lines) if i == last_i or i not in drop]


RANK_OUTPUT_LINES = 500  # the last lines of each rank's printed output that job.logs shows


def log_records(job) -> list[dict]:
    """Every ``log`` and ``error`` event of ``job``, in order, as ``{"t", "rank", "level",
    "message"}`` (an error's traceback under ``traceback``); fields of the wrong type are
    read as text."""
    from .events import EventReader

    # metric lines passed over unread (most of a training's events)
    return _records(EventReader(job.run_dir / "events.jsonl", metrics=False).read())


def _records(events) -> list[dict]:
    """The log records (:func:`log_records`) of ``events``."""
    out = []
    for ev in events:
        kind = ev.get("type")
        if kind not in ("log", "error"):
            continue
        t, rank = ev.get("t"), ev.get("rank")
        rec = {"t": t if isinstance(t, (int, float)) and not isinstance(t, bool) else None,
               "rank": rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
               "level": "error" if kind == "error" else str(ev.get("level", "info")),
               "message": str(ev.get("message", ""))}
        if kind == "error" and ev.get("traceback"):
            rec["traceback"] = str(ev["traceback"])
        out.append(rec)
    return out


def rank_outputs(job, lines: int = RANK_OUTPUT_LINES) -> dict[int, str]:
    """rank -> the last ``lines`` lines a process job's rank printed (``logs/rank<r>.out``),
    for the ranks that printed anything."""
    out = {}
    folder = job.run_dir / "logs"
    for path in sorted(folder.glob("rank*.out")) if folder.is_dir() else ():
        rank = path.name[4:-4]
        if not rank.isdigit():
            continue
        try:
            with open(path, "rb") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - 256 * 1024))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        if text.strip():
            out[int(rank)] = "\n".join(text.rstrip("\n").splitlines()[-lines:])
    return dict(sorted(out.items()))


def record_lines(rec: dict) -> list[str]:
    """One log record as ``jobs logs`` prints it: ``HH:MM:SS [rank N] level: message``,
    an error's traceback indented under it."""
    when = time.strftime("%H:%M:%S", time.localtime(rec["t"])) if rec["t"] else "--:--:--"
    rank = f"[rank {rec['rank']}] " if (rec["rank"] or 0) > 0 else ""
    level = "" if rec["level"] == "info" else f"{rec['level']}: "
    lines = [f"{when} {rank}{level}{rec['message']}"]
    if rec.get("traceback"):
        lines.extend("    " + t for t in rec["traceback"].rstrip("\n").splitlines())
    return lines


def output_lines(job) -> list[str]:
    """What each rank of a process job printed (a thread job's thread: rank 0's file),
    under a line naming its file."""
    lines = []
    meta = getattr(job, "meta", None)
    ranked = isinstance(meta, dict) and meta.get("runner") in ("process", "slurm")
    for rank, text in rank_outputs(job).items():
        who = f"rank {rank}" if ranked else "the job"
        lines.append(f"--- {who} printed (logs/rank{rank}.out) ---")
        lines.append(text)
    return lines


def follow_logs(job, write, *, poll_s: float = 1.0, stop=None, tail: int | None = None,
                as_json: bool = False):
    """``jobs logs ID --follow``: ``write`` each log line of ``job`` (as :func:`logs_text`
    prints it, control characters escaped), those written so far first, then each new one
    as the job writes it, until the job ends; then what its ranks printed. ``stop()`` true
    ends the following early. Returns the job. Ctrl-C (KeyboardInterrupt) stops the
    following, not the job. ``tail``: of the lines written so far, the last ``tail`` only
    (``jobs logs ID -f -n 20``, as ``tail -f -n 20``). ``as_json`` (``-f --json``): JSON
    lines, one each record as ``jobs logs ID --json`` lists them under ``lines`` (``tail``
    counts records), then ``{"rank": R, "output": TEXT}`` for what each rank printed, and
    an end no log line holds as a record of level ``error`` (failed) or ``warning``."""
    import json

    from .events import EventReader

    def lines_of(rec: dict) -> list[str]:
        return [json.dumps(rec, ensure_ascii=False)] if as_json else record_lines(rec)

    reader = EventReader(job.run_dir / "events.jsonl", metrics=False)  # each line read once
    first = True
    while True:
        final = job.refresh().final  # read before the records: the last ones are printed
        records = _records(reader.read())
        if first and tail is not None and as_json:
            records = records[len(records) - tail:] if tail else []
        lines = [line for rec in records for line in lines_of(rec)]
        if first and tail is not None and not as_json:
            lines = lines[len(lines) - tail:] if tail else []
        first = False
        for line in lines:
            write(line if as_json else plain(line))
        if final or (stop is not None and stop()):
            break
        time.sleep(poll_s)
    if final:
        if as_json:
            for rank, text in rank_outputs(job).items():
                write(json.dumps({"rank": rank, "output": text}, ensure_ascii=False))
        else:
            for line in output_lines(job):
                write(plain(line))
        inferred = job.refresh().inferred
        if inferred:  # its end is in no log line (its run folder removed, its owner gone):
            # `logs -f` ended with status 1 and nothing said
            said = f"{job.id} {job.status}: {inferred}"
            write(json.dumps({"t": None, "rank": None, "level": "error" if job.status ==
                              "failed" else "warning", "message": said}, ensure_ascii=False)
                  if as_json else plain(said))
    return job


def job_document(job, kind, front: str = "cli") -> tuple[dict, str | None]:
    """``python -m skiff KIND ... --json`` (and ``%KIND ... --json``) once the job ended:
    ``{"job": job.summary(), "result": job.result[, "failed": [...]][, "resume": COMMAND]}``
    (``failed``: what :meth:`Kind.failures` lists; ``resume``: the command that goes on with
    a stopped job ``jobs resume`` would take), and the line that says how to go on from
    ``front`` (None when it cannot). A ``--launcher slurm`` job: ``{"job", "submission"}``
    (the script, whether it was queued, Slurm's job id)."""
    from . import resume_command
    from .going_on import resume_hint

    submission = getattr(job, "submission", None)
    if submission is not None:
        return {"job": job.summary(), "submission": submission}, None
    doc = {"job": job.summary(), "result": job.result}
    failed = kind.failures(job) if job.status == "done" else []
    if failed:
        doc["failed"] = failed
    hint = resume_hint(job, front)
    if hint:
        doc["resume"] = resume_command(job.id)
    return doc, hint


def logs_text(job, tail: int | None = None) -> str:
    """What ``job.logs`` and ``jobs logs ID`` show: each log line of the job as
    ``HH:MM:SS [rank N] level: message`` (the level written for warnings and errors, an
    error's traceback under it), then what each rank of a process job printed. Control
    characters are shown escaped. ``tail``: the last ``tail`` lines of that only
    (``jobs logs ID -n 20``)."""
    lines = [line for rec in log_records(job) for line in record_lines(rec)]
    lines.extend(output_lines(job))
    text = plain("\n".join(lines))
    return text if tail is None else last_lines(text, tail)


def last_lines(text: str, n: int) -> str:
    """The last ``n`` lines of ``text`` (``n`` 0: none)."""
    return "\n".join(text.splitlines()[-n:]) if n > 0 else ""


def logs_document(job, tail: int | None = None) -> dict:
    """``jobs logs ID --json``: ``{"id", "lines": [{"t", "rank", "level", "message"
    [, "traceback"]}], "outputs": {rank: text}}``; ``tail``: the last ``tail`` records and
    the last ``tail`` lines of each rank's output."""
    records = log_records(job)
    outputs = {str(r): text for r, text in rank_outputs(job).items()}
    if tail is not None:
        records = records[len(records) - tail:] if tail else []
        outputs = {r: last_lines(text, tail) for r, text in outputs.items()}
    return {"id": job.id, "lines": records, "outputs": outputs}


class JobLogs(str):
    """A job's log as text (:func:`logs_text`) that shows as itself in a notebook and a
    terminal (a plain ``str`` would show quoted, with ``\\n`` for every line break)."""

    def __repr__(self) -> str:
        return str(self) if self else "(no log lines)"

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))


def job_ranks(job, lines: int = 3) -> list:
    """The ranks of an MPI job (:func:`skiff.jobs.ranks.rank_states`), [] for a thread job or
    a single process."""
    meta = getattr(job, "meta", {}) or {}
    np_ = int(meta.get("np") or 1)
    if meta.get("runner") not in ("process", "slurm") or np_ < 2:
        return []
    from .ranks import rank_states

    return rank_states(job.run_dir, np_, lines=lines)


_RANK_COLORS = {"running": STATUS_COLORS["running"], "exited": STATUS_COLORS["done"],
                "failed": STATUS_COLORS["failed"], "died": STATUS_COLORS["failed"],
                "left": STATUS_COLORS["cancelled"], "starting": STATUS_COLORS["queued"]}


def ranks_html(ranks: list) -> str:
    """A small table: each rank's pid, status (exit code, why) and its last lines."""
    if not ranks:
        return ""
    rows = []
    for r in ranks:
        what = {"exited": f"exited {r.code}", "failed": f"failed (exit {r.code})"}.get(
            r.status, r.status)
        color = _RANK_COLORS.get(r.status, "#444")
        detail = f"<br><span style='color:#666'>{esc(r.detail)}</span>" if r.detail else ""
        tail = esc("\n".join(plain(line, newlines=False)[:160] for line in r.lines))
        rows.append(f"<tr><td>rank {r.rank}</td><td>{esc(r.pid or '')}</td>"
                    f"<td style='color:{color}'><b>{esc(what)}</b>{detail}</td>"
                    f"<td><pre style='margin:0;font-size:85%;white-space:pre-wrap'>{tail}"
                    "</pre></td></tr>")
    return ("<table class='skiff-ranks-table' style='font-size:85%'><tr><th>rank</th>"
            "<th>pid</th><th>status</th><th>last lines</th></tr>" + "".join(rows) + "</table>")


def ranks_text(ranks: list) -> str:
    """Each rank on one line (status), then its last lines indented, for a terminal."""
    out = []
    for r in ranks:
        out.append("  " + plain(r.summary(), newlines=False))
        out.extend("      " + plain(line, newlines=False)[:160] for line in r.lines)
    return "\n".join(out)


def _started(created) -> str:
    """A job's start as local time: ``14:05:09`` today, ``Nov 30 14:05`` before."""
    if not isinstance(created, (int, float)):
        return ""
    then, now = time.localtime(created), time.localtime()
    same_day = then[:3] == now[:3]
    return time.strftime("%H:%M:%S" if same_day else "%b %d %H:%M", then)


JOB_COLUMNS = ("id", "name", "kind", "status", "progress", "started", "elapsed", "command")


def _row(job) -> dict:
    """The table cells of one job, as text."""
    s = job.summary()
    if s.get("damaged"):
        return {"id": s["id"], "name": "", "kind": "?", "status": "damaged", "progress": "",
                "started": "", "elapsed": "", "command": s["damaged"]}
    trust = getattr(job, "trust", "trusted")
    ranks = s.get("ranks") or 1
    return {"id": s["id"], "name": s.get("name") or "", "kind": s["kind"],
            "status": s["status"] + ("" if trust == "trusted" else f" ({trust})"),
            "progress": "" if s["progress"] is None else f"{100 * s['progress']:.0f}%",
            "started": _started(s.get("created")),
            "elapsed": fmt_seconds(s["elapsed_s"]) if s["elapsed_s"] is not None else "",
            "command": (s.get("command") or "") + (f"  [{ranks} ranks]" if ranks > 1 else "")}


def _more(jobs) -> str:
    hidden = getattr(jobs, "hidden", 0)
    running = getattr(jobs, "hidden_running", ())
    still = (f", {len(running)} of them still running: {', '.join(running[:3])}"
             f"{' ...' if len(running) > 3 else ''}") if running else ""
    return (f"{hidden} older job{'s' if hidden != 1 else ''} not shown{still} "
            "(--limit N or --all)") if hidden else ""


def empty_text(jobs) -> str:
    """What an empty listing says: where it looked, and whether filters hid jobs there (a
    notebook in another folder has its own ``skiff-runs``; "no jobs yet" alone puzzled)."""
    root, total = getattr(jobs, "root", None), getattr(jobs, "total", None)
    if root is None:
        return "no jobs yet"
    if total:
        what = getattr(jobs, "filters", "") or "matching"
        return f"no {what} job among the {total} in {root}"
    if os.path.exists(root) and not os.path.isdir(root):  # SKIFF_RUNS names a file
        return f"no jobs: {root} is a file, not a folder (set SKIFF_RUNS to a folder)"
    return f"no jobs yet in {root} (SKIFF_RUNS=DIR looks in another folder)"


def jobs_table_html(jobs) -> str:
    if not jobs:
        return f"<i>{esc(empty_text(jobs))}</i>"
    rows = []
    for job in jobs:
        r = _row(job)
        cells = []
        for col in JOB_COLUMNS:
            if col == "status":
                status = r["status"].split(" ")[0]
                cells.append(f"<td>{badge(status)}{_untrusted_html(job)}</td>")
            elif col in ("id", "command"):
                cells.append(f"<td><code>{esc(r[col])}</code></td>")
            else:
                cells.append(f"<td>{esc(r[col])}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    head = "<tr>" + "".join(f"<th>{c}</th>" for c in JOB_COLUMNS) + "</tr>"
    more = _more(jobs)
    foot = f"<div style='color:#888'>{esc(more)}</div>" if more else ""
    return f'<table class="skiff-jobs">{head}{"".join(rows)}</table>{foot}'


class JobTable(list):
    """A list of jobs with a table repr (a header, newest first, as listed)."""

    def __init__(self, jobs=()):
        super().__init__(jobs)
        self.hidden = getattr(jobs, "hidden", 0)
        self.hidden_running = getattr(jobs, "hidden_running", ())
        self.total = getattr(jobs, "total", None)
        self.root = getattr(jobs, "root", None)
        self.filters = getattr(jobs, "filters", "")

    def _repr_html_(self):
        return jobs_table_html(self)

    def __repr__(self):
        if not self:
            return plain(empty_text(self), newlines=False)
        rows = [dict(zip(JOB_COLUMNS, [c.upper() for c in JOB_COLUMNS]))]
        rows += [{k: plain(v, newlines=False) for k, v in _row(job).items()} for job in self]
        widths = {c: max(_cells(r[c]) for r in rows) for c in JOB_COLUMNS[:-1]}
        lines = ["  ".join([*(r[c] + " " * (widths[c] - _cells(r[c]))
                              for c in JOB_COLUMNS[:-1]),
                            _cut(r["command"], 80)]).rstrip() for r in rows]
        more = _more(self)
        return "\n".join(lines + ([more] if more else []))

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))


def describe(job, front: str = "cli") -> str:
    """A few lines about a job for a terminal: its repr, then its error or its result
    (``front="magic"``: the hints in ``%jobs`` words)."""
    if getattr(job, "status", None) == "damaged":
        return plain(repr(job))
    lines = [repr(job)]
    state = job.refresh()
    if state.inferred and state.inferred != state.error:
        lines.append(f"  ({state.inferred})")
    lines.extend(_started_with(job))

    trust = getattr(job, "trust", "trusted")
    if trust != "trusted":
        from .trust import trust_hint

        lines.append(f"  its code is {trust}: {trust_hint(job.id)}")
    ranks = job_ranks(job)
    if ranks:
        lines.append("ranks:")
        lines.append(ranks_text(ranks))
    from .going_on import resume_hint

    hint = resume_hint(job, front)
    if job.status == "failed":
        error = job.error or ""
        from .blame import users_error

        if users_error(state.error, state.traceback):  # the user's to fix (a missing file, a
            # bad column): its one line; skiff's traceback is in its logs (round 47 h11)
            if len(state.error) > 100 or "\n" in state.error.strip():
                lines.append(state.error)
            logs = (f"%jobs logs {job.id}" if front == "magic" else
                    f"python -m skiff jobs logs {job.id}")
            lines.append(f"  (skiff's traceback of it: {logs})")
        elif "\n" in error.strip() or len(error) > 100:  # more than the repr shows
            lines.append(error)
        if hint:
            lines.append(f"  {hint}")
    else:
        result = job.result
        figures = _kind_summary(job, result)
        if figures is not None:  # the kind's key figures, as the terminal prints after a run
            lines.extend(f"  {line}" for line in figures)
            lines.append(f"  run folder: {job.run_dir}  (--json: the whole result)")
        else:
            for key, value in (result.items() if isinstance(result, dict) else ()):
                text = json.dumps(value, default=str)
                lines.append(f"  {key}: {text[:200]}")
        if hint and not any("jobs resume" in line for line in lines):
            lines.append(f"  {hint}")
    return plain("\n".join(lines))


def _started_with(job) -> list[str]:
    """The command as typed (what starts the job again) and every option it ran with,
    defaults included (``options`` in config.json; a job of an older skiff has none)."""
    meta = getattr(job, "meta", None)
    meta = meta if isinstance(meta, dict) else {}
    lines = []
    if isinstance(meta.get("command"), str) and meta["command"]:
        lines.append(f"  command: {meta['command']}")
    options = meta.get("options")
    if isinstance(options, dict) and options:
        named = _option_names(getattr(job, "kind", None))
        shown = [f"{_shown_key(key, named, options)}={_option_text(value)}"
                 for key, value in options.items()
                 if value is not None and key not in ("json", "wait", "output", "dry_run")]
        lines.append("  options: " + " ".join(shown))
    return lines


def _option_names(kind) -> dict[str, str]:
    """dest -> the option's name as typed (``--data``: ``data``, dashes as ``_``) where the
    two differ, for the kind's grammar; {} where it has none."""
    try:
        from skiff.kinds import KINDS

        command = KINDS[kind].command
        actions = command.parser()._actions if command is not None else []
    except Exception:  # noqa: BLE001 - a kind of another skiff: the stored names
        return {}
    names = {}
    for action in actions:
        longs = [f[2:].replace("-", "_") for f in action.option_strings if f.startswith("--")]
        if len(longs) == 1 and longs[0] != action.dest:
            names[action.dest] = longs[0]
    return names


def _shown_key(key: str, named: dict, options: dict) -> str:
    """``data_opt`` as ``data`` (round 47: `jobs show` printed ``data_opt=bad.csv`` for
    ``--data bad.csv``), unless the job also has a value under that name."""
    name = named.get(key)
    return name if name and options.get(name) is None else key


def _option_text(value) -> str:
    """An option's value in ``jobs show``: a grid as typed (8x8), a word bare, a text with
    spaces quoted, anything else as compact JSON."""
    if isinstance(value, list) and value and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return "x".join(map(str, value))
    if not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if value and not any(c.isspace() for c in value):
        return value
    return json.dumps(value, ensure_ascii=False)


def _kind_summary(job, result) -> list[str] | None:
    """The kind's few lines about a result (``Kind.summary_of``), or None (no result, a kind
    with no summary of its own, or one that fails on this result: the raw fields then)."""
    if not isinstance(result, dict) or not result:
        return None
    from skiff.kinds import KINDS, Kind

    kind = KINDS.get(getattr(job, "kind", None))
    if kind is None or (type(kind).summary is Kind.summary
                        and type(kind).summary_of is Kind.summary_of):
        return None
    try:
        lines = [str(line) for line in kind.summary_of(job, result)]
    except Exception:  # noqa: BLE001 - a damaged result.json: its raw fields
        return None
    return lines or None


class DeviceTable(list):
    """A list of devices with a table repr."""

    def _rows(self):
        return [(d.name, d.vendor, d.model, d.cores, fmt_bytes(d.total_memory),
                 fmt_bytes(d.free_memory)) for d in self]

    def __repr__(self):
        head = ("device", "vendor", "model", "cores", "memory", "free")
        rows = [head, *self._rows()]
        widths = [max(len(str(r[i])) for r in rows) for i in range(len(head))]
        return "\n".join("  ".join(str(v).ljust(w) for v, w in zip(r, widths)) for r in rows)

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))

    def _repr_html_(self):
        head = "".join(f"<th>{h}</th>" for h in
                       ("device", "vendor", "model", "cores", "memory", "free"))
        body = "".join("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in r) + "</tr>"
                       for r in self._rows())
        return f'<table class="skiff-devices"><tr>{head}</tr>{body}</table>'
