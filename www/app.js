// app.js — the page thread: it owns the form, charts, heatmaps and data plot, and drives the
// training worker (worker.js) by messages. The messages change `state` (the run) and `ui` (what
// the page says, ui/render.js); `frame()` draws both once per animation frame. Nothing
// user-supplied is ever parsed as HTML: all text goes through textContent or input values.

import * as form from './ui/form.js';
import { LossChart, RatioChart } from './ui/charts.js';
import { LossScaleCard } from './ui/loss-scale.js';
import { Heatmaps } from './ui/heatmaps.js';
import { PointsPlot, plotColumns, dataCardText } from './ui/points.js';
import { wireFiles, showCustomPoints, download, parseCsv, onParsedPoints } from './ui/files.js';
import { ToWorker, ToPage } from './ui/protocol.js';
import { fitPrompt, cpuAdvice, CPU_SIZES } from './ui/samples.js';
import { ui, render } from './ui/render.js';
import { setStatus, showError, showLinkError, showNoGpu, showRecovered, showWorkerError } from './ui/notices.js';
import { Runs } from './ui/runs.js';
import { Inside } from './ui/inside.js';
import { QuantizePanel } from './ui/quantize.js';

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
  runs: 0, // runs built so far
};
// A view for the end-to-end tests and curious users (devtools: kilnPage.summary()), and a way
// to see device-loss recovery at work (kilnPage.loseDevice()).
window.kilnPage = {
  loseDevice: () => send({ type: ToWorker.loseDevice }),
  summary: () => ({
    ready: state.ready, playing: state.playing, step: state.step, info: state.info, runs: state.runs,
    loss: loss.summary(), trainLoss: loss.cols[1].filter((v) => v != null),
    samples: state.samples, lastSample: state.lastSample, lastSampleStep: state.lastSampleStep,
    heatmaps: heat.tiles.size, hasGrid: !!plot.grid, error: ui.configError || null, linkError: ui.linkError || null,
    hidden: !!state.hidden, lastWeights: state.lastWeights, recoveries: state.recoveries, gpuNotice: ui.gpuNotice || null,
    sampleError: ui.sampleError || null, cpuNotice: ui.cpuNotice || null, status: ui.status.text,
    kept: runs.summary(), inside: inside.summary(), quantized: quant.summary(), lossScale: lossScale.summary(), prompt: $('sample-prompt').value, nextTokens: ui.nextTokens, grid: plot.grid ? { size: plot.grid.size, classes: plot.grid.classes, extent: plot.grid.extent } : null, view: plot.extent,
  }),
};

const loss = new LossChart($('loss-chart'));
const ratios = new RatioChart($('ratio-chart'));
const lossScale = new LossScaleCard($('loss-scale-card'), $('loss-scale-chart'));
const heat = new Heatmaps($('heatmaps'));
const plot = new PointsPlot($('data-canvas'));
const inside = new Inside();
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
const send = (msg, transfer) => worker.postMessage(msg, transfer ?? []);
const quant = new QuantizePanel({ send, plot });
const runs = new Runs({
  send,
  onProblem: (text) => { ui.runsProblem = text; },
  rebuild: (run) => {
    writeConfig(run.config);
    ui.presetDesc = `Rebuilt from ${run.name} (no checkpoint was kept, so training starts again).`;
    apply();
  },
});

/** Fills the form from a config; your own points in it are parsed by the worker for the plot. */
function writeConfig(config) {
  form.writeConfig(config);
  if (config.data.points?.csv != null) parseCsv(send, config.data.points.csv, false);
}

function updateButtons() {
  ui.buttons = { ready: state.ready, live: state.ready && !!state.info, playing: state.playing };
}

const fmt = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

// ---- building runs ------------------------------------------------------------------------

let editTimer = 0;
/** Rebuilds the run after `ms`, replacing a rebuild already pending (edits come in bursts). */
const rebuildAfter = (ms) => { clearTimeout(editTimer); editTimer = setTimeout(() => apply(), ms); };

/** Reads the form and asks the worker for a new run; form problems are shown, not thrown. */
function apply({ play = state.playing } = {}) {
  clearTimeout(editTimer);
  let config;
  try {
    config = form.readConfig();
  } catch (e) {
    showError(e.message, e); // an Error of the form's names its input, and whether it only waits
    return;
  }
  showError('');
  setStatus('Building the model…', 'busy');
  send({ type: ToWorker.create, config, play });
}

function onCreated({ info, dataset, config, origin, share }) {
  if (origin !== 'form') {
    writeConfig(config);
    $('preset').value = '';
    ui.presetDesc = { quantized: 'From the quantized file.', export: 'From the imported folder.' }[origin] ?? 'From the checkpoint.';
  }
  state.config = config;
  state.info = info;
  state.runs++;
  runs.built(config, info, $('preset').value || 'custom', origin);
  state.dataset = dataset;
  state.step = 0;
  showError('');
  loss.reset(); ratios.reset(); lossScale.reset(config);
  heat.reset();
  inside.reset(config);
  quant.reset(!!config.model.llama, origin);
  toDraw.weights = toDraw.grid = null;
  const llama = !!config.model.llama;
  const mse = !llama && config.model.mlp.output_dim === 1;
  loss.setLabel(mse ? 'MSE' : 'cross-entropy');
  ui.lossKind = mse ? '(mean squared error)' : '(cross-entropy, nats)';
  ui.valMetric = '';
  ui.stats = { step: '0', sps: '–', tps: '–', params: info.parameters.toLocaleString('en-US'), mem: `${(info.gpuBytes / 1e6).toFixed(info.gpuBytes < 1e7 ? 1 : 0)} MB` };
  ui.adapter = `GPU: ${info.adapter?.name ?? 'unknown'} (${info.adapter?.backend ?? 'WebGPU'}) · ${info.dispatchesPerStep} dispatches per step`;
  ui.llama = llama;
  ui.sample = null;
  ui.nextTokens = null;
  ui.sampleError = '';
  showDataset(config, dataset, info.inputScaling);
  if (llama && fitPrompt(dataset, info.task !== 'text')) sendView();
  ui.cpuNotice = cpuAdvice(info);
  const url = new URL(location.href);
  url.hash = share.state ? `c=${share.state}` : '';
  const note = share.error ? `No link for this config: ${share.error}` : share.dropped ? `The link leaves out ${share.dropped} (too large for a URL).` : '';
  ui.share = { url: share.state ? url.toString() : '', note };
  history.replaceState(null, '', url.hash || location.pathname);
  setStatus(state.playing ? 'Training…' : 'Ready — press Play.', 'ok');
  updateButtons();
}

function showDataset(config, ds, scaling) {
  if (config.model.llama) {
    const v = ds?.vocab?.length;
    ui.excerpt = { text: ds?.excerpt?.slice(0, 600) ?? '', title: v ? `${v} distinct characters, ${ds.length?.toLocaleString('en-US')} in all` : '' };
    return;
  }
  const regression = config.model.mlp.output_dim === 1;
  const classes = config.model.mlp.output_dim;
  Object.assign(ui, dataCardText(regression, classes, [ds, ds?.validation], scaling));
  const train = plotColumns(ds, regression);
  if (!train) {
    plot.setPoints([], [], null, { regression, classes });
    return;
  }
  plot.setPoints(train.xs, train.ys, train.labels, { regression, classes, held: plotColumns(ds.validation, regression) });
  sendView();
  send({ type: ToWorker.refresh });
}


$('cpu-shrink').onclick = () => {
  form.shrinkLlama(CPU_SIZES);
  $('preset').value = '';
  ui.presetDesc = 'CPU-sized settings.';
  apply();
};

function sendView() {
  send({ type: ToWorker.view, view: { grid: plot.gridRequest(plot.regression ? 200 : 64), prompt: $('sample-prompt').value, temperature: Number($('sample-temp').value) || 0 } });
}

// ---- messages from the worker -------------------------------------------------------------

let pendingMetrics = [];
worker.onmessage = (e) => {
  const m = e.data;
  switch (m.type) {
    case ToPage.ready: onReady(m.presets, m.linked); break;
    case ToPage.nogpu: showNoGpu(`This browser exposes WebGPU, but Kiln could not start on it: ${m.message}`); break;
    case ToPage.created: onCreated(m); break;
    case ToPage.state:
      // Paused: keep where the run stopped.
      if (state.playing && !m.playing) runs.keep(false, true);
      state.playing = m.playing;
      if (state.info) setStatus(m.playing ? 'Training…' : `Paused at step ${state.step}.`, 'ok');
      updateButtons();
      break;
    case ToPage.metrics:
      pendingMetrics.push(...m.points);
      // A hidden tab draws no frames: fold the points into the chart (it thins itself).
      if (pendingMetrics.length > 20_000) flushMetrics();
      state.step = Math.max(state.step, m.points[m.points.length - 1].step);
      runs.metrics(m.points, m.rates);
      if (m.rates) {
        ui.stats = { ...ui.stats, sps: fmt(m.rates.stepsPerSecond ?? 0), tps: Math.round(m.rates.tokensPerSecond ?? 0).toLocaleString('en-US') };
      }
      break;
    case ToPage.snapshot: onSnapshot(m); break;
    case ToPage.sample:
      state.samples++;
      state.lastSample = m.text;
      state.lastSampleStep = m.step;
      ui.sample = { step: m.step, prompt: m.prompt, text: m.text };
      ui.sampleError = '';
      break;
    case ToPage.nextTokens:
      // An empty prompt has no guesses. A new prompt starts at its last character: the guesses
      // for what comes next.
      if (!m.positions.length) { ui.nextTokens = null; break; }
      if (ui.nextTokens?.prompt !== m.prompt) ui.ntPosition = m.positions.length - 1;
      ui.nextTokens = { step: m.step, prompt: m.prompt, positions: m.positions };
      break;
    case ToPage.saved:
      if (m.purpose === 'keep') runs.keepCheckpoint(m.bytes, m.id);
      else if (m.purpose === 'quantized') download(m.bytes, runs.current?.name, `${quant.report?.bits ?? 'q'}bit-mlx`);
      else if (m.purpose === 'export') download(m.bytes, runs.current?.name, `step${m.step}-export`, '.zip');
      else download(m.bytes, runs.current?.name, `step${m.step}`);
      break;
    case ToPage.loaded:
      state.step = m.step;
      pendingMetrics = [];
      loss.reset(); ratios.reset(); lossScale.reset(state.config);
      ui.stats = { ...ui.stats, step: String(m.step) };
      // A reopened kept run draws its loss curve so far again.
      loss.push(runs.loaded(state.config, state.info, m.step).map(([step, value]) => ({ step, loss: value })));
      showError('');
      setStatus(`Checkpoint loaded at step ${m.step} — press Play to continue.`, 'ok');
      break;
    case ToPage.recovered:
      state.recoveries.push({ reason: m.reason, lostAt: m.lostAt, resumedAt: m.resumedAt });
      showRecovered(m);
      break;
    case ToPage.error:
      state.errors.push({ op: m.op, message: m.message, code: m.code, field: m.field });
      if (m.op === 'quantize' || m.op === 'load-quantized') quant.failed(m.message);
      showWorkerError(m, !!state.info);
      break;
    case ToPage.link:
      writeConfig(m.config);
      $('preset').value = '';
      ui.presetDesc = LINKED;
      apply();
      break;
    case ToPage.points: onParsedPoints(m.points, { plot, apply: () => apply() }); break;
    case ToPage.quantized: quant.show(m); break;
  }
};

worker.onerror = (e) => {
  e.preventDefault?.();
  showNoGpu(`The training worker failed to start (${e.message || 'module worker error'}). Kiln needs a browser with module workers and WebGPU.`);
};

/** Canvases waiting for the next frame: the latest weights and decision grid. */
const toDraw = { weights: null, grid: null };

function onSnapshot(m) {
  if (m.weights) {
    toDraw.weights = m.weights;
    inside.weights(m.weights);
    state.lastWeights = m.step;
  }
  if (m.ratios) ratios.push(m.step, m.ratios);
  if (m.grid) toDraw.grid = m.grid;
  inside.snapshot(m);
  if (m.validation) {
    loss.validation(m.step, m.validation.loss);
    runs.validation(m.validation.loss, m.validation.accuracy);
    const acc = m.validation.accuracy;
    ui.valMetric = `validation ${m.validation.loss.toFixed(4)}${acc == null ? '' : ` · accuracy ${(acc * 100).toFixed(1)}%`} @ step ${m.step}`;
  }
}

function flushMetrics() {
  loss.push(pendingMetrics);
  lossScale.push(pendingMetrics);
  pendingMetrics = [];
  ui.stats = { ...ui.stats, step: String(state.step) };
}

// Draw at most once per frame, whatever the message rate.
function frame() {
  if (pendingMetrics.length) flushMetrics();
  if (toDraw.weights) heat.update(toDraw.weights);
  if (toDraw.grid) plot.setGrid(toDraw.grid);
  toDraw.weights = toDraw.grid = null;
  updateButtons();
  if (state.info) runs.keep(state.playing);
  runs.render();
  render();
  loss.draw(); ratios.draw(); lossScale.draw();
  inside.draw();
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);

// A hidden tab trains on (the worker is not throttled); only its snapshots pause until shown.
document.addEventListener('visibilitychange', () => {
  state.hidden = document.hidden;
  send({ type: ToWorker.view, view: { hidden: document.hidden } });
  if (!document.hidden) flushMetrics();
});

// ---- presets and start-up ------------------------------------------------------------------

/** What the preset line says of a config from the address (a shared link, or this page reloaded). */
const LINKED = 'From the link: the address carries the config of the last run, so a reload keeps it.';

/** `linked`: the config of the page's link ({config}), why it cannot be opened ({error}), or null. */
function onReady(presets, linked) {
  state.ready = true;
  state.presets = presets;
  const sel = $('preset');
  sel.replaceChildren(...presets.map((p) => new Option(p.name, p.name)), new Option('(custom)', ''));
  if (linked?.error) showLinkError(linked.error);
  if (linked?.config) {
    sel.value = '';
    ui.presetDesc = LINKED;
    writeConfig(linked.config);
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
  ui.presetDesc = p.description;
  writeConfig(p.config);
  if (build) apply();
}

// ---- controls -------------------------------------------------------------------------------

$('play').onclick = () => send({ type: ToWorker.play });
$('pause').onclick = () => {
  if (state.playing) setStatus('Pausing after the steps in flight…', 'busy');
  send({ type: ToWorker.pause });
};
$('step').onclick = () => send({ type: ToWorker.step });
// Space plays and pauses, unless a field or a button has the keyboard.
addEventListener('keydown', (e) => {
  if (e.code !== 'Space' || e.repeat || e.target.closest?.('input, textarea, select, button, a')) return;
  e.preventDefault();
  $(state.playing ? 'pause' : 'play').click();
});
$('reset').onclick = () => apply();
$('preset').onchange = (e) => choosePreset(e.target.value);
$('log-scale').onchange = (e) => loss.setLog(e.target.checked);
$('inside-live').onchange = (e) => send({ type: ToWorker.view, view: { inside: e.target.checked } });
$('sample-now').onclick = () => { sendView(); send({ type: ToWorker.sample }); };
$('nt-position').addEventListener('input', (e) => { ui.ntPosition = Number(e.target.value); });
for (const id of ['sample-prompt', 'sample-temp']) $(id).addEventListener('change', sendView);

form.onEdit((source) => {
  if (source === 'model-kind') {
    // Switching family starts from that family's first preset rather than stale fields.
    const kind = form.modelKind();
    const first = state.presets.find((p) => (kind === 'mlp' ? p.config.model.mlp : p.config.model.llama));
    if (first) return choosePreset(first.name);
  }
  $('preset').value = '';
  ui.presetDesc = 'Your own configuration.';
  if (source === 'draw-class') return;
  if ($('pt-task').value === 'custom' && form.modelKind() === 'mlp') showCustomPoints(plot);
  rebuildAfter(source === 'tx-text' || source === 'mlp-hidden' ? 900 : 400);
});

wireFiles({
  plot, send, showError,
  showNote: (text) => { ui.share = { ...ui.share, note: text }; },
  runName: () => runs.current?.name,
  apply: rebuildAfter,
  cancelApply: () => clearTimeout(editTimer),
});

// A link pasted into this tab: the worker opens it (Rust's share::decode) and answers `link`.
addEventListener('hashchange', () => send({ type: ToWorker.openLink, hash: location.hash }));

// ---- WebGPU check, then start the worker --------------------------------------------------

if (!('gpu' in navigator) || !navigator.gpu) {
  showNoGpu(window.isSecureContext
    ? 'This browser does not expose WebGPU (navigator.gpu is missing).'
    : `This page is not a secure context (${location.protocol}//${location.host}), so the browser hides WebGPU.`);
  worker.terminate();
} else {
  form.syncVisibility();
  runs.load();
  send({ type: ToWorker.init, hash: location.hash });
}
// The no-WebGPU explanation must show even where no frame is drawn yet.
render();
