"""``JobView``: the live widget of one job.

A JobView watches a job; it never owns the computation. One daemon thread per view polls the
job's run folder (``job.refresh()``) every ``poll`` seconds and copies what changed into the
widget traits, batched under ``hold_sync`` and throttled to ``max_rate`` updates a second; the
metric chart is redrawn at most ``chart_rate`` times a second. After the job reaches a final
status the thread makes one last update and stops.

Everything shown lives in the kernel-side models, so a browser reload (ipywidgets 8 restores
the models from the kernel) shows the same, still-updating view.
"""

from __future__ import annotations

import contextlib
import html
import threading
import time
import weakref
from pathlib import Path

import ipywidgets as W

from skiff.jobs.job import on_wait
from skiff.jobs.render import (
    STATUS_COLORS,
    badge,
    fmt_seconds,
    job_ranks,
    ranks_html,
    summarise_logs,
)
from skiff.jobs.series import with_history
from skiff.jobs.terminal import _plural, fmt_rate, shown_eta
from skiff.kinds.base import figure

from .chart import metric_chart

__all__ = ["JobView", "view_for"]

ETA_TICK_S = 1.0  # how often a shown ETA is counted down between progress events

_BAR_STYLE = {"queued": "", "running": "info", "done": "success", "failed": "danger",
              "cancelled": "warning"}

# job id -> the open JobView showing it (re-displaying a job shows the same live widget)
_VIEWS: weakref.WeakValueDictionary[str, JobView] = weakref.WeakValueDictionary()
_VIEWS_LOCK = threading.Lock()


def _resend_on_wait(job) -> None:
    """``job.wait()`` returned: the job's view shows its final state and sends all of it
    again from the waiting cell (skiff.jobs.job.on_wait)."""
    with _VIEWS_LOCK:
        view = _VIEWS.get(job.id)
    if view is not None and view.comm is not None:
        view.update(force=True)
        view.resend()


on_wait(_resend_on_wait)


def view_for(job) -> JobView:
    """The open :class:`JobView` of ``job`` if there is one, else a new one."""
    with _VIEWS_LOCK:
        view = _VIEWS.get(job.id)
        if view is not None and view.comm is not None and view.job is job:
            return view
    return JobView(job)


def _set(widget, **traits) -> None:
    """Set only the traits whose value changed (an unchanged trait sends nothing)."""
    for name, value in traits.items():
        if getattr(widget, name) != value:
            setattr(widget, name, value)


def _fmt_rate(rate: float | None, unit: str) -> str:
    """``12.3 steps/s`` or ``2.4 s/decade`` (the terminal's wording)."""
    return fmt_rate(rate, unit)


def _css_name(kind) -> str:
    return "".join(c if c.isalnum() or c == "-" else "-" for c in str(kind))[:32]


def _live_html(job, state) -> str | None:
    """The job kind's view of a running job (chat: the answer so far); never raises."""
    from skiff.kinds import KINDS

    kind = KINDS.get(job.kind)
    try:
        return kind.live_html(job, state) if kind is not None else None
    except Exception:  # noqa: BLE001 - a view must not break
        return None


def _result_html(job) -> str | None:
    """The job kind's view of its result (never raises: a view must not break)."""
    from skiff.kinds import KINDS

    kind = KINDS.get(job.kind)
    try:
        return kind.result_html(job) if kind is not None else None
    except Exception:  # noqa: BLE001 - a damaged result.json shows nothing more
        return None


def _dies_with_kernel(job) -> bool:
    """Whether ``job`` runs on a thread of this process: a restart of this kernel cancels it
    (a process job is handed over and goes on; another kernel's job is not this one's)."""
    return getattr(job, "runner", None) is not None and job.meta.get("runner") == "thread"


def reattach_hint_text(job_id: str, dies: bool = False) -> str:
    """How to follow a job once the kernel that shows it is gone (at most 110 characters:
    ipywidgets' plain-text form of a widget); ``dies``: the job runs in that kernel."""
    if dies:
        return (f"skiff job: runs in this kernel (a restart cancels it); Jobs sidebar or "
                f"%jobs show {job_id}")[:110]
    return f"skiff job: if this view stops, see the Jobs sidebar or %jobs show {job_id}"[:110]


def reattach_hint_html(job_id: str, dies: bool = False) -> str:
    """The view's line on how to follow its job without this kernel. A job on one of this
    kernel's threads does not go on when it restarts (it is cancelled, a training at a
    step with its checkpoint kept): the line said "the job goes on" of every job (round 40)."""
    jid = html.escape(job_id)
    follow = (f"JupyterLab's <b>Jobs</b> sidebar (skiff jobs) follows it live, and so does "
              f"<code>%jobs show {jid}</code> (or <code>python -m skiff jobs show {jid}</code>)")
    if dies:
        return (f"<span style='color:#888;font-size:85%'>Runs in this kernel: if it restarts "
                f"or stops, the job is cancelled (what it did is kept, a training's last "
                f"checkpoint: <code>%jobs resume {jid}</code> goes on; <code>--runner "
                f"process</code> runs a job that outlives its kernel). Meanwhile "
                f"{follow}.</span>")
    return (f"<span style='color:#888;font-size:85%'>Live while this kernel runs. If it "
            f"restarts or stops, the job goes on: {follow}.</span>")


class JobView(W.VBox):
    """Live view of a :class:`skiff.jobs.Job`: status badge, progress with rate and ETA,
    metric charts, image artifacts, the log's tail, a Cancel button and the error.

    Parameters
    ----------
    job : skiff.jobs.Job
        The job to watch (live or reattached with ``Job.load``).
    poll : float
        Seconds between reads of the run folder.
    max_rate : float
        At most this many widget updates a second.
    chart_rate : float
        At most this many chart redraws a second.
    log_lines : int
        How many of the last log lines to show.
    start : bool
        Start the watcher thread now (tests may drive :meth:`update` by hand).
    """

    def __init__(self, job, *, poll: float = 0.2, max_rate: float = 10.0,
                 chart_rate: float = 3.0, log_lines: int = 12, start: bool = True):
        if poll <= 0 or max_rate <= 0 or chart_rate <= 0:
            raise ValueError(f"poll, max_rate and chart_rate must be > 0, got "
                             f"{poll!r}, {max_rate!r}, {chart_rate!r}")
        self.job = job
        getattr(job, "read_metrics", lambda: None)()  # a listing's snapshot: its charts too
        # a job followed from another kernel (reattached) is held while this view watches it
        getattr(job, "hold", lambda: False)()
        self.poll = float(poll)
        self.min_gap = 1.0 / float(max_rate)
        self.chart_gap = 1.0 / float(chart_rate)
        self.log_lines = int(log_lines)
        self.updates = 0  # how many batched updates were sent (for tests and curiosity)
        self.chart_draws = 0
        self._last_update = 0.0
        self._last_chart = 0.0
        self._chart_events = -1
        self._seen_events = -1
        self._eta_at: float | None = None  # when a counting-down ETA was last shown
        self._final_shown = False
        self._result_shown = False
        self._failed_parts = False  # a done job with parts that failed (Job.failures)
        self._images: dict[str, tuple[float, W.Image]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

        label = job.meta.get("label") or job.kind
        self.title_view = W.HTML(f"<b>{html.escape(str(label))}</b> "
                            f"<code style='font-size:85%'>{html.escape(job.id)}</code>")
        self.badge = W.HTML(badge("queued"))
        self.badge.add_class("skiff-status")
        self.elapsed = W.HTML("")
        self.elapsed.add_class("skiff-elapsed")
        self.cancel_button = W.Button(description="Cancel", icon="stop", button_style="warning",
                                      tooltip="ask the job to stop at its next step",
                                      layout=W.Layout(width="auto"))
        self.cancel_button.add_class("skiff-cancel")
        self.cancel_button.on_click(self._on_cancel)
        header = W.HBox([self.title_view, self.badge, self.elapsed, self.cancel_button],
                        layout=W.Layout(align_items="center", grid_gap="12px"))
        self.progress = W.FloatProgress(value=0.0, min=0.0, max=1.0,
                                        layout=W.Layout(width="60%"))
        self.progress.add_class("skiff-progress")
        self.progress_text = W.HTML("")
        self.progress_text.add_class("skiff-progress-text")
        # images keep their own pixel size (align_self): a stretched chart looks blurred
        self.metrics_view = W.HTML("")
        self.metrics_view.add_class("skiff-metrics")
        self.chart = W.Image(format="png", layout=W.Layout(display="none",
                                                           align_self="flex-start"))
        self.chart.add_class("skiff-chart")
        self.images = W.HBox([], layout=W.Layout(display="none", flex_flow="row wrap"))
        self.images.add_class("skiff-images")
        # an MPI job: each rank's status and last lines (read from the run folder at most
        # once a second; the last time when the job has ended)
        self.ranks_view = W.HTML("", layout=W.Layout(display="none"))
        self.ranks_view.add_class("skiff-ranks")
        self._ranks_read = 0.0
        self.log_view = W.HTML("", layout=W.Layout(display="none"))
        self.log_view.add_class("skiff-log")
        self.error_view = W.HTML("", layout=W.Layout(display="none"))
        self.error_view.add_class("skiff-error")
        # a job that goes on from a stopped one (jobs resume): from which, and from where
        self.resumed_view = W.HTML("", layout=W.Layout(display="none"))
        self.resumed_view.add_class("skiff-resumed")
        self._resumed_said = ""
        # saved with the notebook: while the job runs, the view says how to follow it should
        # this kernel go (a view whose kernel is gone stays frozen at its last state)
        self._dies = _dies_with_kernel(job)
        # (for a running job only: a job that has ended has nothing to follow or cancel)
        self.reattach_hint = W.HTML("" if job.refresh().final else
                                    reattach_hint_html(job.id, self._dies))
        self.reattach_hint.add_class("skiff-reattach")
        # what the kind shows once the job is done (OCR: the lines it read)
        self.result_view = W.HTML("", layout=W.Layout(display="none"))
        self.result_view.add_class("skiff-result")
        self.result_view.add_class(f"skiff-{_css_name(job.kind)}-table")
        super().__init__([header, self.resumed_view, W.HBox([self.progress, self.progress_text]),
                          self.metrics_view, self.chart,
                          self.images, self.result_view, self.ranks_view, self.log_view,
                          self.error_view,
                          self.reattach_hint],
                         layout=W.Layout(border="1px solid #ddd", padding="4px 8px"))
        self.add_class("skiff-job-view")
        self.update(force=True)
        with _VIEWS_LOCK:
            _VIEWS[job.id] = self
        if not self._final_shown:
            # the runner calls this when the job ends, before job.wait() returns: the final
            # state is sent while the cell that waits is still running (nbclient, tests)
            job.add_done_callback(self._on_done)
        if start:
            self.start()

    def __repr__(self) -> str:  # the plain-text form saved beside the widget in a notebook
        job = getattr(self, "job", None)
        state = getattr(job, "state", None)
        if job is not None and getattr(state, "final", False):  # nothing left to follow
            # (a done job's saved text said how to follow it should the kernel go; round 40)
            return f"skiff job {job.id}: {state.status} (%jobs show {job.id} shows it)"[:110]
        return reattach_hint_text(self.job.id, getattr(self, "_dies", False))

    # the watcher thread ----------------------------------------------------------------------
    def start(self) -> None:
        """Start the watcher thread (once; it stops by itself when the job has ended)."""
        if self._thread is not None and self._thread.is_alive():
            return
        if self._final_shown:
            return  # the job had ended and its last state is shown: nothing to watch
        self._stop.clear()
        self._thread = threading.Thread(target=self._watch, daemon=True,
                                        name=f"skiff-view-{self.job.id}")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    @property
    def watching(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _watch(self) -> None:
        while not self._stop.is_set():
            if self.comm is None:  # the widget was closed
                return
            try:
                final = self.update()
            except Exception as exc:  # a view must never take the kernel down
                self.error_view.value = f"<pre>view update failed: {html.escape(repr(exc))}</pre>"
                self.error_view.layout.display = None
                return
            if final:
                return
            self._stop.wait(self.poll)

    def close(self) -> None:
        stop = getattr(self, "_stop", None)  # close() also runs from __del__ of a half-built one
        if stop is not None:
            stop.set()
        super().close()

    # updates -----------------------------------------------------------------------------
    def update(self, *, force: bool = False) -> bool:
        """Copy the job's current state into the widgets; returns True once the job is final
        and its last state is shown. Throttled unless ``force``."""
        with self._lock:
            now = time.monotonic()
            state = self.job.refresh()
            # other threads may fold newer events into the same state while we read it: read
            # "final", then the event count, then the fields, so that anything newer than the
            # count is shown again on the next update and a final view is never stale
            final = state.final
            n_events = state.n_events
            if not force and not final and now - self._last_update < self.min_gap:
                return False
            changed = n_events != self._seen_events
            wants_chart = state.metrics and n_events != self._chart_events and (
                force or final or now - self._last_chart >= self.chart_gap)
            parts = [self.badge, self.elapsed, self.progress, self.progress_text, self.resumed_view,
                     self.cancel_button, self.log_view, self.error_view, self.images,
                     self.metrics_view, self.ranks_view]
            with contextlib.ExitStack() as stack:
                for w in parts:
                    stack.enter_context(w.hold_sync())
                self._update_header(state)
                if changed or force or state.stalled(time.time()) is not None:
                    self._update_progress(state)
                    self._update_metrics(state)
                    self._update_log(state)
                    self._update_error(state)
                    self._update_images(state)
                    self._update_live(state)
                elif self._eta_at is not None and now - self._eta_at >= ETA_TICK_S:
                    self._update_progress(state)  # the ETA counts down between events
                if force or final or now - self._ranks_read >= 1.0:
                    self._update_ranks()
                    self._update_folder_gone(state)
                    self._ranks_read = now
            # the chart last, after the status and progress have been sent: drawing takes
            # a while on a loaded machine, and the status should not wait for it
            if wants_chart:
                self._draw_chart(state)
                self._last_chart = now
                self._chart_events = n_events
            self._seen_events = n_events
            self._last_update = now
            self.updates += 1
            # final only once the chart shows the last metrics too
            self._final_shown = final and (not state.metrics or self._chart_events == n_events)
            return self._final_shown

    def _update_header(self, state) -> None:
        _set(self.badge, value=badge(state.status))
        elapsed = state.elapsed(time.time())
        _set(self.elapsed, value="" if elapsed is None else
             f"<span style='color:#666'>elapsed {fmt_seconds(elapsed)}</span>")
        _set(self.cancel_button, disabled=state.final)
        if state.final:  # nothing left to cancel, nothing left to follow
            _set(self.cancel_button.layout, display="none")
            _set(self.reattach_hint.layout, display="none")
            # its words too: a failed job's view kept "Runs in this kernel: if it restarts
            # ..." in its state, which a front end that does not read the layout shows
            # (round 47 h17)
            _set(self.reattach_hint, value="")
            if state.status == "done" and not self._result_shown:
                self._result_shown = True
                result = _result_html(self.job)
                if result:
                    self.result_view.value = result
                    _set(self.result_view.layout, display=None)
                self._show_failures()

    def _show_failures(self) -> None:
        """A done job of which a part failed (a solve that did not converge, images OCR could
        not read): said under the log in the warning colour, the bar too; the badge still
        says done, as the job ran to its end."""
        failed = self.job.failures
        if not failed:
            return
        items = "".join(f"<li>{html.escape(f)}</li>" for f in failed[:10])
        more = f"<li>… and {len(failed) - 10} more</li>" if len(failed) > 10 else ""
        color = STATUS_COLORS["cancelled"]
        from skiff.jobs.going_on import resume_hint

        # an OCR job's images it could not read: the line that reads them again (round 47)
        hint = resume_hint(self.job, front="magic")
        hint = (f"<div class='skiff-resume-hint' style='color:#444'>{html.escape(hint)}</div>"
                if hint else "")
        _set(self.error_view, value=f"<div style='color:{color}'><b>⚠ done, but "
                                    f"{len(failed)} part{'s' if len(failed) > 1 else ''} "
                                    f"failed:</b><ul style='margin:2px 0'>{items}{more}</ul>"
                                    f"</div>{hint}")
        _set(self.error_view.layout, display=None)
        self._failed_parts = True

    def _update_live(self, state) -> None:
        """What the kind shows while the job runs (a chat's answer as it is written)."""
        if state.final:
            return
        live = _live_html(self.job, state)
        if live:
            _set(self.result_view, value=live)
            _set(self.result_view.layout, display=None)

    def _update_progress(self, state) -> None:
        total = float(state.total) if state.total else None
        if total:
            _set(self.progress, max=total, value=min(float(state.done), total))
        elif state.final:
            _set(self.progress, max=1.0, value=1.0 if state.status == "done" else 0.0)
        style = _BAR_STYLE.get(state.status, "")
        _set(self.progress, bar_style="warning" if self._failed_parts else style)
        bits = []
        if total:
            # "97/200 steps", as the terminal and the Jobs sidebar say it ("step", round 41)
            bits.append(f"{100 * state.fraction:.0f}% · {figure(state.done)}/{figure(total)} "
                        f"{html.escape(_plural(state.unit) if state.unit else '')}")
        elif state.done:
            bits.append(f"{figure(state.done)} "
                        f"{html.escape(_plural(state.unit) if state.unit else '')}")
        eta = None
        stalled = state.stalled(time.time())
        finishing = state.finishing()
        if stalled is not None:  # the rate and ETA were those of before it went quiet
            bits.append(f"no progress for {fmt_seconds(stalled)}")
        elif finishing is not None:  # past its last step, working (an ocr-rec's final reading)
            bits.append("finishing" + (f": <i>{html.escape(finishing)}</i>" if finishing
                                       else ""))
        elif not state.final:
            rate = _fmt_rate(state.rate(), html.escape(state.unit))
            if rate:
                bits.append(rate)
            # none from the first quick units (round 31); counted down from the latest
            # progress (round 46 h11: a job held between events showed 'ETA 0.7 s' on)
            eta = shown_eta(state, time.time())
            if eta is not None:
                bits.append(f"ETA {fmt_seconds(eta)}")
                self._eta_at = time.monotonic()
        if state.final or eta is None:
            self._eta_at = None
        if state.message:
            bits.append(f"<i>{html.escape(str(state.message))}</i>")
        _set(self.progress_text, value=" · ".join(bits))

    def _update_metrics(self, state) -> None:
        """The last value of every metric, in one line."""
        bits = []
        for name, series in list(state.metrics.items())[:12]:
            value = series[-1][1] if series else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                bits.append(f"{html.escape(name)} <b>{value:.4g}</b>")
        _set(self.metrics_view, value="<span style='font-size:90%;color:#444'>"
                                      f"{' · '.join(bits)}</span>" if bits else "")

    def _update_ranks(self) -> None:
        text = ranks_html(job_ranks(self.job))
        if text:
            _set(self.ranks_view, value=text)
            _set(self.ranks_view.layout, display=None)

    def _update_resumed(self, state) -> None:
        """``jobs resume ID``'s run: "goes on from job ID", then the kernel's own line on
        where it went on from once it says it (train: "resumed from step 143 (epoch 4,
        batch 15)"; OCR: "resuming: 12 pages read by the earlier job kept ...")."""
        label = str(self.job.meta.get("label") or "")
        if not label.startswith("resume "):
            return
        said = f"goes on from job {label.split(' ', 1)[1]}"
        where = next((msg for _t, _level, msg in state.logs
                      if str(msg).lower().startswith("resum")), None)
        if where:
            said += f": {where}"
        if said != self._resumed_said and (where or not self._resumed_said):  # kept once
            # said: the kernel's line may scroll out of the log's tail later
            self._resumed_said = said
            _set(self.resumed_view, value=f"<span style='color:#444'>↻ {html.escape(said)}"
                                          "</span>")
            _set(self.resumed_view.layout, display=None)

    def _update_log(self, state) -> None:
        self._update_resumed(state)
        lines = summarise_logs(state.logs)[-self.log_lines:]
        if not lines:
            return
        text = "\n".join(
            f"{time.strftime('%H:%M:%S', time.localtime(t)) if t else ''} "
            f"{'' if level == 'info' else f'[{level}] '}{msg}" for t, level, msg in lines)
        _set(self.log_view, value="<pre style='font-size:80%;margin:2px 0;max-height:14em;"
                             f"overflow:auto;line-height:1.25'>{html.escape(text)}</pre>")
        _set(self.log_view.layout, display=None)

    def _update_folder_gone(self, state) -> None:
        """A running job whose run folder was removed (``rm -rf`` of the runs folder, a test's
        temporary folder): said at once. The view said "running", its elapsed time growing,
        until the job's next write failed: a step of minutes, a model loading, a direct solve
        (round 44)."""
        if state.final or self._gone_said or (self.job.run_dir / "config.json").is_file():
            return
        self._gone_said = True
        color = STATUS_COLORS["failed"]
        _set(self.error_view, value=f"<div style='color:{color}'><b>its run folder "
                                    f"{html.escape(str(self.job.run_dir))} was removed: "
                                    "nothing more of this job can be recorded or read (it "
                                    "is stopped)</b></div>")
        _set(self.error_view.layout, display=None)

    _gone_said = False

    def _update_error(self, state) -> None:
        if not state.error and not (state.final and state.status != "done"):
            return
        # a cancel the user asked for is not an error: said in the badge's colour
        color = STATUS_COLORS["cancelled" if state.status == "cancelled" else "failed"]
        tb = ""
        if state.traceback:
            from skiff.jobs.blame import users_error

            # the user's to fix (a missing file, a bad column): its line, skiff's traceback
            # folded; skiff's own bug or a function's error: the traceback open (round 47)
            mine = users_error(state.error, state.traceback)
            title = "skiff's traceback (for a bug report)" if mine else "traceback"
            tb = (f"<details{'' if mine else ' open'}><summary>{title}</summary>"
                  f"<pre style='font-size:80%'>"
                  f"{html.escape(state.traceback)}</pre></details>")
        hint = ""
        if state.final:  # a stop it can go on from: the line that does, to copy
            from skiff.jobs.going_on import resume_hint

            if getattr(self, "_resume_hint", None) is None:
                self._resume_hint = resume_hint(self.job, front="magic") or ""
            if self._resume_hint:
                hint = (f"<div class='skiff-resume-hint' style='color:#444'>"
                        f"{html.escape(self._resume_hint)}</div>")
        if not state.error and not hint:  # a cancel with no reason and no way on: the badge
            return
        said = (f"<div style='color:{color}'><b>{html.escape(state.error)}</b></div>"
                if state.error else "")
        _set(self.error_view, value=f"{said}{hint}{tb}")
        _set(self.error_view.layout, display=None)

    def _update_images(self, state) -> None:
        latest: dict[str, dict] = {}
        for art in state.artifacts:
            if art.get("kind") == "image" and str(art.get("path", "")).lower().endswith(".png"):
                latest[art.get("name", art["path"])] = art
        if not latest:
            return
        children = []
        for name, art in latest.items():
            path = Path(self.job.run_dir) / art["path"]
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue
            known = self._images.get(name)
            if known is None:
                img = W.Image(format="png", layout=W.Layout(max_width="560px",
                                                            align_self="flex-start"))
                img.add_class("skiff-artifact")
                known = (-1.0, img)
            if known[0] != mtime:
                known[1].value = path.read_bytes()
                known = (mtime, known[1])
            self._images[name] = known
            children.append(known[1])
        if tuple(children) != tuple(self.images.children):
            self.images.children = children
        _set(self.images.layout, display=None if children else "none")

    def _draw_chart(self, state) -> None:
        metrics = state.metrics
        if state.final:  # the whole history, where the events sampled (round 44)
            try:
                metrics = with_history(metrics, self.job.result)
            except Exception:  # noqa: BLE001 - a damaged result.json: the events' points
                metrics = state.metrics
        png = metric_chart(metrics)
        if png is None:
            return
        self.chart.value = png
        self.chart_draws += 1
        _set(self.chart.layout, display=None)

    def resend(self) -> None:
        """Send the whole state of this view and of every widget in it again."""
        todo = [self]
        while todo:
            w = todo.pop()
            if getattr(w, "comm", None) is None:
                continue
            w.send_state()
            todo.extend(c for c in getattr(w, "children", ()) if isinstance(c, W.Widget))

    def _on_done(self, _job) -> None:
        if self.comm is not None:
            self.update(force=True)

    # actions -----------------------------------------------------------------------------
    def _on_cancel(self, _button=None) -> None:
        """Cancel clicked: asks the job to stop. A job that ended meanwhile (a click queued
        behind its last step) is only redrawn as it ended: the button said "Cancelling…"
        for a job that was done. A cancel that cannot be made (a process that is no longer
        the job's) says why on the button, which stays usable."""
        self.cancel_button.disabled = True
        self.cancel_button.description = "Cancelling…"
        try:
            asked = self.job.cancel()
        except Exception as exc:  # noqa: BLE001  (said on the button; the view lives on)
            self.cancel_button.description = "Cancel failed"
            self.cancel_button.tooltip = str(exc).splitlines()[0] if str(exc) else \
                type(exc).__name__
            self.cancel_button.disabled = False
            return
        if not asked:
            self.cancel_button.description = "Cancel"
            self.update(force=True)

    @property
    def status(self) -> str:
        """The status the badge shows."""
        return self.job.refresh().status

