// The live view of one job in a main-area tab: status, progress, the last value of every
// metric, a line chart (SVG) of the key metric, one line per MPI rank, the log's tail, the
// error, the result and the images of its run folder (loss.png, OCR overlays).
// It polls the server once a second until the job has ended, then once more, then stops.
import { Widget } from '@lumino/widgets';

import { ApiError, IJobDetail, IMetric, cancelJob, getImage, getJob } from './api';
import { duration, el, figure, setText, startTime } from './format';
import { drawRanks } from './sidebar';

const POLL_MS = 1000;
// the metrics a chart shows, first found (skiff.jobs.terminal.KEY_METRICS)
const KEY_METRICS = ['loss', 'residual', 'val_loss', 'value'];
const SVG = 'http://www.w3.org/2000/svg';

export class JobView extends Widget {
  constructor(readonly jobId: string) {
    super();
    this.id = `skiff-job-${jobId}`;
    this.addClass('skiff-JobView');
    this.node.dataset.jobId = jobId;
    this.title.label = jobId;
    this.title.caption = `skiff job ${jobId}`;
    this.title.closable = true;
    const head = el('div', 'skiff-JobView-header');
    this._heading = el('span', 'skiff-JobView-heading', jobId);
    this._status = el('span', 'skiff-JobView-status');
    this._cancel = el('button', 'skiff-JobView-cancel jp-Button', 'Cancel');
    this._cancel.onclick = () => void this._onCancel();
    head.append(this._heading, this._status, this._cancel);
    this._times = el('div', 'skiff-JobView-times');
    this._command = el('div', 'skiff-JobView-command');
    const bar = el('div', 'skiff-JobRow-bar skiff-JobView-bar');
    this._fill = el('div', 'skiff-JobRow-fill');
    bar.appendChild(this._fill);
    this._progress = el('div', 'skiff-JobView-progress');
    this._metrics = el('div', 'skiff-JobView-metrics');
    this._chart = el('div', 'skiff-JobView-chart');
    this._error = el('pre', 'skiff-JobView-error');
    this._result = el('pre', 'skiff-JobView-result');
    this._log = el('pre', 'skiff-JobView-log');
    this._note = el('div', 'skiff-JobView-note');
    this._ranks = el('div', 'skiff-JobView-ranks');
    this._images = el('div', 'skiff-JobView-images');
    this.node.append(head, this._times, this._command, bar, this._progress, this._metrics,
      this._chart, this._ranks, this._error, this._result, this._log, this._images,
      this._note);
    this._poll(0);
  }

  dispose(): void {
    window.clearTimeout(this._timer);
    for (const url of this._urls.values()) {
      URL.revokeObjectURL(url);
    }
    super.dispose();
  }

  protected onAfterShow(): void {
    if (!this._final) {
      this._poll(0);
    }
  }

  private _poll(delay: number): void {
    window.clearTimeout(this._timer);
    this._timer = window.setTimeout(async () => {
      if (this._drawn && !this.isVisible) {
        this._poll(POLL_MS); // a tab behind another costs the server nothing
        return;
      }
      let final = false;
      try {
        const detail = await getJob(this.jobId);
        this._draw(detail);
        this._drawn = true;
        final = this._final = detail.job.final;
      } catch (error) {
        const gone = error instanceof ApiError && error.status === 404;
        setText(this._note, gone ? `job ${this.jobId} is gone (its run folder was removed)`
          : `cannot read the job: ${(error as Error).message}`);
        final = gone;
      }
      if (!this.isDisposed && !final) {
        this._poll(POLL_MS);
      }
    }, delay);
  }

  private _draw(d: IJobDetail): void {
    const job = d.job;
    this.node.dataset.status = job.status;
    this.title.label = `${job.kind} ${job.name || job.id.split('-').pop()}`;
    setText(this._heading, `${job.kind} ${job.name ? job.name + ' ' : ''}${job.id}`);
    setText(this._status, job.status);
    this._status.className = `skiff-JobRow-status skiff-mod-${job.status}`;
    this._cancel.style.display = job.final ? 'none' : '';
    const started = job.started ?? job.created;
    const times = [started ? `started ${startTime(started)}` : '',
      job.elapsed !== null ? `elapsed ${duration(job.elapsed)}` : '',
      job.device ? `device ${job.device}` : '',
      job.np && job.np > 1 ? `${job.np} ranks` : ''].filter(x => x);
    setText(this._times, times.join(' · '));
    setText(this._command, job.command || '');
    const fraction = job.fraction ?? (job.status === 'done' ? 1 : 0);
    this._fill.style.width = `${(100 * fraction).toFixed(1)}%`;
    setText(this._progress, job.progress || d.message || '');
    const names = Object.keys(d.metrics);
    setText(this._metrics, names.map(n => `${n} ${figure(d.metrics[n].last)}`).join('  ·  '));
    this._drawChart(d.metrics);
    const error = [job.inferred || '', d.error || '', d.traceback || ''].filter(x => x);
    setText(this._error, error.join('\n\n'));
    this._error.style.display = error.length ? '' : 'none';
    setText(this._result, d.summary || '');
    this._result.style.display = d.summary ? '' : 'none';
    setText(this._log, d.log.map(l => (l.level === 'info' ? '' : `${l.level}: `) + l.message)
      .join('\n'));
    this._log.style.display = d.log.length ? '' : 'none';
    drawRanks(this._ranks, d.ranks || job.ranks || []);
    void this._drawImages(d.images, job.final);
  }

  /** The run folder's images, each fetched when it first appears and once more when the job
   * has ended (a training draws loss.png again at its end); one that cannot be read says
   * why in its caption. */
  private async _drawImages(names: string[], final: boolean): Promise<void> {
    const key = `${names.join('\n')}:${final}`;
    if (key === this._imagesKey) {
      return;
    }
    this._imagesKey = key;
    for (const figureNode of [...this._images.children] as HTMLElement[]) {
      if (!names.includes(figureNode.dataset.name || '')) {
        figureNode.remove();
      }
    }
    for (const name of names) {
      let box = [...this._images.children].find(
        c => (c as HTMLElement).dataset.name === name) as HTMLElement | undefined;
      if (!box) {
        box = el('figure', 'skiff-JobView-image');
        box.dataset.name = name;
        const img = el('img', 'skiff-JobView-img');
        img.alt = name;
        box.append(img, el('figcaption', 'skiff-JobView-caption', name));
        this._images.appendChild(box);
      } else if (!final) {
        continue; // shown already; fetched again once the job has ended
      }
      try {
        const blob = await getImage(this.jobId, name);
        const url = URL.createObjectURL(blob);
        const old = this._urls.get(name);
        this._urls.set(name, url);
        (box.firstElementChild as HTMLImageElement).src = url;
        if (old) {
          URL.revokeObjectURL(old);
        }
        setText(box.lastElementChild as HTMLElement, name);
      } catch (error) {
        setText(box.lastElementChild as HTMLElement,
          `${name}: cannot show it (${(error as Error).message})`);
      }
    }
  }

  private _drawChart(metrics: { [name: string]: IMetric }): void {
    const name = KEY_METRICS.find(n => metrics[n] && metrics[n].points.length > 1) ||
      Object.keys(metrics).find(n => metrics[n].points.length > 1);
    if (!name) {
      this._chart.style.display = 'none';
      return;
    }
    const series = metrics[name];
    const key = `${name}:${series.count}`;
    if (key === this._chartKey) {
      return;
    }
    this._chartKey = key;
    this._chart.style.display = '';
    this._chart.replaceChildren(lineChart(name, series.points));
  }

  private async _onCancel(): Promise<void> {
    this._cancel.disabled = true;
    try {
      await cancelJob(this.jobId);
    } catch (error) {
      setText(this._note, `cannot cancel: ${(error as Error).message}`);
    } finally {
      this._cancel.disabled = false;
    }
  }

  private _heading: HTMLElement;
  private _status: HTMLElement;
  private _cancel: HTMLButtonElement;
  private _times: HTMLElement;
  private _command: HTMLElement;
  private _fill: HTMLElement;
  private _progress: HTMLElement;
  private _metrics: HTMLElement;
  private _chart: HTMLElement;
  private _error: HTMLElement;
  private _result: HTMLElement;
  private _log: HTMLElement;
  private _note: HTMLElement;
  private _ranks: HTMLElement;
  private _images: HTMLElement;
  private _imagesKey = '';
  private _urls = new Map<string, string>();
  private _timer = 0;
  private _chartKey = '';
  private _drawn = false;
  private _final = false;
}

/** An SVG line chart of [step, value] points; a log scale when the name says residual or
 * error, or the positive values span three decades (as skiff's own charts). */
export function lineChart(name: string, raw: [number, number | string][]): SVGSVGElement {
  const width = 480;
  const height = 200;
  const pad = { left: 56, right: 12, top: 20, bottom: 24 };
  const points = raw.filter(p => typeof p[1] === 'number' && isFinite(p[1] as number)) as
    [number, number][];
  const values = points.map(p => p[1]);
  const positive = values.filter(v => v > 0);
  const spread = positive.length === values.length && positive.length > 0 &&
    Math.max(...positive) / Math.min(...positive) >= 1000;
  const log = positive.length === values.length && (/residual|error/.test(name) || spread);
  const y = (v: number) => (log ? Math.log10(v) : v);
  const xs = points.map(p => p[0]);
  const ys = points.map(p => y(p[1]));
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (y0 === y1) {
    y0 -= 1;
    y1 += 1;
  }
  const sx = (x: number) => pad.left + ((x - x0) / (x1 - x0 || 1)) * (width - pad.left - pad.right);
  const sy = (v: number) => pad.top + (1 - (v - y0) / (y1 - y0)) * (height - pad.top - pad.bottom);
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('width', String(width));
  svg.setAttribute('height', String(height));
  svg.classList.add('skiff-Chart');
  svg.dataset.metric = name;
  svg.dataset.points = String(points.length);
  const add = (tag: string, attrs: { [k: string]: string }, text?: string) => {
    const node = document.createElementNS(SVG, tag);
    for (const k of Object.keys(attrs)) {
      node.setAttribute(k, attrs[k]);
    }
    if (text !== undefined) {
      node.textContent = text;
    }
    svg.appendChild(node);
    return node;
  };
  add('rect', { x: String(pad.left), y: String(pad.top), width: String(width - pad.left - pad.right),
    height: String(height - pad.top - pad.bottom), class: 'skiff-Chart-frame' });
  const label = (v: number) => figure(log ? Math.pow(10, v) : v);
  for (const v of [y0, (y0 + y1) / 2, y1]) {
    add('text', { x: String(pad.left - 4), y: String(sy(v) + 4), 'text-anchor': 'end',
      class: 'skiff-Chart-tick' }, label(v));
  }
  add('text', { x: String(pad.left), y: String(height - 6), class: 'skiff-Chart-tick' },
    figure(x0));
  add('text', { x: String(width - pad.right), y: String(height - 6), 'text-anchor': 'end',
    class: 'skiff-Chart-tick' }, figure(x1));
  add('text', { x: String(pad.left), y: '14', class: 'skiff-Chart-title' },
    `${name}${log ? ' (log scale)' : ''}`);
  const path = points.map((p, i) => `${i ? 'L' : 'M'}${sx(p[0]).toFixed(1)},${sy(y(p[1])).toFixed(1)}`);
  add('path', { d: path.join(''), class: 'skiff-Chart-line' });
  return svg;
}
