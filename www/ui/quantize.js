// quantize.js — the Quantize card: quantize the trained weights to 8 or 4 bits (MLX's layout,
// done by the worker through run.quantize), then compare: validation loss and accuracy and
// bytes before and after, each tensor's relative error (or why it stays in f32), and the
// quantized model's decision boundary (or greedy text) beside the full-precision one. The copy
// downloads as an MLX safetensors file, and such a file loads back as a new run.

import { PointsPlot } from './points.js';
import { ToWorker } from './protocol.js';

const $ = (id) => document.getElementById(id);
const pct = (a) => (a == null ? '' : ` · accuracy ${(a * 100).toFixed(1)}%`);
const kb = (b) => (b >= 1024 ? `${(b / 1024).toFixed(1)} KB` : `${b} B`);

export class QuantizePanel {
  constructor({ send, plot }) {
    this.send = send;
    this.plot = plot; // the data plot, whose points the two boundaries share
    this.full = new PointsPlot($('q-full'));
    this.quant = new PointsPlot($('q-quant'));
    this.report = null;
    $('q-run').onclick = () => {
      $('q-run').disabled = true;
      $('q-summary').textContent = 'Quantizing…';
      send({ type: ToWorker.quantize, options: { bits: Number($('q-bits').value), groupSize: Number($('q-group').value) } });
    };
    $('q-download').onclick = () => send({ type: ToWorker.saveQuantized });
    $('q-load').onchange = async (e) => {
      const file = e.target.files?.[0];
      e.target.value = '';
      if (!file) return;
      const bytes = new Uint8Array(await file.arrayBuffer());
      $('q-summary').textContent = `Loading ${file.name}…`;
      send({ type: ToWorker.loadQuantized, bytes }, [bytes.buffer]);
    };
  }

  /** A new run: no copy yet. */
  reset(llama, origin) {
    this.report = null;
    this.shown = null;
    this.llama = llama;
    $('q-run').disabled = false;
    $('q-download').disabled = origin !== 'quantized';
    $('q-results').hidden = true;
    $('q-summary').textContent = origin === 'quantized'
      ? 'This run was loaded from a quantized file: its weights are the dequantized ones (they train on in f32).'
      : 'Quantize the weights as they are now; the run itself keeps its f32 weights and goes on training.';
  }

  /** Says why quantizing failed and lets the user try again. */
  failed(message) {
    $('q-run').disabled = false;
    $('q-summary').textContent = message;
  }

  /** The worker's answer: {report, grids?, samples?}. */
  show({ report, grids, samples }) {
    this.report = report;
    this.shown = grids ? 'boundaries' : samples ? 'samples' : 'numbers';
    $('q-run').disabled = false;
    $('q-download').disabled = false;
    $('q-results').hidden = false;
    const { full, quantized } = report;
    const some = report.tensors.some((t) => t.quantized);
    $('q-summary').textContent = some
      ? `${report.bits}-bit, groups of ${report.groupSize}, step ${report.step}: validation loss ${full.loss.toFixed(4)}${pct(full.accuracy)} → ${quantized.loss.toFixed(4)}${pct(quantized.accuracy)}; weights ${kb(report.bytesBefore)} → ${kb(report.bytesAfter)}`
      : `Nothing to quantize at groups of ${report.groupSize}: no weight matrix has rows that split into whole groups (see below), so the copy is the f32 model. Wider layers, or a smaller group, quantize.`;
    this.table(report.tensors);
    $('q-plots').hidden = !grids;
    $('q-samples').hidden = !samples;
    if (grids) {
      for (const [plot, grid] of [[this.full, grids.full], [this.quant, grids.quantized]]) {
        const p = this.plot;
        plot.setPoints(p.points?.xs ?? [], p.points?.ys ?? [], p.points?.labels ?? null, { regression: p.regression, classes: p.classes, held: p.held });
        plot.extent = p.extent;
        plot.setGrid(grid);
      }
    }
    if (samples) {
      $('q-sample-full').textContent = samples.prompt + samples.full;
      $('q-sample-quant').textContent = samples.prompt + samples.quantized;
    }
  }

  table(tensors) {
    $('q-table').querySelector('tbody').replaceChildren(...tensors.map((t) => {
      const tr = document.createElement('tr');
      const cells = t.quantized
        ? [t.name, t.shape.join('×'), t.relativeError.toExponential(2), `${kb(t.bytesBefore)} → ${kb(t.bytesAfter)}`]
        : [t.name, t.shape.join('×'), `kept in f32: ${t.keptBecause}`, kb(t.bytesBefore)];
      for (const c of cells) {
        const td = document.createElement('td');
        td.textContent = c;
        tr.append(td);
      }
      return tr;
    }));
  }

  summary() {
    return this.report ? { bits: this.report.bits, groupSize: this.report.groupSize, quantized: this.report.tensors.filter((t) => t.quantized).length, full: this.report.full, copy: this.report.quantized, shown: this.shown } : null;
  }
}
