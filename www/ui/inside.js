// inside.js — the "look inside" cards: the MLP as a graph of neuron pictures, a Llama's attention
// maps, every tensor's distributions over steps and each layer's RMS. The worker sends what
// they need with its snapshots (neuron outputs, attention maps, an Inspection) while the
// "live" box is ticked; app.js hands those here and calls draw() once per frame.

import { NetworkView } from './network.js';
import { AttentionView } from './attention.js';
import { Distributions } from './distributions.js';

const $ = (id) => document.getElementById(id);

export class Inside {
  constructor() {
    this.network = new NetworkView($('network-canvas'), $('neuron-big'), $('neuron-caption'));
    this.attention = new AttentionView($('attention-grid'), $('attention-big'), $('attention-caption'));
    this.distributions = new Distributions({
      select: $('dist-tensor'),
      canvases: ['dist-weights', 'dist-grads', 'dist-updates'].map($),
      notes: ['dist-weights-note', 'dist-grads-note', 'dist-updates-note'].map($),
      activations: $('act-chart'),
      gradients: $('grad-chart'),
    });
    this.llama = false;
    this.attentionError = '';
  }

  /** Whether the views are live (the worker sends their data only then). */
  get live() {
    return $('inside-live').checked;
  }

  /** A new run: empty views, and the cards its model has. */
  reset(config) {
    this.llama = !!config.model.llama;
    this.network.reset();
    this.attention.reset();
    this.distributions.reset();
    $('network-card').hidden = this.llama;
    $('attention-card').hidden = !this.llama;
    $('act-note').textContent = '';
  }

  weights(weights) {
    if (!this.llama) this.network.setWeights(weights);
  }

  /** The parts of a worker snapshot that are for these views. */
  snapshot(m) {
    if (m.neurons) this.network.setNeurons(m.neurons, m.neuronsCurve);
    if (m.attention) this.attention.set(m.attention);
    if ('attentionError' in m) this.attentionError = m.attentionError ?? '';
    if (m.inspection) {
      this.distributions.push(m.inspection);
      $('act-note').textContent = activationNote(this.llama, m.inspection.layers.some((l) => l.activation));
    }
  }

  draw() {
    this.network.draw();
    this.attention.draw();
    this.distributions.draw();
    $('attention-error').textContent = this.attentionError;
    $('attention-error').hidden = !this.attentionError;
  }

  summary() {
    return { network: this.network.summary(), attention: this.attention.summary(), distributions: this.distributions.summary(), attentionError: this.attentionError };
  }
}

/** What the activation chart shows, or why it is empty. */
function activationNote(llama, kept) {
  if (llama) return "each block's output (the residual stream after it) on the last training batch (none yet in a new or reopened run, until it trains a step)";
  if (kept) return "each hidden layer's output after its activation, on the last training batch (in a new or reopened run, until it trains a step: on the next batch)";
  return 'none: this MLP has no hidden layer; the Network card shows its inputs and outputs';
}
