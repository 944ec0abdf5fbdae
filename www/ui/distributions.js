// distributions.js — how one parameter tensor's weights, gradients and AdamW updates are spread,
// over training steps: quantile bands (TensorBoard-style; the darkest band holds the middle
// 38%, the lightest everything) with the median as a line, and the latest histogram along the
// right edge. Computed on the GPU (run.inspect); a tensor whose values turn NaN or Inf says so.
// Also the per-layer RMS of activations and gradients as two line charts.

import { RatioChart } from './charts.js';

/** Samples kept per tensor; older ones are thinned (every other dropped) past this. */
const MAX_SAMPLES = 400;
const SOURCES = [['weights', 'weights'], ['grads', 'gradients'], ['updates', 'updates (Δw per step)']];
const BAND_ALPHA = [0.15, 0.25, 0.4, 0.6]; // quantile pairs (0,8) (1,7) (2,6) (3,5)

export class Distributions {
  constructor({ select, canvases, notes, activations, gradients }) {
    this.select = select;
    this.canvases = canvases;
    this.notes = notes;
    this.activations = new RatioChart(activations, 'activation RMS');
    this.gradients = new RatioChart(gradients, 'gradient RMS');
    this.history = new Map(); // tensor name → [{step, weights, grads, updates}]
    this.dirty = false;
    this.samples = 0;
    select.addEventListener('change', () => { this.dirty = true; });
  }

  reset() {
    this.history.clear();
    this.activations.reset();
    this.gradients.reset();
    this.samples = 0;
    this.dirty = true;
  }

  /** An Inspection from the worker. */
  push(inspection) {
    const names = inspection.tensors.map((t) => t.name).join('\n');
    if ([...this.select.options].map((o) => o.value).join('\n') !== names) {
      // Another model: keep the tensor chosen before where the new one has it.
      const chosen = this.select.value;
      this.select.replaceChildren(...inspection.tensors.map((t) => new Option(t.name, t.name)));
      if (inspection.tensors.some((t) => t.name === chosen)) this.select.value = chosen;
    }
    for (const t of inspection.tensors) {
      let h = this.history.get(t.name);
      if (!h) this.history.set(t.name, (h = []));
      if (h.length && inspection.step <= h[h.length - 1].step) continue;
      h.push({ step: inspection.step, weights: t.weights, grads: t.grads, updates: t.updates });
      if (h.length > MAX_SAMPLES) this.history.set(t.name, h.filter((_, i) => i % 2 === 1 || i === h.length - 1));
    }
    const kept = inspection.layers.filter((l) => l.activation);
    if (kept.length) this.activations.push(inspection.step, kept.map((l) => ({ name: l.name, ratio: l.activation.rms })));
    this.gradients.push(inspection.step, inspection.layers.map((l) => ({ name: l.name, ratio: l.gradRms })));
    this.samples++;
    this.dirty = true;
  }

  draw() {
    this.activations.draw();
    this.gradients.draw();
    if (!this.dirty) return;
    this.dirty = false;
    const h = this.history.get(this.select.value) ?? [];
    SOURCES.forEach(([key, label], i) => {
      drawBands(this.canvases[i], h, key);
      const last = h[h.length - 1]?.[key];
      const bad = last?.nonFinite ? ` · ${last.nonFinite} NaN/Inf!` : '';
      this.notes[i].textContent = last ? `${label}: rms ${last.rms.toPrecision(3)}, ${last.min.toPrecision(3)} … ${last.max.toPrecision(3)}${bad}` : label;
      this.notes[i].classList.toggle('error', !!last?.nonFinite);
    });
  }

  summary() {
    const h = this.history.get(this.select.value) ?? [];
    const last = h[h.length - 1];
    const activations = { layers: this.activations.names, points: this.activations.cols[0].length };
    return { samples: this.samples, tensor: this.select.value, steps: h.map((s) => s.step), activations, last: last ? { weights: last.weights.quantiles, weightsRms: last.weights.rms, updates: last.updates.rms, grads: last.grads.rms } : null };
  }
}

/** Quantile bands of `key` over the samples, and the latest histogram on the right. */
function drawBands(canvas, samples, key) {
  const ctx = canvas.getContext('2d');
  const { width: w, height: hgt } = canvas;
  ctx.clearRect(0, 0, w, hgt);
  const rows = samples.map((s) => s[key]).filter((d) => d && Number.isFinite(d.min));
  if (!rows.length) return;
  let lo = Math.min(...rows.map((d) => d.min));
  let hi = Math.max(...rows.map((d) => d.max));
  if (hi === lo) [lo, hi] = [lo - 1e-12, hi + 1e-12];
  const plotW = w - 60; // the histogram's strip on the right
  const x = (i) => (rows.length === 1 ? plotW / 2 : (i / (rows.length - 1)) * plotW);
  const y = (v) => hgt - 12 - ((v - lo) / (hi - lo)) * (hgt - 24);
  for (let b = 0; b < 4; b++) {
    ctx.fillStyle = `rgba(217, 72, 15, ${BAND_ALPHA[b]})`;
    ctx.beginPath();
    rows.forEach((d, i) => (i ? ctx.lineTo(x(i), y(d.quantiles[8 - b])) : ctx.moveTo(x(i), y(d.quantiles[8 - b]))));
    for (let i = rows.length - 1; i >= 0; i--) ctx.lineTo(x(i), y(rows[i].quantiles[b]));
    ctx.closePath();
    ctx.fill();
  }
  ctx.strokeStyle = '#8a2a00';
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  rows.forEach((d, i) => (i ? ctx.lineTo(x(i), y(d.quantiles[4])) : ctx.moveTo(x(i), y(d.quantiles[4]))));
  ctx.stroke();
  const last = rows[rows.length - 1];
  const peak = Math.max(...last.counts, 1);
  const bw = (last.max - last.min) / last.counts.length;
  ctx.fillStyle = '#3b6fd4';
  last.counts.forEach((c, b) => {
    const top = y(last.min + (b + 1) * bw);
    const bottom = y(last.min + b * bw);
    ctx.fillRect(plotW + 8, top, (c / peak) * 50, Math.max(1, bottom - top));
  });
  ctx.fillStyle = '#6b6f76';
  ctx.font = '10px system-ui, sans-serif';
  ctx.textAlign = 'left';
  ctx.fillText(hi.toPrecision(3), 2, 10);
  ctx.fillText(lo.toPrecision(3), 2, hgt - 2);
  ctx.textAlign = 'right';
  ctx.fillText(`step ${samples[samples.length - 1].step}`, plotW, hgt - 2);
}
