// app.js — the page thread: it owns the form, charts, heatmaps and data plot, and drives the
// training worker (worker.js) by messages. Nothing user-supplied is ever parsed as HTML: all
// text goes through textContent or input values.

import * as form from './ui/form.js';
import { LossChart, RatioChart } from './ui/charts.js';
import { Heatmaps } from './ui/heatmaps.js';
import { PointsPlot } from './ui/points.js';
import { shareUrl, configFromHash, checkConfig } from './ui/share.js';
import { wireFiles, showCustomPoints, download } from './ui/files.js';

const $ = (id) => document.getElementById(id);

const state = {
  ready: false,
  playing: false,
  step: 0,
  presets: [],
  config: null, // the config of the live run
  info: null,
  dataset: null,
  lastWeights: null,
  samples: 0,
  lastSample: '',
  lastSampleStep: -1,
  errors: [],
  recoveries: [],
};
// A view for the end-to-end tests and curious users (devtools: kilnPage.summary()), and a way
// to see device-loss recovery at work (kilnPage.loseDevice()).
window.kilnPage = {
  loseDevice: () => send({ type: 'lose-device' }),
  summary: () => ({
    ready: state.ready, playing: state.playing, step: state.step, info: state.info,
    loss: loss.summary(), trainLoss: loss.cols[1].filter((v) => v != null),
    samples: state.samples, lastSample: state.lastSample, lastSampleStep: state.lastSampleStep,
    heatmaps: heat.tiles.size, hasGrid: !!plot.grid, error: $('config-error').hidden ? null : $('config-error').textContent,
    linkError: $('link-error').hidden ? null : $('link-error').textContent,
    hidden: !!state.hidden, lastWeights: state.lastWeights, recoveries: state.recoveries, gpuNotice: $('gpu-notice').hidden ? null : $('gpu-notice').textContent,
  }),
};

const loss = new LossChart($('loss-chart'));
const ratios = new RatioChart($('ratio-chart'));
const heat = new Heatmaps($('heatmaps'));
const plot = new PointsPlot($('data-canvas'));
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
const send = (msg, transfer) => worker.postMessage(msg, transfer ?? []);

// ---- status and errors --------------------------------------------------------------------

function setStatus(text, kind = 'ok') {
  const s = $('status');
  s.textContent = text;
  s.dataset.state = kind;
}

function showError(text) {
  const el = $('config-error');
  el.textContent = text;
  el.hidden = !text;
}

function showLinkError(e) {
  $('link-error').textContent = `Ignoring the link's config: ${e.message}. Showing a preset instead.`;
  $('link-error').hidden = false;
}

function showNoGpu(reason) {
  $('nogpu').hidden = false;
  $('nogpu-reason').textContent = reason;
  document.body.classList.add('no-gpu');
  setStatus('WebGPU is not available — see below.', 'error');
}

function updateButtons() {
  const live = state.ready && !!state.info;
  $('play').disabled = !live || state.playing;
  $('pause').disabled = !live || !state.playing;
  $('step').disabled = !live || state.playing;
  $('reset').disabled = !state.ready;
  $('ckpt-save').disabled = !live;
  $('sample-now').disabled = !live;
  document.body.dataset.playing = String(state.playing);
}

const fmt = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

// ---- building runs ------------------------------------------------------------------------

let editTimer = 0;

/** Reads the form and asks the worker for a new run; form problems are shown, not thrown. */
function apply({ play = state.playing } = {}) {
  clearTimeout(editTimer);
  let config;
  try {
    config = form.readConfig();
  } catch (e) {
    showError(e.message);
    return;
  }
  showError('');
  setStatus('Building the model…', 'busy');
  send({ type: 'create', config, play });
}

function onCreated({ info, dataset, config, origin }) {
  if (origin === 'checkpoint') {
    form.writeConfig(config);
    $('preset').value = '';
    $('preset-desc').textContent = 'From the checkpoint.';
  }
  state.config = config;
  state.info = info;
  state.dataset = dataset;
  state.step = 0;
  showError('');
  loss.reset();
  ratios.reset();
  heat.reset();
  const llama = !!config.model.llama;
  const mse = !llama && config.model.mlp.output_dim === 1;
  loss.setLabel(mse ? 'MSE' : 'cross-entropy');
  $('loss-kind').textContent = mse ? '(mean squared error)' : '(cross-entropy, nats)';
  $('val-metric').textContent = '';
  $('stat-step').textContent = '0';
  $('stat-sps').textContent = '–';
  $('stat-tps').textContent = '–';
  $('stat-params').textContent = info.parameters.toLocaleString('en-US');
  $('adapter').textContent = `GPU: ${info.adapter?.name ?? 'unknown'} (${info.adapter?.backend ?? 'WebGPU'}) · ${info.dispatchesPerStep} dispatches per step`;
  $('sample-card').hidden = !llama;
  $('data-card').hidden = llama;
  showDataset(config, dataset);
  const { url, dropped } = shareUrl(config);
  $('share-url').value = url;
  $('share-note').textContent = dropped ? `The link leaves out ${dropped} (too large for a URL).` : '';
  history.replaceState(null, '', new URL(url).hash);
  setStatus(state.playing ? 'Training…' : 'Ready — press Play.', 'ok');
  updateButtons();
}

/** Splits a dataset split ({inputs, labels|targets, inputDim}) into plot columns. */
function columns(split, regression) {
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

function showDataset(config, ds) {
  if (config.model.llama) {
    $('text-excerpt').textContent = ds?.excerpt?.slice(0, 600) ?? '';
    const v = ds?.vocab?.length;
    if (v) $('text-excerpt').title = `${v} distinct characters, ${ds.length?.toLocaleString('en-US')} in all`;
    return;
  }
  const regression = config.model.mlp.output_dim === 1;
  const classes = config.model.mlp.output_dim;
  $('data-title').textContent = regression ? 'Data & fitted curve' : 'Data & decision boundary';
  $('data-hint').textContent = classes > 2
    ? 'filled: training points · rings: validation · shading: probability of class 1 (predictGrid reports class 1 only)'
    : 'filled: training points · rings: validation';
  const train = columns(ds, regression);
  if (!train) {
    plot.setPoints([], [], null, { regression, classes });
    return;
  }
  plot.setPoints(train.xs, train.ys, train.labels, { regression, classes, held: columns(ds.validation, regression) });
  sendView();
  send({ type: 'refresh' });
}

function sendView() {
  send({ type: 'view', view: { grid: plot.gridRequest(plot.regression ? 200 : 64), prompt: $('sample-prompt').value, temperature: Number($('sample-temp').value) || 0 } });
}

// ---- messages from the worker -------------------------------------------------------------

let pendingMetrics = [];
worker.onmessage = (e) => {
  const m = e.data;
  switch (m.type) {
    case 'ready': onReady(m.presets); break;
    case 'nogpu': showNoGpu(`This browser exposes WebGPU, but Kiln could not start on it: ${m.message}`); break;
    case 'created': onCreated(m); break;
    case 'state':
      state.playing = m.playing;
      if (state.info) setStatus(m.playing ? 'Training…' : `Paused at step ${state.step}.`, 'ok');
      updateButtons();
      break;
    case 'metrics':
      pendingMetrics.push(...m.points);
      // A hidden tab draws no frames: fold the points into the chart (it thins itself).
      if (pendingMetrics.length > 20_000) flushMetrics();
      state.step = Math.max(state.step, m.points[m.points.length - 1].step);
      if (m.rates) {
        $('stat-sps').textContent = fmt(m.rates.stepsPerSecond ?? 0);
        $('stat-tps').textContent = Math.round(m.rates.tokensPerSecond ?? 0).toLocaleString('en-US');
      }
      break;
    case 'snapshot': onSnapshot(m); break;
    case 'sample':
      state.samples++;
      state.lastSample = m.text;
      state.lastSampleStep = m.step;
      showSample(m);
      break;
    case 'saved': download(m.bytes, m.step); break;
    case 'loaded':
      state.step = m.step;
      pendingMetrics = [];
      loss.reset();
      ratios.reset();
      $('stat-step').textContent = String(m.step);
      showError('');
      setStatus(`Checkpoint loaded at step ${m.step} — press Play to continue.`, 'ok');
      break;
    case 'recovered': onRecovered(m); break;
    case 'error': onWorkerError(m); break;
  }
};

/** The GPU device was lost and the worker rebuilt the run from its latest snapshot. */
function onRecovered({ reason, lostAt, resumedAt }) {
  state.recoveries.push({ reason, lostAt, resumedAt });
  const redone = lostAt - resumedAt;
  const el = $('gpu-notice');
  el.textContent = `The GPU device was lost (${reason}). Kiln rebuilt the run on a new device from its snapshot at step ${resumedAt}`
    + (redone ? `; the ${redone} step${redone === 1 ? '' : 's'} after it were trained again, identically.` : '; nothing was lost.');
  el.hidden = false;
}
worker.onerror = (e) => {
  e.preventDefault?.();
  showNoGpu(`The training worker failed to start (${e.message || 'module worker error'}). Kiln needs a browser with module workers and WebGPU.`);
};

function onWorkerError({ op, message }) {
  state.errors.push({ op, message });
  if (op === 'create') {
    showError(`Could not build this model: ${message}`);
    setStatus(state.info ? 'The previous model is still loaded.' : 'Fix the config to start.', 'error');
  } else {
    showError(`${op} failed: ${message}`);
  }
}

/** The prompt in bold, then the model's continuation — as text nodes, never HTML. */
function showSample({ step, prompt, text }) {
  const head = document.createElement('span');
  head.className = 'sample-step';
  head.textContent = `step ${step}\n`;
  const b = document.createElement('b');
  b.textContent = prompt;
  $('sample-output').replaceChildren(head, b, document.createTextNode(text));
}

function onSnapshot(m) {
  if (m.weights) {
    heat.update(m.weights);
    state.lastWeights = m.step;
  }
  if (m.ratios) ratios.push(m.step, m.ratios);
  if (m.grid) plot.setGrid(m.grid);
  if (m.validation) {
    loss.validation(m.step, m.validation.loss);
    const acc = m.validation.accuracy;
    $('val-metric').textContent = `validation ${m.validation.loss.toFixed(4)}${acc == null ? '' : ` · accuracy ${(acc * 100).toFixed(1)}%`} @ step ${m.step}`;
  }
}

function flushMetrics() {
  loss.push(pendingMetrics);
  pendingMetrics = [];
  $('stat-step').textContent = String(state.step);
}

// Draw at most once per frame, whatever the message rate.
function frame() {
  if (pendingMetrics.length) flushMetrics();
  loss.draw();
  ratios.draw();
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);

// Training goes on in a hidden tab (the worker is not throttled); only the worker's weight,
// boundary and validation snapshots pause, and resume the moment the tab is shown again.
document.addEventListener('visibilitychange', () => {
  state.hidden = document.hidden;
  send({ type: 'view', view: { hidden: document.hidden } });
  if (!document.hidden) flushMetrics();
});

// ---- presets and start-up ------------------------------------------------------------------

function onReady(presets) {
  state.ready = true;
  state.presets = presets;
  const sel = $('preset');
  sel.replaceChildren(...presets.map((p) => new Option(p.name, p.name)), new Option('(custom)', ''));
  let initial = null;
  try {
    initial = configFromHash();
  } catch (e) {
    showLinkError(e);
  }
  if (initial) {
    sel.value = '';
    $('preset-desc').textContent = 'From the link.';
    form.writeConfig(initial);
  } else {
    choosePreset(presets.find((p) => p.name === 'mlp-spiral') ? 'mlp-spiral' : presets[0]?.name, false);
  }
  if (form.modelKind() === 'mlp' && $('pt-task').value === 'custom') showCustomPoints(plot);
  apply({ play: false });
}

function choosePreset(name, build = true) {
  const p = state.presets.find((q) => q.name === name);
  if (!p) return;
  $('preset').value = name;
  $('preset-desc').textContent = p.description;
  form.writeConfig(p.config);
  if (build) apply();
}

// ---- controls -------------------------------------------------------------------------------

$('play').onclick = () => send({ type: 'play' });
$('pause').onclick = () => send({ type: 'pause' });
$('step').onclick = () => send({ type: 'step' });
$('reset').onclick = () => apply();
$('preset').onchange = (e) => choosePreset(e.target.value);
$('log-scale').onchange = (e) => loss.setLog(e.target.checked);
$('sample-now').onclick = () => { sendView(); send({ type: 'sample' }); };
for (const id of ['sample-prompt', 'sample-temp']) $(id).addEventListener('change', sendView);

form.onEdit((source) => {
  if (source === 'model-kind') {
    // Switching family starts from that family's first preset rather than stale fields.
    const kind = form.modelKind();
    const first = state.presets.find((p) => (kind === 'mlp' ? p.config.model.mlp : p.config.model.llama));
    if (first) return choosePreset(first.name);
  }
  $('preset').value = '';
  $('preset-desc').textContent = 'Your own configuration.';
  if (source === 'draw-class') return;
  if (source === 'custom-kind') {
    form.custom.kind = $('custom-kind').value;
    form.custom.points = [];
    form.syncVisibility();
  }
  if ($('pt-task').value === 'custom' && form.modelKind() === 'mlp') showCustomPoints(plot);
  clearTimeout(editTimer);
  editTimer = setTimeout(() => apply(), source === 'tx-text' || source === 'mlp-hidden' ? 900 : 400);
});

wireFiles({
  plot,
  send,
  showError,
  apply: (ms = 0) => {
    clearTimeout(editTimer);
    editTimer = setTimeout(() => apply(), ms);
  },
  cancelApply: () => clearTimeout(editTimer),
});

addEventListener('hashchange', () => {
  try {
    const c = configFromHash();
    if (!c) return;
    checkConfig(c);
    form.writeConfig(c);
    $('preset').value = '';
    apply();
  } catch (e) {
    showLinkError(e);
  }
});

// ---- WebGPU check, then start the worker --------------------------------------------------

if (!('gpu' in navigator) || !navigator.gpu) {
  showNoGpu(window.isSecureContext
    ? 'This browser does not expose WebGPU (navigator.gpu is missing).'
    : `This page is not a secure context (${location.protocol}//${location.host}), so the browser hides WebGPU.`);
  worker.terminate();
} else {
  form.syncVisibility();
  updateButtons();
  send({ type: 'init' });
}
