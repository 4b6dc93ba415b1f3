// The "skiff jobs" sidebar: every job of the run folders, newest first, live while the
// panel is visible (one request a second), with Open, Cancel (a job that runs) and Remove
// (a job that ended). It reads the server, never a kernel.
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { ApiError, IJobRow, cancelJob, listJobs, removeJob } from './api';
import { el, setText, startTime } from './format';

export const POLL_MS = 1000;

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
    this._message = el('div', 'skiff-JobsPanel-message');
    this._list = el('div', 'skiff-JobsPanel-list');
    this._more = el('div', 'skiff-JobsPanel-more');
    for (const node of [head, this._root, this._message, this._list, this._more]) {
      this.node.appendChild(node);
    }
    this._schedule(0);
  }

  /** Read the job list now and redraw. */
  async refresh(): Promise<void> {
    try {
      const data = await listJobs();
      this._draw(data.jobs);
      setText(this._root, `run folders: ${data.root}`);
      this._root.title = data.root;
      setText(this._more, data.hidden ? `${data.hidden} older jobs not shown` : '');
      setText(this._message, data.jobs.length ? '' : 'No jobs yet. Start one with %train, ' +
        '%solve, %ocr in a notebook, or python -m skiff in a terminal.');
      this.node.dataset.ready = 'true';
    } catch (error) {
      setText(this._message, `cannot read the jobs: ${(error as Error).message}`);
    }
  }

  dispose(): void {
    window.clearTimeout(this._timer);
    super.dispose();
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
    row.append(top, bar, label, command, error, buttons);
    row.ondblclick = () => this.openJob(id);
    return { row, kind, name, status, bar, fill, label, started, command, error, cancel, remove };
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
  private _root: HTMLElement;
  private _message: HTMLElement;
  private _list: HTMLElement;
  private _more: HTMLElement;
  private _timer = 0;
}
