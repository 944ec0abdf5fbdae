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

  /** points: [{step, lossScale?}] in step order. The chart gets each change and the latest
   * point of every batch, which draws the same steps as every point at a fraction of the cost. */
  push(points) {
    const at = (p) => this.chart.push(p.step, [{ name: 'loss scale', ratio: p.lossScale }]);
    const scaled = points.filter((p) => p.lossScale != null);
    for (const p of scaled) {
      if (p.lossScale === this.last) continue;
      if (this.last != null) {
        if (p.lossScale < this.last) this.backoffs++;
        // The old value up to the step before, so a change draws as a step, not a ramp.
        at({ step: p.step - 1, lossScale: this.last });
      }
      this.last = p.lossScale;
      at(p);
    }
    if (scaled.length) at(scaled[scaled.length - 1]);
  }

  draw() {
    this.chart.draw();
  }

  summary() {
    return { shown: !this.card.hidden, scale: this.last, backoffs: this.backoffs, points: this.chart.cols[0].length };
  }
}
