// loss-scale.js — the Loss scale card: shown for a mixed-precision run, it charts the scale
// each step used (GPU-side dynamic loss scaling; see src/loss_scale.rs) and counts the steps
// it skipped because their gradients overflowed.

import { RatioChart } from './charts.js';

export class LossScaleCard {
  constructor(card, chartEl) {
    this.card = card;
    this.chart = new RatioChart(chartEl, 'loss scale');
    this.last = null;
    this.backoffs = 0;
  }

  /** A new (or reloaded) run: the card shows only in mixed precision. */
  reset(config) {
    this.chart.reset();
    this.last = null;
    this.backoffs = 0;
    this.card.hidden = config?.model?.llama?.precision !== 'mixed';
  }

  /** points: [{step, lossScale?}] in step order; one chart point per change keeps it cheap. */
  push(points) {
    for (const p of points) {
      if (p.lossScale == null || p.lossScale === this.last) continue;
      if (this.last != null && p.lossScale < this.last) this.backoffs++;
      this.last = p.lossScale;
      this.chart.push(p.step, [{ name: 'loss scale', ratio: p.lossScale }]);
    }
  }

  draw() {
    this.chart.draw();
  }

  summary() {
    return { shown: !this.card.hidden, scale: this.last, backoffs: this.backoffs, points: this.chart.cols[0].length };
  }
}
