// Small text helpers shared by the sidebar and the job view. Everything from the server is
// set as text (textContent), never as HTML.

/** A job's start as local time: 14:05:09 today, Nov 30 14:05 before. */
export function startTime(seconds: number | null): string {
  if (seconds === null || seconds === undefined) {
    return '';
  }
  const then = new Date(seconds * 1000);
  const now = new Date();
  const pad = (n: number) => String(n).padStart(2, '0');
  const clock = `${pad(then.getHours())}:${pad(then.getMinutes())}`;
  if (then.toDateString() === now.toDateString()) {
    return `${clock}:${pad(then.getSeconds())}`;
  }
  const month = then.toLocaleString('en', { month: 'short' });
  return `${month} ${pad(then.getDate())} ${clock}`;
}

/** 42 s, 3 min 05 s, 1 h 02 min. */
export function duration(seconds: number | null): string {
  if (seconds === null || seconds === undefined) {
    return '';
  }
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) {
    return `${s} s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  }
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** A number as people read it: 4 significant figures, exponent when far from 1. */
export function figure(value: number | string): string {
  if (typeof value !== 'number') {
    return String(value);
  }
  if (value === 0) {
    return '0';
  }
  const a = Math.abs(value);
  if (a >= 1e5 || a < 1e-3) {
    return value.toExponential(2);
  }
  return String(Number(value.toPrecision(4)));
}

/** An element with a class and text. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** Set text only when it changed (no layout work for a row that did not move). */
export function setText(node: HTMLElement, text: string): void {
  if (node.textContent !== text) {
    node.textContent = text;
  }
}
