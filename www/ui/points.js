// points.js — the data plot: a 2-D scatter with the model's decision boundary underneath, or a
// 1-D regression (targets and the model's curve). Clicking adds the user's own points.

import { tickLabel } from './charts.js';

export const CLASS_COLORS = ['#2f6fd0', '#e8731a', '#2ca25f', '#8e44ad', '#d62728', '#17becf', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22'];

function rgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}
const CLASS_RGB = CLASS_COLORS.map(rgb);

/** [lo, hi] of the values with `pad` of their span (at least 0.1) beyond each end; null if none. */
function fittedRange(values, pad) {
  let [lo, hi] = [Infinity, -Infinity];
  for (const v of values) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  if (!Number.isFinite(lo)) return null;
  const margin = Math.max((hi - lo) * pad, 0.1);
  return [lo - margin, hi + margin];
}

/** The half-width of a view centred on the origin: 1.1 × the largest |value|, at least 1.1. */
function centredHalfWidth(values) {
  let e = 1.1;
  for (const v of values) e = Math.max(e, Math.abs(v) * 1.1);
  return e;
}

/**
 * The view [xmin, xmax, ymin, ymax] around the points, which predictGrid then covers. Data
 * around the origin (every preset) gets a view centred on it — a square for 2-D points; data
 * off to one side, where that view would be over twice the size the points need (a CSV with x
 * in [2, 4], say), gets a view fitted to it, each axis on its own. A regression fits y to the
 * targets.
 */
export function extentOf(xs, ys, regression) {
  const span = (r) => r[1] - r[0];
  if (regression) {
    const e = centredHalfWidth(xs);
    const fx = fittedRange(xs, 0.1);
    const [x0, x1] = fx && 2 * e > 2 * span(fx) ? fx : [-e, e];
    return [x0, x1, ...(fittedRange(ys, 0.12) ?? [-1, 1])];
  }
  const e = Math.max(centredHalfWidth(xs), centredHalfWidth(ys));
  const [fx, fy] = [fittedRange(xs, 0.1), fittedRange(ys, 0.1)];
  if (fx && (2 * e) ** 2 > 2 * span(fx) * span(fy)) return [...fx, ...fy];
  return [-e, e, -e, e];
}

/** About `count` round values in [lo, hi]: multiples of 1, 2 or 5 × 10^k. */
export function niceTicks(lo, hi, count = 5) {
  const raw = (hi - lo) / count;
  if (!(raw > 0) || !Number.isFinite(raw)) return [];
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw * (1 - 1e-9));
  const ticks = [];
  for (let i = Math.ceil(lo / step); i * step <= hi; i++) ticks.push(Number((i * step).toPrecision(12)));
  return ticks;
}

export class PointsPlot {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d');
    this.points = null; // {xs, ys, labels|null}
    this.regression = false;
    this.classes = 2;
    this.extent = [-1.1, 1.1, -1.1, 1.1];
    this.grid = null; // {size, values}
    this.onClick = null;
    canvas.addEventListener('click', (e) => {
      if (!this.onClick) return;
      const r = canvas.getBoundingClientRect();
      const [x0, x1, y0, y1] = this.extent;
      const x = x0 + ((e.clientX - r.left) / r.width) * (x1 - x0);
      const y = y1 - ((e.clientY - r.top) / r.height) * (y1 - y0);
      this.onClick(x, y);
    });
  }

  /**
   * Sets the points to draw: xs, ys (targets for regression), labels (null for regression);
   * `held` is an optional second set (the validation split), drawn as rings.
   */
  setPoints(xs, ys, labels, { regression, classes, keepExtent = false, held = null }) {
    this.points = { xs, ys, labels };
    this.held = held;
    this.regression = regression;
    this.classes = classes;
    if (!keepExtent) {
      // The view covers the held-out points too.
      const withHeld = (a, b) => (b ? [...a, ...b] : a);
      this.extent = extentOf(withHeld(xs, held?.xs), withHeld(ys, held?.ys), regression);
      this.grid = null;
    }
    this.draw();
  }

  clearGrid() {
    this.grid = null;
    this.draw();
  }

  /** The grid that predictGrid should evaluate: `size` cells a side over the view. */
  gridRequest(size) {
    return { size, extent: this.extent };
  }

  setGrid(grid) {
    this.grid = grid;
    this.draw();
  }

  toPx(x, y) {
    const [x0, x1, y0, y1] = this.extent;
    const { width: w, height: h } = this.canvas;
    return [((x - x0) / (x1 - x0)) * w, ((y1 - y) / (y1 - y0)) * h];
  }

  draw() {
    const { ctx, canvas } = this;
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    if (this.grid && !this.regression) this.drawBoundary();
    this.drawAxes();
    if (this.grid && this.regression) this.drawCurve();
    this.drawPoints();
  }

  drawAxes() {
    const { ctx } = this;
    ctx.strokeStyle = '#0002';
    ctx.lineWidth = 1;
    const [ox, oy] = this.toPx(0, 0);
    ctx.beginPath();
    ctx.moveTo(0, oy); ctx.lineTo(this.canvas.width, oy);
    ctx.moveTo(ox, 0); ctx.lineTo(ox, this.canvas.height);
    ctx.stroke();
    this.drawTicks();
  }

  /** Coordinates along the bottom (x) and left (y) edges, haloed so they read over the shading. */
  drawTicks() {
    const { ctx } = this;
    const { width: w, height: h } = this.canvas;
    const [x0, x1, y0, y1] = this.extent;
    ctx.font = '12px system-ui, sans-serif';
    ctx.lineWidth = 3;
    ctx.strokeStyle = '#fffc';
    ctx.fillStyle = '#000a';
    const label = (text, x, y) => { ctx.strokeText(text, x, y); ctx.fillText(text, x, y); };
    ctx.textAlign = 'center';
    ctx.textBaseline = 'bottom';
    for (const v of niceTicks(x0, x1)) {
      const [px] = this.toPx(v, 0);
      if (px > 24 && px < w - 14) { ctx.fillRect(px - 0.5, h - 5, 1, 5); label(tickLabel(v), px, h - 6); }
    }
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    for (const v of niceTicks(y0, y1)) {
      const [, py] = this.toPx(0, v);
      if (py > 10 && py < h - 24) { ctx.fillRect(0, py - 0.5, 5, 1); label(tickLabel(v), 7, py); }
    }
  }

  /**
   * Colours each grid cell by its most likely class, stronger the surer the model is: the grid
   * holds every class's probability per cell ((size, size, classes) from predictGrid).
   */
  drawBoundary() {
    const { size, values } = this.grid;
    const k = this.grid.classes ?? values.length / (size * size);
    const img = new ImageData(size, size);
    const clamp = (v) => Math.max(0, Math.min(1, v));
    for (let cell = 0; cell < size * size; cell++) {
      let best = 0;
      for (let c = 1; c < k; c++) if (values[cell * k + c] > values[cell * k + best]) best = c;
      // Confidence from chance (1/k) to certain (1) sets the strength.
      const a = clamp((values[cell * k + best] - 1 / k) / (1 - 1 / k)) * 0.55 + 0.1;
      const c = CLASS_RGB[best % CLASS_RGB.length];
      // predictGrid's first row is the top of its box: the image's top row.
      const o = cell * 4;
      img.data[o] = Math.round(255 + (c[0] - 255) * a);
      img.data[o + 1] = Math.round(255 + (c[1] - 255) * a);
      img.data[o + 2] = Math.round(255 + (c[2] - 255) * a);
      img.data[o + 3] = 255;
    }
    const tmp = new OffscreenCanvas(size, size);
    tmp.getContext('2d').putImageData(img, 0, 0);
    this.ctx.imageSmoothingEnabled = true;
    this.ctx.drawImage(tmp, 0, 0, this.canvas.width, this.canvas.height);
  }

  drawCurve() {
    const { size, values, extent: [x0, x1] } = this.grid;
    const { ctx } = this;
    ctx.strokeStyle = '#d62728';
    ctx.lineWidth = 2.5;
    ctx.beginPath();
    for (let i = 0; i < values.length; i++) {
      // predictGrid's curve samples x from xmin to xmax, both ends included.
      const x = x0 + (i * (x1 - x0)) / Math.max(1, size - 1);
      const [px, py] = this.toPx(x, values[i]);
      if (i === 0) ctx.moveTo(px, py);
      else ctx.lineTo(px, py);
    }
    ctx.stroke();
  }

  drawPoints() {
    if (!this.points) return;
    const { xs, ys, labels } = this.points;
    const { ctx } = this;
    const n = xs.length;
    const r = n > 3000 ? 1.6 : n > 600 ? 2.4 : 3.5;
    if (this.held) {
      const h = this.held;
      ctx.lineWidth = 1.2;
      for (let i = 0; i < h.xs.length; i++) {
        const [px, py] = this.toPx(h.xs[i], h.ys[i]);
        ctx.strokeStyle = h.labels ? CLASS_COLORS[h.labels[i] % CLASS_COLORS.length] : '#777';
        ctx.beginPath();
        ctx.arc(px, py, r, 0, Math.PI * 2);
        ctx.stroke();
      }
    }
    ctx.lineWidth = 0.8;
    ctx.strokeStyle = '#fff';
    for (let i = 0; i < n; i++) {
      const [px, py] = this.toPx(xs[i], ys[i]);
      ctx.fillStyle = labels ? CLASS_COLORS[labels[i] % CLASS_COLORS.length] : '#333';
      ctx.beginPath();
      ctx.arc(px, py, r, 0, Math.PI * 2);
      ctx.fill();
      if (n <= 3000) ctx.stroke();
    }
  }
}

/** Splits a dataset split ({inputs, labels|targets, inputDim}) into plot columns. */
export function plotColumns(split, regression) {
  if (!split?.inputs) return null;
  const d = split.inputDim ?? (regression ? 1 : 2);
  const n = Math.floor(split.inputs.length / d);
  const xs = new Float32Array(n), ys = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    xs[i] = split.inputs[i * d];
    ys[i] = regression ? split.targets[i] : split.inputs[i * d + 1];
  }
  return { xs, ys, labels: regression ? null : split.labels };
}

/** The data card's title and hint (`ui.dataTitle`, `ui.dataHint`) for a run on points. */
export function dataCardText(regression, classes, splits, scaling) {
  const scaled = scalingNote(scaling, regression);
  if (regression) return { dataTitle: 'Data & fitted curve', dataHint: `dots: training points · rings: validation · line: the model${scaled}` };
  const hint = `filled: training points · rings: validation · shading: the most likely of ${classes} classes, stronger where the model is surer`;
  return { dataTitle: 'Data & decision boundary', dataHint: hint + emptyClassesNote(classes, splits) + scaled };
}

/** What a standardizing run feeds its network (RunInfo.inputScaling), or '' for a run without. */
function scalingNote(scaling, regression) {
  if (!scaling) return '';
  const n = (v) => Number(v.toPrecision(3));
  const names = regression ? ['x'] : ['x', 'y'];
  const shifted = (a, m) => (m < 0 ? `${a} + ${-m}` : `${a} − ${m}`);
  const parts = names.map((a, i) => `${a}′ = (${shifted(a, n(scaling.mean[i]))}) / ${n(scaling.std[i])}`);
  return ` · standardized inputs: the network sees ${parts.join(', ')}`;
}

/**
 * A note for classes no point has (labels {0, 7} make 8 classes, 1–6 empty), or '' when every
 * class below the highest label has points. `splits`: the dataset's splits ({labels}).
 */
function emptyClassesNote(classes, splits) {
  const seen = new Set(splits.flatMap((s) => Array.from(s?.labels ?? [])));
  if (seen.size === 0) return ''; // no points to judge by
  const empty = Array.from({ length: classes }, (_, c) => c).filter((c) => !seen.has(c));
  if (empty.length === 0) return '';
  return ` · class${empty.length > 1 ? 'es' : ''} ${empty.join(', ')} ha${empty.length > 1 ? 've' : 's'} no points: labels run 0..${classes - 1}, so the model has ${classes} outputs`;
}
