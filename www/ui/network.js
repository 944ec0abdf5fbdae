// network.js — the MLP drawn as a graph, TensorFlow-Playground style: every neuron a small
// picture of its output over the input plane (or, for a curve, its output along x), links
// coloured by the sign of their weight and drawn thicker and darker the larger it is. Click a
// neuron to see it large. The neuron outputs come from one GPU forward pass over the grid
// (run.neuronOutputs); the weights from the weight snapshot.

import { colorOf } from './heatmaps.js';

/** Neurons drawn per layer; wider layers show their first ones and say how many are left out. */
const MAX_SHOWN = 16;

export class NetworkView {
  constructor(canvas, big, caption) {
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d');
    this.big = big;
    this.caption = caption;
    this.neurons = null; // NeuronOutputs
    this.weights = null; // WeightTensor[]
    this.selected = { layer: 1, neuron: 0 };
    this.boxes = []; // [{x, y, size, layer, neuron}] where each neuron was drawn
    this.dirty = false;
    this.draws = 0;
    canvas.addEventListener('click', (e) => {
      const hit = this.hit(e);
      if (hit) {
        this.selected = { layer: hit.layer, neuron: hit.neuron };
        this.dirty = true;
      }
    });
    canvas.addEventListener('mousemove', (e) => {
      const hit = this.hit(e);
      canvas.title = hit ? `${this.neurons.layers[hit.layer].name} · neuron ${hit.neuron} (click to enlarge)` : '';
    });
  }

  reset() {
    this.neurons = this.weights = null;
    this.selected = { layer: 1, neuron: 0 };
    this.dirty = true;
  }

  setNeurons(neurons, curve) {
    this.neurons = neurons;
    this.curve = curve;
    this.dirty = true;
  }

  setWeights(weights) {
    this.weights = weights;
    this.dirty = true;
  }

  hit(e) {
    const r = this.canvas.getBoundingClientRect();
    const x = ((e.clientX - r.left) / r.width) * this.canvas.width;
    const y = ((e.clientY - r.top) / r.height) * this.canvas.height;
    return this.boxes.find((b) => x >= b.x && x <= b.x + b.size && y >= b.y && y <= b.y + b.size);
  }

  /** Where each layer's shown neurons go: one column per layer, boxes centred vertically. */
  layout() {
    const { width: w, height: h } = this.canvas;
    const layers = this.neurons.layers;
    const tallest = Math.max(...layers.map((l) => Math.min(l.neurons, MAX_SHOWN)));
    const size = Math.max(8, Math.min(40, Math.floor((h - 24) / tallest) - 4));
    const step = layers.length > 1 ? (w - 2 * 12 - size) / (layers.length - 1) : 0;
    return layers.map((l, c) => {
      const shown = Math.min(l.neurons, MAX_SHOWN);
      const top = (h - 14 - shown * (size + 4)) / 2;
      return Array.from({ length: shown }, (_, j) => ({ x: 12 + c * step, y: top + j * (size + 4), size, layer: c, neuron: j }));
    });
  }

  draw() {
    if (!this.dirty || !this.neurons) return;
    this.dirty = false;
    this.draws++;
    const { ctx } = this;
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    const columns = this.layout();
    this.drawLinks(columns);
    this.boxes = columns.flat();
    for (const b of this.boxes) this.drawNeuron(ctx, b.layer, b.neuron, b.x, b.y, b.size);
    ctx.fillStyle = '#6b6f76';
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'center';
    columns.forEach((col, c) => {
      const l = this.neurons.layers[c];
      const more = l.neurons > col.length ? ` (+${l.neurons - col.length})` : '';
      ctx.fillText(`${l.name}${more}`, col[0].x + col[0].size / 2, this.canvas.height - 3);
    });
    const sel = this.neurons.layers[this.selected.layer] ? this.selected : { layer: 0, neuron: 0 };
    const bctx = this.big.getContext('2d');
    bctx.clearRect(0, 0, this.big.width, this.big.height);
    this.drawNeuron(bctx, sel.layer, sel.neuron, 0, 0, this.big.width);
    this.caption.textContent = `${this.neurons.layers[sel.layer].name} · neuron ${sel.neuron} · ${this.range(sel.layer, sel.neuron)}`;
  }

  /** Links from each shown neuron to the next layer's, from `layer{l}.weight` (out, in). */
  drawLinks(columns) {
    const { ctx } = this;
    for (let c = 1; c < columns.length; c++) {
      const w = this.weights?.find((t) => t.name === `layer${c - 1}.weight`);
      if (!w) continue;
      const fanIn = w.shape[1];
      let scale = 0;
      for (const v of w.data) scale = Math.max(scale, Math.abs(v));
      for (const to of columns[c]) {
        for (const from of columns[c - 1]) {
          const v = w.data[to.neuron * fanIn + from.neuron];
          const t = scale > 0 ? Math.abs(v) / scale : 0;
          ctx.strokeStyle = v >= 0 ? `rgba(178, 24, 43, ${0.1 + 0.8 * t})` : `rgba(33, 102, 172, ${0.1 + 0.8 * t})`;
          ctx.lineWidth = 0.3 + 2.7 * t;
          ctx.beginPath();
          ctx.moveTo(from.x + from.size, from.y + from.size / 2);
          ctx.lineTo(to.x, to.y + to.size / 2);
          ctx.stroke();
        }
      }
    }
  }

  values(layer, neuron) {
    const l = this.neurons.layers[layer];
    const n = this.neurons.points;
    return l.values.slice(neuron * n, (neuron + 1) * n);
  }

  range(layer, neuron) {
    const v = this.values(layer, neuron);
    let lo = Infinity;
    let hi = -Infinity;
    for (const x of v) { lo = Math.min(lo, x); hi = Math.max(hi, x); }
    return `output ${lo.toPrecision(3)} … ${hi.toPrecision(3)}`;
  }

  /** One neuron: a heatmap of its output over the grid (blue − · white 0 · red +), or its curve. */
  drawNeuron(ctx, layer, neuron, x, y, size) {
    const v = this.values(layer, neuron);
    const probability = this.neurons.layers[layer].name === 'output' && !this.curve;
    let scale = 0;
    for (const a of v) if (Number.isFinite(a)) scale = Math.max(scale, Math.abs(a));
    if (this.curve) return drawCurve(ctx, v, scale, x, y, size);
    const side = this.neurons.size;
    const img = new ImageData(side, side);
    const px = new Uint32Array(img.data.buffer);
    // Probabilities: white at 0.5, red towards 1 (this class), blue towards 0.
    for (let i = 0; i < v.length; i++) px[i] = probability ? colorOf(2 * v[i] - 1, 1) : colorOf(v[i], scale);
    const tile = new OffscreenCanvas(side, side);
    tile.getContext('2d').putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(tile, x, y, size, size);
    ctx.strokeStyle = '#c7ccd3';
    ctx.lineWidth = 1;
    ctx.strokeRect(x + 0.5, y + 0.5, size - 1, size - 1);
  }

  summary() {
    if (!this.neurons) return null;
    const { width, height } = this.canvas;
    // Where each drawn neuron is, as fractions of the canvas: [layer, neuron, x, y] of its centre.
    const boxes = this.boxes.map((b) => [b.layer, b.neuron, (b.x + b.size / 2) / width, (b.y + b.size / 2) / height]);
    return { layers: this.neurons.layers.map((l) => l.neurons), points: this.neurons.points, draws: this.draws, selected: this.selected, boxes, caption: this.caption.textContent };
  }
}

/** A neuron's output along x as a line in a box scaled to ±max|v|. */
function drawCurve(ctx, v, scale, x, y, size) {
  ctx.fillStyle = '#fff';
  ctx.fillRect(x, y, size, size);
  ctx.strokeStyle = '#c7ccd3';
  ctx.lineWidth = 1;
  ctx.strokeRect(x + 0.5, y + 0.5, size - 1, size - 1);
  ctx.beginPath();
  ctx.moveTo(x, y + size / 2);
  ctx.lineTo(x + size, y + size / 2);
  ctx.stroke();
  ctx.strokeStyle = '#d9480f';
  ctx.lineWidth = size > 80 ? 2 : 1;
  ctx.beginPath();
  v.forEach((a, i) => {
    const px = x + (i / Math.max(1, v.length - 1)) * size;
    const py = y + size / 2 - (scale > 0 ? a / scale : 0) * (size / 2 - 2);
    if (i) ctx.lineTo(px, py);
    else ctx.moveTo(px, py);
  });
  ctx.stroke();
}
