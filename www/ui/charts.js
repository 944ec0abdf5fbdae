// charts.js — streaming uPlot charts: the loss (train every step, validation now and then)
// and each tensor's update/weight ratio. Long runs are thinned in place so drawing stays cheap.

import uPlot from '../uplot.js';

const MAX_POINTS = 3000;

/**
 * Tick labels that stay readable on a log axis: uPlot's default rounds 1e-4 to "0". Plain
 * numbers from 0.001 up, exponents (1e-4, 2.5e-6) below; trailing zeros dropped.
 */
export function tickLabel(v) {
  if (v == null || !Number.isFinite(v)) return '';
  const a = Math.abs(v);
  if (a === 0) return '0';
  if (a < 1e-3 || a >= 1e5) return v.toExponential(a.toExponential(1).includes('.0e') ? 0 : 1).replace('e+', 'e');
  return String(Number(v.toPrecision(3)));
}
const ticks = (u, splits) => splits.map(tickLabel);

function palette(i, n) {
  return `hsl(${Math.round((i * 360) / Math.max(n, 1) + 200) % 360} 70% 45%)`;
}

/** Halves every column: the x of each pair's last point, the mean of its numbers (nulls skipped). */
function thin(cols) {
  return cols.map((col, c) => {
    const out = [];
    for (let i = 0; i < col.length; i += 2) {
      const a = col[i];
      const b = i + 1 < col.length ? col[i + 1] : null;
      if (c === 0) out.push(b ?? a);
      else if (a == null) out.push(b);
      else if (b == null) out.push(a);
      else out.push((a + b) / 2);
    }
    return out;
  });
}

/** Keeps a uPlot sized to its container. */
function autosize(el, get) {
  const ro = new ResizeObserver(() => {
    const u = get();
    if (u) u.setSize(size(el, u.height));
  });
  ro.observe(el);
  return ro;
}

function size(el, height) {
  return { width: Math.max(200, el.clientWidth - 4), height };
}

export class LossChart {
  constructor(el) {
    this.el = el;
    this.log = true;
    this.label = 'loss';
    this.cols = [[], [], []]; // step, train, validation
    this.pendingVal = [];
    this.charted = { steps: 0, since: null }; // every step pushed once, which thinning keeps
    this.u = null;
    this.dirty = false;
    autosize(el, () => this.u);
    this.build();
  }

  build() {
    this.u?.destroy();
    const opts = {
      ...size(this.el, 260),
      scales: { x: { time: false }, y: { distr: this.log ? 3 : 1 } },
      axes: [{ label: 'step' }, { label: this.label, size: 60, values: ticks }],
      series: [
        { label: 'step' },
        { label: 'train', stroke: '#3b6fd4', width: 1, points: { show: false } },
        { label: 'validation', stroke: '#e0701b', width: 2, spanGaps: true, points: { show: true, size: 5 } },
      ],
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
    };
    this.u = new uPlot(opts, this.cols, this.el);
  }

  setLog(log) {
    this.log = log;
    this.build();
  }

  setLabel(label) {
    if (label === this.label) return;
    this.label = label;
    this.build();
  }

  reset() {
    this.cols = [[], [], []];
    this.pendingVal = [];
    this.charted = { steps: 0, since: null };
    this.u.setData(this.cols);
  }

  /** points: [{step, loss}] in step order. */
  push(points) {
    const [x, tr, va] = this.cols;
    for (const p of points) {
      if (x.length && p.step <= x[x.length - 1]) continue;
      x.push(p.step);
      this.charted.steps++;
      this.charted.since ??= p.step;
      tr.push(Number.isFinite(p.loss) && p.loss > 0 ? p.loss : null);
      va.push(null);
    }
    this.applyPending();
    if (x.length > MAX_POINTS) this.cols = thin(this.cols);
    this.dirty = true;
  }

  /** A validation loss measured after `step`. */
  validation(step, loss) {
    this.pendingVal.push({ step, loss });
    this.applyPending();
    this.dirty = true;
  }

  applyPending() {
    const [x, , va] = this.cols;
    if (!x.length) return;
    const last = x[x.length - 1];
    this.pendingVal = this.pendingVal.filter(({ step, loss }) => {
      if (step > last) return true;
      // The latest kept point at or before `step`.
      let i = x.length - 1;
      while (i > 0 && x[i] > step) i--;
      va[i] = Number.isFinite(loss) && loss > 0 ? loss : null;
      return false;
    });
  }

  draw() {
    if (!this.dirty) return;
    this.dirty = false;
    this.u.setData(this.cols);
  }

  /**
   * For tests and the status line: how many points and the train loss at the start and end;
   * `steps` charted since step `since` (a thinned chart has fewer points than steps).
   */
  summary() {
    const tr = this.cols[1].filter((v) => v != null);
    const va = this.cols[2].filter((v) => v != null);
    const x = this.cols[0];
    return { points: x.length, firstStep: x[0] ?? null, lastStep: x[x.length - 1] ?? null, first: tr[0] ?? null, last: tr[tr.length - 1] ?? null, validation: va.length, lastValidation: va[va.length - 1] ?? null, ...this.charted };
  }
}

/** One line per named series over steps, on a log scale (update ratios, per-layer RMS). */
export class RatioChart {
  constructor(el, label = 'update / weight') {
    this.el = el;
    this.label = label;
    this.names = [];
    this.cols = [[]];
    this.u = null;
    this.dirty = false;
    autosize(el, () => this.u);
  }

  reset() {
    this.names = [];
    this.cols = [[]];
    this.u?.destroy();
    this.u = null;
  }

  build() {
    this.u?.destroy();
    const n = this.names.length;
    const opts = {
      ...size(this.el, 240),
      scales: { x: { time: false }, y: { distr: 3 } },
      axes: [{ label: 'step' }, { label: this.label, size: 60, values: ticks }],
      series: [{ label: 'step' }, ...this.names.map((name, i) => ({ label: name, stroke: palette(i, n), width: 1.5, spanGaps: true, points: { show: false } }))],
      legend: { live: false },
    };
    this.u = new uPlot(opts, this.cols, this.el);
  }

  /** ratios: [{name, ratio}] measured after `step` (`ratio`: the series' value). */
  push(step, ratios) {
    const names = ratios.map((r) => r.name);
    if (names.join('\n') !== this.names.join('\n')) {
      this.names = names;
      this.cols = [[], ...names.map(() => [])];
      this.build();
    }
    const x = this.cols[0];
    if (x.length && step <= x[x.length - 1]) return;
    x.push(step);
    ratios.forEach((r, i) => this.cols[i + 1].push(Number.isFinite(r.ratio) && r.ratio > 0 ? r.ratio : null));
    if (x.length > MAX_POINTS) this.cols = thin(this.cols);
    this.dirty = true;
  }

  draw() {
    if (!this.dirty || !this.u) return;
    this.dirty = false;
    this.u.setData(this.cols);
  }
}
