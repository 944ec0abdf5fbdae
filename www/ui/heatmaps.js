// heatmaps.js — every parameter tensor drawn as a heatmap, one canvas pixel per weight, on a
// diverging blue–white–red map scaled per tensor to ±max|w|. Vectors (biases, norm gains) are
// one-row strips. Canvases are made once per tensor name and redrawn in place.

const ANCHORS = [
  [-1, [33, 102, 172]],
  [-0.5, [103, 169, 207]],
  [0, [247, 247, 247]],
  [0.5, [239, 138, 98]],
  [1, [178, 24, 43]],
];

/** 256-entry RGBA lookup table over [-1, 1]. */
const LUT = (() => {
  const lut = new Uint32Array(256);
  const view = new DataView(lut.buffer);
  for (let i = 0; i < 256; i++) {
    const t = (i / 255) * 2 - 1;
    let k = 0;
    while (k < ANCHORS.length - 2 && t > ANCHORS[k + 1][0]) k++;
    const [t0, c0] = ANCHORS[k];
    const [t1, c1] = ANCHORS[k + 1];
    const f = Math.min(1, Math.max(0, (t - t0) / (t1 - t0)));
    const [r, g, b] = c0.map((c, j) => Math.round(c + (c1[j] - c) * f));
    view.setUint8(i * 4, r);
    view.setUint8(i * 4 + 1, g);
    view.setUint8(i * 4 + 2, b);
    view.setUint8(i * 4 + 3, 255);
  }
  return lut;
})();

export function colorOf(v, scale) {
  const t = scale > 0 ? Math.max(-1, Math.min(1, v / scale)) : 0;
  return LUT[Math.round((t + 1) * 127.5)];
}

/** Largest display side of one heatmap, CSS pixels. */
const BOX = 200;

export class Heatmaps {
  constructor(el) {
    this.el = el;
    this.tiles = new Map();
  }

  reset() {
    this.tiles.clear();
    this.el.replaceChildren();
  }

  tile(name, rows, cols) {
    const key = `${name}:${rows}x${cols}`;
    let t = this.tiles.get(key);
    if (t) return t;
    const fig = document.createElement('figure');
    fig.className = rows === 1 ? 'heat strip' : 'heat';
    const canvas = document.createElement('canvas');
    canvas.width = cols;
    canvas.height = rows;
    canvas.dataset.name = name;
    const big = Math.max(rows, cols);
    const cell = big >= BOX ? BOX / big : Math.min(14, Math.floor(BOX / big));
    canvas.style.width = `${Math.max(1, Math.round(cols * cell))}px`;
    canvas.style.height = `${Math.max(rows === 1 ? 10 : 1, Math.round(rows * cell))}px`;
    const cap = document.createElement('figcaption');
    const title = document.createElement('span');
    title.className = 'name';
    title.textContent = name;
    const meta = document.createElement('span');
    meta.className = 'meta';
    cap.append(title, meta);
    fig.append(canvas, cap);
    this.el.append(fig);
    const ctx = canvas.getContext('2d');
    t = { canvas, ctx, meta, image: ctx.createImageData(cols, rows), shape: `${rows}×${cols}` };
    this.tiles.set(key, t);
    return t;
  }

  /** weights: [{name, shape, data: Float32Array}] */
  update(weights) {
    const seen = new Set();
    for (const w of weights) {
      const rows = w.shape.length >= 2 ? w.shape.slice(0, -1).reduce((a, b) => a * b, 1) : 1;
      const cols = w.shape.length >= 1 ? w.shape[w.shape.length - 1] : 1;
      if (rows * cols !== w.data.length || rows * cols === 0) continue;
      const t = this.tile(w.name, rows, cols);
      seen.add(t);
      let scale = 0;
      for (const v of w.data) {
        const a = Math.abs(v);
        if (a > scale && Number.isFinite(a)) scale = a;
      }
      const px = new Uint32Array(t.image.data.buffer);
      for (let i = 0; i < w.data.length; i++) px[i] = colorOf(w.data[i], scale);
      t.ctx.putImageData(t.image, 0, 0);
      t.meta.textContent = `${t.shape}  ±${scale.toPrecision(2)}`;
    }
    for (const [key, t] of this.tiles) {
      if (!seen.has(t)) {
        t.canvas.closest('figure').remove();
        this.tiles.delete(key);
      }
    }
  }
}
