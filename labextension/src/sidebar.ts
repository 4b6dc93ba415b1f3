// The "skiff jobs" sidebar: every job of the run folders, newest first, live while the
// panel is visible (one request a second), with Open, Cancel (a job that runs) and Remove
// (a job that ended); a filter by kind and status (the server filters). It reads the
// server, never a kernel.
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { ApiError, IJobFilter, IJobRow, IRankRow, cancelJob, listJobs, removeJob } from './api';
import { el, figure, setText, startTime } from './format';

export const POLL_MS = 1000;
export const STATUSES = ['queued', 'running', 'done', 'failed', 'cancelled', 'damaged'];
/** Where the chosen filter is kept across a page reload (this origin's localStorage, as
 * JupyterLab keeps its own small UI state): `{"kind": "...", "status": "..."}`. */
export const FILTER_KEY = 'skiff-lab:jobs-filter';

/** The filter kept by the last page (empty when none, unreadable or not a filter). */
export function storedFilter(): IJobFilter {
  try {
    const value = JSON.parse(window.localStorage.getItem(FILTER_KEY) || '{}');
    const kind = typeof value.kind === 'string' && /^[\w.-]+$/.test(value.kind)
      ? value.kind : undefined;
    const status = STATUSES.includes(value.status) ? value.status : undefined;
    return { kind, status };
  } catch {
    return {};
  }
}

function storeFilter(filter: IJobFilter): void {
  try {
    if (filter.kind || filter.status) {
      window.localStorage.setItem(FILTER_KEY, JSON.stringify(filter));
    } else {
      window.localStorage.removeItem(FILTER_KEY);
    }
  } catch {
    // no storage (a private window's quota): the filter lasts this page only
  }
}

interface IRowNodes {
  row: HTMLElement;
  kind: HTMLElement;
  name: HTMLElement;
  status: HTMLElement;
  bar: HTMLElement;
  fill: HTMLElement;
  label: HTMLElement;
  started: HTMLElement;
  command: HTMLElement;
  ranks: HTMLElement;
  error: HTMLElement;
  cancel: HTMLButtonElement;
  remove: HTMLButtonElement;
}

export class JobsPanel extends Widget {
  constructor(private readonly openJob: (id: string) => void) {
    super();
    this.id = 'skiff-jobs';
    this.addClass('skiff-JobsPanel');
    this.title.caption = 'skiff jobs';
    const head = el('div', 'skiff-JobsPanel-header');
    head.appendChild(el('span', 'skiff-JobsPanel-title', 'skiff jobs'));
    const refresh = el('button', 'skiff-JobsPanel-refresh jp-Button', '⟳');
    refresh.title = 'read the run folders again now';
    refresh.onclick = () => void this.refresh();
    head.appendChild(refresh);
    this._root = el('div', 'skiff-JobsPanel-root');
    const filters = el('div', 'skiff-JobsPanel-filters');
    this._kind = el('select', 'skiff-JobsPanel-kind jp-mod-styled');
    this._kind.title = 'show the jobs of one kind';
    this._status = el('select', 'skiff-JobsPanel-status jp-mod-styled');
    this._status.title = 'show the jobs in one status';
    this._options(this._kind, [], 'every kind');
    this._options(this._status, STATUSES, 'every status');
    for (const select of [this._kind, this._status]) {
      select.onchange = () => {
        storeFilter(this.filter);
        void this.refresh();
      };
    }
    filters.append(this._kind, this._status);
    this._choose(storedFilter());
    this._message = el('div', 'skiff-JobsPanel-message');
    this._list = el('div', 'skiff-JobsPanel-list');
    this._more = el('div', 'skiff-JobsPanel-more');
    for (const node of [head, this._root, filters, this._message, this._list, this._more]) {
      this.node.appendChild(node);
    }
    this._schedule(0);
  }

  /** Read the job list now and redraw. */
  async refresh(): Promise<void> {
    try {
      const filter = this.filter;
      const data = await listJobs(filter);
      this._draw(data.jobs);
      setText(this._root, `run folders: ${data.root}`);
      this._root.title = data.root;
      // a kind chosen stays in the menu while no job of it is left (its list is empty)
      this._options(this._kind, [...new Set([...(data.kinds || []), filter.kind || ''])]
        .filter(k => k).sort(), 'every kind');
      setText(this._more, data.hidden ? `${data.hidden} older jobs not shown` : '');
      const filtered = filter.kind || filter.status;
      const what = [filter.status, filter.kind].filter(x => x).join(' ');
      setText(this._message, data.jobs.length ? '' : filtered
        ? `No ${what} jobs (${data.total ?? 0} in all): choose "every" to see them.`
        : 'No jobs yet. Start one with %train, %solve, %ocr in a notebook, or python -m ' +
          'skiff in a terminal.');
      this.node.dataset.ready = 'true';
    } catch (error) {
      setText(this._message, `cannot read the jobs: ${(error as Error).message}`);
    }
  }

  dispose(): void {
    window.clearTimeout(this._timer);
    super.dispose();
  }

  /** The kind and status the list shows (empty: every one). */
  get filter(): IJobFilter {
    return { kind: this._kind.value || undefined, status: this._status.value || undefined };
  }

  set filter(value: IJobFilter) {
    this._choose(value);
    storeFilter(this.filter);
    void this.refresh();
  }

  private _choose(value: IJobFilter): void {
    if (value.kind && ![...this._kind.options].some(o => o.value === value.kind)) {
      this._options(this._kind, [value.kind], 'every kind');
    }
    this._kind.value = value.kind || '';
    this._status.value = value.status || '';
  }

  private _options(select: HTMLSelectElement, values: string[], every: string): void {
    const want = ['', ...values];
    const have = [...select.options].map(o => o.value);
    if (want.length === have.length && want.every((v, i) => v === have[i])) {
      return; // unchanged: the user's open menu is left alone
    }
    const chosen = select.value;
    select.replaceChildren(...want.map(v => {
      const option = document.createElement('option');
      option.value = v;
      option.textContent = v || every;
      return option;
    }));
    select.value = want.includes(chosen) ? chosen : '';
  }

  private _schedule(delay: number): void {
    window.clearTimeout(this._timer);
    this._timer = window.setTimeout(async () => {
      // only while someone can see it (a hidden sidebar costs the server nothing)
      if (this.isVisible || !this.node.dataset.ready) {
        await this.refresh();
      }
      if (!this.isDisposed) {
        this._schedule(POLL_MS);
      }
    }, delay);
  }

  protected onAfterShow(): void {
    this._schedule(0);
  }

  private _draw(jobs: IJobRow[]): void {
    const seen = new Set<string>();
    jobs.forEach((job, index) => {
      seen.add(job.id);
      let nodes = this._rows.get(job.id);
      if (!nodes) {
        nodes = this._makeRow(job.id);
        this._rows.set(job.id, nodes);
      }
      this._fill(nodes, job);
      if (this._list.children[index] !== nodes.row) {
        this._list.insertBefore(nodes.row, this._list.children[index] || null);
      }
    });
    for (const [id, nodes] of this._rows) {
      if (!seen.has(id)) {
        nodes.row.remove();
        this._rows.delete(id);
      }
    }
  }

  private _makeRow(id: string): IRowNodes {
    const row = el('div', 'skiff-JobRow');
    row.dataset.jobId = id;
    const top = el('div', 'skiff-JobRow-top');
    const kind = el('span', 'skiff-JobRow-kind');
    const name = el('span', 'skiff-JobRow-name');
    const status = el('span', 'skiff-JobRow-status');
    const started = el('span', 'skiff-JobRow-started');
    top.append(kind, name, status, started);
    const bar = el('div', 'skiff-JobRow-bar');
    const fill = el('div', 'skiff-JobRow-fill');
    bar.appendChild(fill);
    const label = el('div', 'skiff-JobRow-progress');
    const command = el('div', 'skiff-JobRow-command');
    const ranks = el('div', 'skiff-JobRow-ranks');
    const error = el('div', 'skiff-JobRow-error');
    const buttons = el('div', 'skiff-JobRow-buttons');
    const open = el('button', 'skiff-JobRow-open jp-Button', 'Open');
    open.title = 'open the live view of this job in a tab';
    open.onclick = () => this.openJob(id);
    const cancel = el('button', 'skiff-JobRow-cancel jp-Button', 'Cancel');
    cancel.title = 'ask the job to stop at its next step (then stop its processes)';
    cancel.onclick = () => void this._cancel(id, cancel);
    const remove = el('button', 'skiff-JobRow-remove jp-Button', 'Remove');
    remove.title = 'delete this finished job\'s run folder';
    remove.onclick = () => void this._remove(id);
    buttons.append(open, cancel, remove);
    row.append(top, bar, label, command, ranks, error, buttons);
    row.ondblclick = () => this.openJob(id);
    return { row, kind, name, status, bar, fill, label, started, command, ranks, error, cancel,
      remove };
  }

  private _fill(n: IRowNodes, job: IJobRow): void {
    n.row.dataset.status = job.status;
    setText(n.kind, job.kind);
    setText(n.name, job.name || job.id);
    n.name.title = job.id;
    setText(n.status, job.status + (job.trust && job.trust !== 'trusted' ? ` (${job.trust})` : ''));
    n.status.className = `skiff-JobRow-status skiff-mod-${job.status}`;
    const started = job.started ?? job.created;
    setText(n.started, startTime(started));
    n.started.title = started ? new Date(started * 1000).toString() : '';
    const fraction = job.fraction ?? (job.status === 'done' ? 1 : 0);
    n.fill.style.width = `${(100 * fraction).toFixed(1)}%`;
    n.bar.dataset.fraction = String(job.fraction ?? '');
    n.bar.style.display = job.damaged ? 'none' : '';
    setText(n.label, job.progress);
    const ranks = job.np && job.np > 1 ? `  [${job.np} ranks]` : '';
    setText(n.command, job.damaged ? `damaged: ${job.damaged}` : (job.command || '') + ranks);
    n.command.title = n.command.textContent || '';
    drawRanks(n.ranks, job.ranks || []);
    setText(n.error, job.error && !job.damaged ? job.error : '');
    n.cancel.style.display = job.final ? 'none' : '';
    n.remove.style.display = job.final ? '' : 'none';
  }

  private async _cancel(id: string, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    try {
      await cancelJob(id);
    } catch (error) {
      void this._say('Cannot cancel', error as Error);
    } finally {
      button.disabled = false;
    }
    await this.refresh();
  }

  private async _remove(id: string): Promise<void> {
    const answer = await showDialog({
      title: 'Remove this job?',
      body: `The run folder of ${id} is deleted, with its logs, results and checkpoints.`,
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Remove' })]
    });
    if (!answer.button.accept) {
      return;
    }
    try {
      await removeJob(id);
    } catch (error) {
      void this._say('Cannot remove', error as Error);
    }
    await this.refresh();
  }

  private _say(title: string, error: Error): Promise<unknown> {
    const status = error instanceof ApiError && error.status ? ` (${error.status})` : '';
    return showDialog({
      title: title + status,
      body: error.message,
      buttons: [Dialog.okButton()]
    });
  }

  private _rows = new Map<string, IRowNodes>();
  private _kind: HTMLSelectElement;
  private _status: HTMLSelectElement;
  private _root: HTMLElement;
  private _message: HTMLElement;
  private _list: HTMLElement;
  private _more: HTMLElement;
  private _timer = 0;
}

/** One line per MPI rank of a job into ``node``: its state, its part of the work (a bar where
 * the ranks share it), pid and why it ended; the last line it wrote as the tooltip. Lines
 * are redrawn in place (a poll a second). */
export function drawRanks(node: HTMLElement, ranks: IRankRow[]): void {
  while (node.children.length > ranks.length) {
    node.lastElementChild?.remove();
  }
  ranks.forEach((r, i) => {
    let line = node.children[i] as HTMLElement | undefined;
    if (!line) {
      line = el('div', 'skiff-RankRow');
      const bar = el('span', 'skiff-RankRow-bar');
      bar.appendChild(el('span', 'skiff-RankRow-fill'));
      line.append(el('span', 'skiff-RankRow-text'), bar);
      node.appendChild(line);
    }
    line.dataset.rank = String(r.rank);
    line.dataset.status = r.status;
    const part = r.done !== null && r.total !== null ? ` · ${figure(r.done)}/${figure(r.total)}`
      : '';
    const ended = r.status === 'exited' || r.status === 'failed'
      ? ` (exit ${r.code})` : '';
    const why = r.detail ? `: ${r.detail}` : '';
    setText(line.children[0] as HTMLElement,
      `rank ${r.rank} ${r.status}${ended}${part}${r.pid ? ` · pid ${r.pid}` : ''}` +
      `${r.host ? ` on ${r.host}` : ''}${why}`);
    const bar = line.children[1] as HTMLElement;
    bar.style.display = r.fraction === null ? 'none' : '';
    (bar.firstElementChild as HTMLElement).style.width =
      `${(100 * (r.fraction ?? 0)).toFixed(1)}%`;
    line.title = r.line || '';
  });
}
