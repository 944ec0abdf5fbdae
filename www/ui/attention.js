// attention.js — a Llama's attention maps for the sampling prompt: one small map per layer
// (rows) and head (columns), query positions down and key positions across, darker where a
// query attends more (each row sums to 1; nothing above the diagonal, the model is causal).
// Click a map to see it large with the prompt's characters along both axes.

/** White → dark orange over [0, 1]. */
function shade(p) {
  const t = Math.max(0, Math.min(1, p));
  const r = Math.round(255 - t * (255 - 140));
  const g = Math.round(255 - t * (255 - 45));
  const b = Math.round(255 - t * (255 - 4));
  return (255 << 24) | (b << 16) | (g << 8) | r;
}

/** A character as it can be seen on an axis. */
const visible = (c) => (c === ' ' ? '␣' : c === '\n' ? '⏎' : c === '\t' ? '⇥' : c);

export class AttentionView {
  constructor(grid, big, caption) {
    this.grid = grid;
    this.big = big;
    this.caption = caption;
    this.maps = null; // AttentionMaps
    this.selected = { layer: 0, head: 0 };
    this.tiles = [];
    this.dirty = false;
    this.draws = 0;
  }

  reset() {
    this.maps = null;
    this.tiles = [];
    this.grid.replaceChildren();
    this.big.getContext('2d').clearRect(0, 0, this.big.width, this.big.height);
    this.caption.textContent = '';
    this.selected = { layer: 0, head: 0 };
    this.dirty = true;
  }

  set(maps) {
    this.maps = maps;
    this.dirty = true;
  }

  /** One canvas per (layer, head), made again only when the model's shape changes. */
  ensureTiles() {
    const { layers, heads } = this.maps;
    if (this.tiles.length === layers * heads) return;
    this.grid.style.gridTemplateColumns = `repeat(${heads}, auto)`;
    this.tiles = [];
    const figures = [];
    for (let l = 0; l < layers; l++) {
      for (let h = 0; h < heads; h++) {
        const fig = document.createElement('figure');
        const canvas = document.createElement('canvas');
        canvas.title = `layer ${l} · head ${h} (click to enlarge)`;
        canvas.addEventListener('click', () => {
          this.selected = { layer: l, head: h };
          this.dirty = true;
        });
        const cap = document.createElement('figcaption');
        cap.textContent = `L${l} H${h}`;
        fig.append(canvas, cap);
        figures.push(fig);
        this.tiles.push(canvas);
      }
    }
    this.grid.replaceChildren(...figures);
  }

  /** The (n, n) map of one layer and head as an image. */
  image(layer, head) {
    const n = this.maps.tokens.length;
    const base = (layer * this.maps.heads + head) * n * n;
    const img = new ImageData(n, n);
    const px = new Uint32Array(img.data.buffer);
    for (let i = 0; i < n * n; i++) px[i] = shade(this.maps.probs[base + i]);
    return img;
  }

  draw() {
    if (!this.dirty || !this.maps) return;
    this.dirty = false;
    this.draws++;
    this.ensureTiles();
    const n = this.maps.tokens.length;
    const side = Math.max(48, Math.min(120, Math.floor(480 / this.maps.heads)));
    this.tiles.forEach((canvas, i) => {
      if (canvas.width !== n) canvas.width = canvas.height = n;
      canvas.style.width = canvas.style.height = `${side}px`;
      canvas.getContext('2d').putImageData(this.image(Math.floor(i / this.maps.heads), i % this.maps.heads), 0, 0);
      canvas.classList.toggle('selected', i === this.selected.layer * this.maps.heads + this.selected.head);
    });
    this.drawBig();
  }

  /** The selected map with the prompt's characters: keys across the top, queries down the left. */
  drawBig() {
    const { layer, head } = this.selected;
    const n = this.maps.tokens.length;
    const ctx = this.big.getContext('2d');
    const margin = 16;
    const cell = (this.big.width - margin) / n;
    ctx.clearRect(0, 0, this.big.width, this.big.height);
    const tile = new OffscreenCanvas(n, n);
    tile.getContext('2d').putImageData(this.image(layer, head), 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(tile, margin, margin, n * cell, n * cell);
    ctx.fillStyle = '#1d1d1f';
    ctx.font = `${Math.max(7, Math.min(12, cell * 0.8))}px ui-monospace, monospace`;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    if (cell >= 6) {
      this.maps.tokens.forEach((t, i) => {
        ctx.fillText(visible(t), margin + (i + 0.5) * cell, margin / 2);
        ctx.fillText(visible(t), margin / 2, margin + (i + 0.5) * cell);
      });
    }
    this.caption.textContent = `layer ${layer} · head ${head}: row = the character attending, column = the character attended to`;
  }

  summary() {
    if (!this.maps) return null;
    // A number that moves whenever any probability does (row 0 is always [1, 0, …]).
    const signature = this.maps.probs.reduce((a, p, i) => a + p * ((i % 97) + 1), 0);
    return { layers: this.maps.layers, heads: this.maps.heads, tokens: this.maps.tokens.join(''), draws: this.draws, signature, tiles: this.tiles.length, selected: this.selected };
  }
}
