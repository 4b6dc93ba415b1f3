"""``JobMonitor``: a live table of every job in the run folders.

One row per job (kind, status, progress, elapsed, device, memory) with buttons to cancel it,
show its live :class:`JobView`, resume it (train jobs: relaunched with ``resume=True`` from
its checkpoints) and open its run folder. One daemon thread per monitor re-reads the run
folders every ``poll`` seconds and updates the rows that changed, batched with ``hold_sync``.
The table is built from the run folders alone, so it is the same after a browser reload or
a kernel restart.
"""

from __future__ import annotations

import contextlib
import html
import threading
import time
from pathlib import Path

import ipywidgets as W
from ipywidgets.widgets.widget_string import HTMLStyle

from skiff.jobs import DamagedJob, Job, UntrustedJob
from skiff.jobs.render import badge, fmt_bytes, fmt_seconds
from skiff.jobs.store import DamagedRunFolder, list_run_dirs, runs_root

__all__ = ["JobMonitor", "resume_job", "job_memory", "folder_listing"]

COLUMNS = ("job", "kind", "status", "progress", "elapsed", "device", "memory", "")
_TEMPLATE = "13em 4em 5.5em 10em 5em 4.5em 5em 11em"
_MEMORY_KEYS = ("memory", "peak_memory", "peak_memory_bytes", "memory_bytes", "mem_bytes",
                "measured_memory", "max_memory", "memory_used")


def _number(value):
    """A byte count from ``12345`` or ``{"measured": 12345, ...}``; None otherwise."""
    if isinstance(value, dict):
        value = value.get("measured")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def job_memory(job: Job) -> str:
    """The memory a job reported: ``reporter.info(memory=...)`` (or another ``*mem*`` field,
    such as the trainer's measured ``peak_memory_bytes``), a ``*mem*`` metric, or the
    ``peak_memory_bytes`` of its result."""
    state = job.refresh()
    value = None
    info = dict(state.info)
    info.update(info.pop("predicted_vs_measured", None) or {})
    for key in _MEMORY_KEYS:
        if _number(info.get(key)) is not None:
            value = _number(info[key])
            break
    else:
        for key, v in info.items():
            if "mem" in key.lower() and _number(v) is not None:
                value = _number(v)
                break
        else:
            for name, series in state.metrics.items():
                if "mem" in name.lower() and series:
                    value = series[-1][1]
                    break
    if value is None and state.final:
        value = _number((job.result or {}).get("peak_memory_bytes"))
    if value is None:
        return ""
    return fmt_bytes(value) if value >= 1024 else f"{value:.3g}"


def job_device(job: Job) -> str:
    state = job.refresh()
    device = state.info.get("device")
    if not device and state.final:  # the device "auto" resolved to, as the result says
        device = (job.result or {}).get("device")
    device = device or job.meta.get("device") or ""
    ranks = job.meta.get("np", 1) or 1
    return f"{device} ×{ranks}" if isinstance(ranks, int) and ranks > 1 else str(device)


def resume_job(job: Job) -> Job:
    """Relaunch a stopped job where it stopped (train: its newest checkpoint; ocr: the pages
    it did not read), with the same ranks and device (:func:`skiff.jobs.resume`). The new
    job records ``%jobs resume ID``, the line a notebook user would type for the same."""
    from skiff.jobs import resume

    return resume(job, front="magic")


def _resumable(kind: str) -> bool:
    """Whether ``jobs resume`` takes jobs of ``kind`` (its kind has its own
    ``resume_config``: train from a checkpoint, ocr with the pages it did not read, solve
    from its last iterate)."""
    from skiff.kinds import KINDS, Kind

    found = KINDS.get(kind)
    return found is not None and type(found).resume_config is not Kind.resume_config


RESUME_TIP = ("resume: go on where the job stopped (a train job from its newest checkpoint, "
              "an OCR job with the pages it did not read, a solve stopped mid-way from its "
              "last iterate)")


def _resume_refusal(job) -> str | None:
    from skiff.jobs.going_on import resume_refusal

    return resume_refusal(job)


def folder_listing(run_dir: Path, limit: int = 60) -> str:
    """HTML: the run folder's path and its files with their sizes."""
    run_dir = Path(run_dir)
    rows = []
    files = sorted(p for p in run_dir.rglob("*") if p.is_file())
    for p in files[:limit]:
        rows.append(f"<tr><td><code>{html.escape(str(p.relative_to(run_dir)))}</code></td>"
                    f"<td style='text-align:right'>{fmt_bytes(p.stat().st_size)}</td></tr>")
    more = f"<tr><td>… {len(files) - limit} more</td></tr>" if len(files) > limit else ""
    return (f"<div class='skiff-folder'><b>run folder</b> <code>{html.escape(str(run_dir))}"
            f"</code><table style='font-size:90%'>{''.join(rows)}{more}</table></div>")


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


class _RowLooks:
    """The layouts and styles that the rows of a monitor share: one widget model each, not
    one per cell (a row was 40 models, 20 rows 800 of a notebook's saved state; round 37)."""

    def __init__(self):
        self.cell = W.Layout(overflow="hidden")
        self.cell_style = HTMLStyle()
        self.bar = W.Layout(width="5em")
        self.line = W.Layout(align_items="center")
        self.button = W.Layout(width="2.4em", padding="0")
        self.hidden_button = W.Layout(width="2.4em", padding="0", display="none")
        self.button_style = W.ButtonStyle()


def _cell(looks: _RowLooks, value: str = "", cls: str | None = None) -> W.HTML:
    w = W.HTML(value, layout=looks.cell, style=looks.cell_style)
    if cls:
        w.add_class(cls)
    return w


class _Row:
    """The widgets of one job's row."""

    def __init__(self, monitor: JobMonitor, job: Job):
        self.job = job
        self._shown: int | None = None  # event count of the final state shown
        looks = monitor._looks
        short = html.escape(job.id)
        self.id = _cell(looks, f"<code style='font-size:80%'>{short}</code>", "skiff-monitor-id")
        label = job.meta.get("label") or job.kind
        self.kind = _cell(looks, f"<span title='{html.escape(str(label))}'>"
                          f"{html.escape(job.kind)}</span>")
        self.status = _cell(looks, "", "skiff-monitor-status")
        self.progress = W.FloatProgress(min=0.0, max=1.0, value=0.0, layout=looks.bar)
        self.progress_text = _cell(looks)
        self.elapsed = _cell(looks)
        self.device = _cell(looks)
        self.memory = _cell(looks)

        def small(shown: bool = True):
            return {"layout": looks.button if shown else looks.hidden_button,
                    "style": looks.button_style}

        # icon buttons: the table stays narrow; the tooltip says what each does
        self.cancel = W.Button(icon="stop", **small(), tooltip="cancel: ask the job to stop")
        self.show = W.Button(icon="eye", **small(),
                             tooltip="show the job's live widget below the table")
        # train, ocr and solve go on (an OCR job: it was hidden)
        self.resume = W.Button(icon="play", **small(_resumable(job.kind)), tooltip=RESUME_TIP)
        self.folder = W.Button(icon="folder-open", **small(),
                               tooltip="show the run folder and its files")
        for b, cls in ((self.cancel, "skiff-monitor-cancel"), (self.show, "skiff-monitor-show"),
                       (self.resume, "skiff-monitor-resume"),
                       (self.folder, "skiff-monitor-folder")):
            b.add_class(cls)
        self.cancel.on_click(lambda _b: monitor.cancel(self.job))
        self.show.on_click(lambda _b: monitor.show(self.job))
        self.resume.on_click(lambda _b: monitor.resume(self.job))
        self.folder.on_click(lambda _b: monitor.open_folder(self.job))
        self.cells = [self.id, self.kind, self.status,
                      W.HBox([self.progress, self.progress_text], layout=looks.line),
                      self.elapsed, self.device, self.memory,
                      W.HBox([self.cancel, self.show, self.resume, self.folder])]
        self.cells[0].add_class("skiff-monitor-row")

    def widgets(self):
        return [self.status, self.progress, self.progress_text, self.elapsed, self.device,
                self.memory, self.cancel, self.resume]

    def update(self) -> None:
        state = self.job.refresh()
        final, n_events = state.final, state.n_events
        if final and self._shown == n_events:
            return  # an ended job's row does not change any more
        with contextlib.ExitStack() as stack:
            for w in self.widgets():
                stack.enter_context(w.hold_sync())
            self.status.value = badge(state.status)
            if state.total:
                total = float(state.total)
                self.progress.max = total
                self.progress.value = min(float(state.done), total)
                self.progress_text.value = f"{state.done:g}/{total:g}"
            elif state.final:
                self.progress.value = self.progress.max if state.status == "done" else 0.0
            self.progress.bar_style = {"done": "success", "failed": "danger",
                                       "cancelled": "warning"}.get(state.status, "info")
            self.elapsed.value = fmt_seconds(state.elapsed(time.time()))
            self.device.value = html.escape(job_device(self.job))
            self.memory.value = html.escape(job_memory(self.job))
            self.cancel.disabled = state.final
            # off where `jobs resume` would refuse it, its words as the tooltip (a done solve
            # or OCR job's button was on, and refused after the click; round 48)
            refusal = _resume_refusal(self.job) if final and _resumable(self.job.kind) \
                else None
            self.resume.disabled = not state.final or refusal is not None
            tip = RESUME_TIP if refusal is None else f"resume: {refusal}"
            if self.resume.tooltip != tip:
                self.resume.tooltip = tip
        self._shown = n_events if final else None


class _DamagedRow:
    """The row of a run folder that cannot be read: its name and why, nothing to press."""

    def __init__(self, monitor: JobMonitor, job: DamagedJob):
        self.job = job
        looks = monitor._looks
        self.id = _cell(looks, f"<code style='font-size:80%'>{html.escape(job.id)}</code>",
                        "skiff-monitor-id")
        self.status = _cell(looks, badge("damaged"), "skiff-monitor-status")
        self.reason = _cell(looks, f"<span title='{html.escape(job.reason)}'>"
                            f"{html.escape(job.reason)}</span>", "skiff-monitor-damaged")
        blank = [_cell(looks) for _ in range(len(COLUMNS) - 4)]
        self.cells = [self.id, _cell(looks, "?"), self.status, self.reason, *blank]
        self.cells[0].add_class("skiff-monitor-row")

    def update(self) -> None:
        pass


class JobMonitor(W.VBox):
    """A live table of the jobs in the run folders (newest first).

    Parameters
    ----------
    root : path, optional
        The runs root (default ``$SKIFF_RUNS`` or ``./skiff-runs``).
    limit : int
        Show at most this many of the newest jobs.
    poll : float
        Seconds between reads of the run folders.
    start : bool
        Start the watcher thread now (tests may call :meth:`refresh` by hand).
    """

    def __init__(self, root=None, *, limit: int = 20, poll: float = 1.0, start: bool = True):
        if limit < 1 or poll <= 0:
            raise ValueError(f"limit must be >= 1 and poll > 0, got {limit!r}, {poll!r}")
        self.root = root
        self.limit = int(limit)
        self.poll = float(poll)
        self.rows: dict[str, _Row] = {}
        self._jobs: dict[Path, Job] = {}
        self._ended: set[Path] = set()   # older than the newest rows, and ended: not read again
        self._order: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._looks = _RowLooks()
        self.heading = W.HTML("")
        self.heading.add_class("skiff-monitor-heading")
        head = [W.HTML(f"<b>{c}</b>") for c in COLUMNS]
        self._head = head
        self.table = W.GridBox(head, layout=W.Layout(grid_template_columns=_TEMPLATE,
                                                     grid_gap="2px 6px", align_items="center",
                                                     overflow="auto"))
        self.table.add_class("skiff-monitor-table")
        self.message = W.HTML("")
        self.message.add_class("skiff-monitor-message")
        self.detail = W.VBox([])
        self.detail.add_class("skiff-monitor-detail")
        super().__init__([self.heading, self.table, self.message, self.detail])
        self.add_class("skiff-monitor")
        self.refresh()
        if start:
            self.start()

    # the table ----------------------------------------------------------------------------
    def _job(self, path: Path) -> Job | DamagedJob:
        job = self._jobs.get(path)
        if job is None or isinstance(job, DamagedJob):
            try:
                job = Job.load(path)
            except (DamagedRunFolder, PermissionError) as exc:
                reason = str(exc).split(": ", 1)[-1] if isinstance(exc, DamagedRunFolder) \
                    else "permission denied"
                job = DamagedJob(path, reason)
            self._jobs[path] = job
        return job

    def refresh(self, *, resend: bool = False) -> None:
        """Re-read the run folders: add rows for new jobs, update the others. ``resend``: send
        the whole table again now (a notebook executed by nbclient keeps only the widget
        messages sent while a cell ran, not those of the monitor's own thread)."""
        with self._lock:
            self._refresh()
            if resend:
                for w in (self.heading, *self.table.children, self.table):
                    for part in (getattr(w, "layout", None), getattr(w, "style", None), w):
                        if part is not None and hasattr(part, "send_state"):
                            part.send_state()

    def _refresh(self) -> None:
        # folder names start with a time stamp to the second: take a margin, then order
        # by the exact creation time
        every = list_run_dirs(self.root)
        dirs = every[-(self.limit + 50):]
        # an older job still running (a long training behind many quick jobs) stays a row:
        # a folder with no folded.json (written at a final status) is read, once ended no more
        older = [d for d in every[:len(every) - len(dirs)]
                 if d not in self._ended and not (d / "folded.json").exists()]
        jobs = []
        for d in [*dirs, *older]:
            try:
                jobs.append(self._job(d))
            except (OSError, ValueError, KeyError):
                continue  # a folder being created or removed right now
        jobs.sort(key=lambda j: (j.meta.get("created") or _mtime(j.run_dir), j.id),
                  reverse=True)
        behind = [j for j in jobs[self.limit:] if not isinstance(j, DamagedJob)
                  and not j.refresh().final]
        for j in jobs[self.limit:]:
            if j not in behind and j.run_dir in older:
                self._ended.add(j.run_dir)
                self._jobs.pop(j.run_dir, None)
        jobs = jobs[:self.limit] + behind
        order = [j.id for j in jobs]
        for job in jobs:
            row = self.rows.get(job.id)
            if row is None or row.job is not job:
                row = self.rows[job.id] = (_DamagedRow(self, job) if isinstance(job, DamagedJob)
                                           else _Row(self, job))
                self._order = []  # the cells changed: rebuild the table
            row.update()
        if order != self._order:
            cells = list(self._head)
            for job_id in order:
                cells.extend(self.rows[job_id].cells)
            self.table.children = cells
            for job_id in set(self.rows) - set(order):
                del self.rows[job_id]
            self._order = order
        running = sum(1 for j in jobs if not isinstance(j, DamagedJob)
                      and not j.refresh().final)
        where = html.escape(str(runs_root(self.root)))
        if len(every) > len(jobs):  # it said "20 jobs (0 running)" of 204
            also = f" and {len(behind)} older still running" if behind else ""
            self.heading.value = (
                f"the <b>{len(jobs) - len(behind)}</b> newest of {len(every)} jobs{also} "
                f"({running} of them running) in <code>{where}</code>; <code>%jobs --all"
                f"</code> lists every one")
        else:
            self.heading.value = (f"<b>{len(jobs)}</b> job{'s' if len(jobs) != 1 else ''}"
                                  f" ({running} running) in <code>{where}</code>")

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="skiff-monitor")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(self.poll):
            if self.comm is None:
                return
            try:
                self.refresh()
            except Exception as exc:  # never take the kernel down
                self.message.value = f"<pre>monitor update failed: {html.escape(repr(exc))}</pre>"

    def close(self) -> None:
        stop = getattr(self, "_stop", None)  # close() also runs from __del__ of a half-built one
        if stop is not None:
            stop.set()
        super().close()

    # actions ------------------------------------------------------------------------------
    def _say(self, text: str, error: bool = False) -> None:
        color = "#d62728" if error else "#333"
        self.message.value = f"<span style='color:{color}'>{html.escape(text)}</span>"

    def cancel(self, job: Job) -> None:
        """Cancel clicked: asked, or said why not (a job that ended before the click said
        "cancel requested"; a cancel that raised left the row's click unanswered)."""
        from skiff.jobs import ended_note

        try:
            asked = job.cancel()
        except Exception as exc:  # noqa: BLE001  (said under the table; the monitor lives on)
            self._say(f"{job.id}: {str(exc).splitlines()[0] if str(exc) else exc!r}",
                      error=True)
            return
        self._say(f"cancel requested for {job.id}" if asked else ended_note(job))

    def show(self, job: Job) -> None:
        """Show the job's live widget (refused, as ``%jobs show``, when its code is not
        signed with this user's key)."""
        from .job_view import view_for

        try:
            job.check_trusted("show")
        except UntrustedJob as exc:
            self._say(str(exc), error=True)
            return
        self.detail.children = [view_for(job)]
        self._say(f"showing {job.id}")

    def resume(self, job: Job) -> Job | None:
        """Relaunch ``job`` (refused, with how to trust it, when its code is not signed with
        this user's key: :mod:`skiff.jobs.trust`)."""
        try:
            new = resume_job(job)
        except (UntrustedJob, ValueError, TypeError) as exc:
            self._say(str(exc), error=True)
            return None
        self.refresh()
        self.show(new)
        self._say(f"resumed {job.id} as {new.id}")
        return new

    def open_folder(self, job: Job) -> None:
        self.detail.children = [W.HTML(folder_listing(job.run_dir))]
        self._say(f"run folder of {job.id}: {job.run_dir}")

    def __repr__(self) -> str:
        return f"<JobMonitor of {len(self.rows)} jobs in {runs_root(self.root)}>"
