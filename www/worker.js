// worker.js — the training loop, in a dedicated module worker so the page never stalls. It owns
// the one Kiln run, trains in chunks sized to ~150 ms, and between chunks sends metrics and
// throttled snapshots (weights, update ratios, decision grid, validation loss, text samples).
// Everything that needs the wasm runs here: share links and checkpoint headers are read, and
// CSV points parsed, by the same Rust code a run uses. The messages are listed in ui/protocol.js.

import { init, Kiln, presets, preset, adapterInfo, shareConfig, openShared, readCheckpoint, parsePoints } from './kiln.js';
import { ToWorker, ToPage, linkState } from './ui/protocol.js';
import { zipFolder, unzipFolder } from './ui/folder-zip.js';
import { Pace } from './ui/pace.js';

let run = null;
let pace = null; // sizes of the run's validation scores and samples (ui/pace.js)
let generation = 0; // bumps whenever `run` is replaced; stale loops and snapshots stop
let playing = false;
let step = 0;
let chunk = 1;
let view = { grid: { size: 64, extent: [-1.25, 1.25, -1.25, 1.25] }, prompt: 'And God said', temperature: 0.8 };
const due = { weights: 0, evaluate: 0, sample: 0, inside: 0 };
const cost = { weights: 0, evaluate: 0, sample: 0, inside: 0 };

const post = (msg, transfer = []) => self.postMessage(msg, transfer);
const messageOf = (e) => String(e?.message ?? e);
/** Tells the page which request failed and why (the KilnError's code, field and reason). */
const postError = (op, e) => post({ type: ToPage.error, op, message: messageOf(e), code: e?.code ?? 'gpu', field: e?.field, reason: e?.reason });

// Every call into the run goes through this queue: one GPU operation at a time.
let queue = Promise.resolve();
function exclusive(fn) {
  const p = queue.then(fn);
  queue = p.catch(() => {});
  return p;
}

const isLlama = () => run?.info?.model === 'llama' || run?.info?.task === 'text';

function setPlaying(p) {
  playing = p;
  post({ type: ToPage.state, playing });
}

async function start(hash) {
  try {
    await init();
    // navigator.gpu can exist with no usable adapter (blocklisted driver, GPU off): ask once.
    await adapterInfo();
  } catch (e) {
    post({ type: ToPage.nogpu, message: messageOf(e) });
    return;
  }
  const list = presets().map((p) => ({ ...p, config: preset(p.name) }));
  post({ type: ToPage.ready, presets: list, linked: openLink(hash) });
}

/** The config of a shared link: {config}, {error} when it cannot be opened, null when none. */
function openLink(hash) {
  const state = linkState(hash);
  if (state === null) return null;
  try {
    return { config: openShared(state) };
  } catch (e) {
    return { error: messageOf(e) };
  }
}

/** A new run from `config`, or from what `open()` builds (a quantized file's or an export folder's run). */
async function create(config, play, origin = 'form', open = () => Kiln.create(config)) {
  const gen = ++generation;
  setPlaying(false);
  await exclusive(async () => {
    let fresh;
    try {
      fresh = await open();
    } catch (e) {
      postError({ checkpoint: 'load', quantized: 'load-quantized', export: 'import' }[origin] ?? 'create', e);
      return;
    }
    if (gen !== generation) {
      fresh.dispose();
      return;
    }
    run?.dispose();
    run = fresh;
    pace = new Pace(run.info);
    step = 0;
    chunk = 1;
    Object.keys(due).forEach((k) => { due[k] = 0; });
    run.on('metrics', (points, rates) => {
      if (gen !== generation || !points.length) return;
      step = Math.max(step, points[points.length - 1].step);
      post({ type: ToPage.metrics, points, rates });
    });
    // A lost device is rebuilt from the latest snapshot inside kiln.js; the page says so.
    run.on('recovered', (r) => {
      if (gen === generation) post({ type: ToPage.recovered, ...r });
    });
    post({ type: ToPage.created, info: run.info, dataset: datasetOf(run), config: config ?? run.info.config, origin, share: shareOf(run.info.config) });
  });
  if (gen === generation && run) {
    if (origin !== 'checkpoint') await snapshot({ force: true });
    if (play) playLoop();
  }
  return gen === generation && !!run;
}

/** The run's share link state, or {error} when the config cannot be put in a link. */
function shareOf(config) {
  try {
    return shareConfig(config);
  } catch (e) {
    return { state: '', dropped: null, error: messageOf(e) };
  }
}

function datasetOf(r) {
  try {
    return r.dataset();
  } catch (e) {
    return { error: messageOf(e) };
  }
}

async function playLoop() {
  if (playing || !run) return;
  setPlaying(true);
  const gen = generation;
  while (playing && gen === generation) {
    const t0 = performance.now();
    try {
      await exclusive(() => run.train({ steps: chunk, readEvery: chunk }));
    } catch (e) {
      postError('train', e);
      setPlaying(false);
      break;
    }
    const dt = performance.now() - t0;
    // Aim for ~150 ms of training per chunk: responsive pause, few round trips.
    chunk = Math.max(1, Math.min(500, Math.round(chunk * Math.min(2, Math.max(0.5, 150 / Math.max(dt, 1))))));
    await snapshot({});
    // Let queued messages (pause, view, save) run before the next chunk.
    await new Promise((r) => setTimeout(r, 0));
  }
}

/**
 * Sends whatever is due: weights + update ratios + decision grid, validation loss, a text
 * sample. Each kind waits at least a few times its own cost, so snapshots stay a small
 * fraction of the time spent training.
 */
async function snapshot({ force = false }) {
  // In a hidden tab training goes on, but nobody is looking: skip the readbacks.
  if (view.hidden && !force) return;
  const gen = generation;
  const now = performance.now();
  const llama = isLlama();
  const wantWeights = force || now >= due.weights;
  const wantEval = force || now >= due.evaluate;
  // An untrained model's babble is not worth the wait: sample once training has begun.
  const wantSample = llama && step > 0 && (force || now >= due.sample);
  const wantInside = view.inside !== false && (force || now >= due.inside);
  if (!wantWeights && !wantEval && !wantSample && !wantInside) return;
  const msg = { type: ToPage.snapshot };
  const transfer = [];
  // Each part takes its own turn on the GPU queue; the parts of a replaced run are skipped (by
  // the run too: `create` bumps the generation before its run exists, e.g. MLP grid vs Llama).
  const planned = run;
  const part = (fn) => exclusive(async () => {
    if (gen === generation && run && run === planned) await fn();
  });
  try {
    if (wantWeights) {
      await part(async () => {
        const t0 = performance.now();
        // Per-step update/weight ratios, computed on the GPU every step (the last step read).
        msg.ratios = await run.updateRatios();
        msg.weights = await run.weights();
        msg.weights.forEach((w) => transfer.push(w.data.buffer));
        if (!llama && view.grid) {
          msg.grid = await run.predictGrid(view.grid);
          transfer.push(msg.grid.values.buffer);
        }
        cost.weights = performance.now() - t0;
        due.weights = performance.now() + Math.max(llama ? 700 : 250, 4 * cost.weights);
      });
    }
    if (wantEval) {
      await part(async () => {
        const t0 = performance.now();
        const maxTokens = pace.evalTokens();
        msg.validation = await run.evaluate({ validation: true, maxTokens });
        cost.evaluate = performance.now() - t0;
        pace.evaluated(msg.validation.scored, cost.evaluate);
        due.evaluate = performance.now() + Math.max(llama ? 1500 : 500, 6 * cost.evaluate);
      });
    }
    if (wantInside) await part(() => inside(msg, llama));
  } catch (e) {
    postError('snapshot', e);
  }
  if (gen !== generation) return;
  msg.step = step;
  post(msg, [...new Set(transfer)]);
  if (wantSample) await exclusive(() => sample(gen));
}

/** The look-inside views' data: distributions, and the neurons (MLP) or attention maps (Llama). */
async function inside(msg, llama) {
  const t0 = performance.now();
  msg.inspection = await run.inspect({ bins: 32 });
  if (!llama && view.grid) {
    msg.neuronsCurve = run.info.regression;
    msg.neurons = await run.neuronOutputs({ size: run.info.regression ? 64 : 24, extent: view.grid.extent });
  }
  if (llama) {
    // A prompt the text cannot spell is the sample card's to explain; here it only leaves the maps.
    try {
      msg.attention = await run.attentionMaps(view.prompt);
      msg.attentionError = '';
    } catch (e) {
      msg.attentionError = `No attention maps for this prompt: ${messageOf(e)}`;
    }
  }
  cost.inside = performance.now() - t0;
  due.inside = performance.now() + Math.max(llama ? 1000 : 400, 10 * cost.inside);
}

async function sample(gen) {
  if (gen !== generation || !run) return;
  const t0 = performance.now();
  const maxTokens = pace.sampleChars();
  try {
    const text = await run.generate(view.prompt, { maxTokens, temperature: view.temperature, topK: 20, seed: step });
    pace.sampled(maxTokens, performance.now() - t0);
    if (gen === generation) post({ type: ToPage.sample, step, prompt: view.prompt, text });
    // Guesses need a prompt to guess after; an empty one only samples (from nothing).
    const positions = view.prompt ? await run.nextTokens(view.prompt, { k: 5 }) : [];
    if (gen === generation) post({ type: ToPage.nextTokens, step, prompt: view.prompt, positions });
  } catch (e) {
    postError('sample', e);
  }
  cost.sample = performance.now() - t0;
  due.sample = performance.now() + Math.max(3000, 4 * cost.sample);
}

async function singleStep() {
  if (!run || playing) return;
  const gen = generation;
  try {
    await exclusive(() => run.step());
  } catch (e) {
    postError('step', e);
    return;
  }
  if (gen === generation) await snapshot({ force: true });
}

/** A checkpoint for the page: to download, or (`purpose` 'keep') to keep with the run's record. */
async function save(purpose, id, dtype = 'f32') {
  if (!run) return;
  try {
    const bytes = await exclusive(() => run.save({ dtype }));
    post({ type: ToPage.saved, bytes, step, purpose, id }, [bytes.buffer]);
  } catch (e) {
    postError('save', e);
  }
}

/**
 * Loads a checkpoint: into the current run when it holds the same config, otherwise as a new run
 * built from the checkpoint itself (the page then shows its config).
 */
async function load(bytes) {
  let meta;
  const asked = generation;
  try {
    meta = await readCheckpoint(bytes); // the page's second wasm reads it: its first use loads it
  } catch (e) {
    postError('load', e);
    return;
  }
  if (asked !== generation) return; // another run was asked for meanwhile
  setPlaying(false);
  const same = run && JSON.stringify(run.info?.config) === JSON.stringify(meta.config);
  if (!same && !(await create(meta.config, false, 'checkpoint', () => Kiln.fromCheckpoint(bytes)))) return;
  const gen = generation;
  if (same) {
    try {
      await exclusive(() => run.load(bytes));
    } catch (e) {
      postError('load', e);
      return;
    }
  }
  if (gen !== generation) return;
  step = meta.step;
  post({ type: ToPage.loaded, step });
  await snapshot({ force: true });
}

/**
 * Quantizes the run's weights into a copy beside them and sends the report with the copy's
 * boundary (MLP) or greedy sample (Llama) next to the run's own.
 */
async function quantize(options) {
  if (!run) return;
  const gen = generation;
  await exclusive(async () => {
    try {
      const report = await run.quantize(options);
      const msg = { type: ToPage.quantized, report };
      if (isLlama()) {
        const greedy = { maxTokens: pace.sampleChars(), temperature: 0 };
        const full = await run.generate(view.prompt, greedy);
        msg.samples = { prompt: view.prompt, full, quantized: await run.generate(view.prompt, { ...greedy, quantized: true }) };
      } else if (view.grid) {
        msg.grids = { full: await run.predictGrid(view.grid), quantized: await run.predictGrid({ ...view.grid, quantized: true }) };
      }
      if (gen === generation) post(msg);
    } catch (e) {
      postError('quantize', e);
    }
  });
}

async function saveQuantized() {
  if (!run) return;
  try {
    const bytes = await exclusive(() => run.saveQuantized());
    post({ type: ToPage.saved, bytes, step, purpose: 'quantized' }, [bytes.buffer]);
  } catch (e) {
    postError('quantize', e);
  }
}

/** The run's export folder, zipped under `name/`, for the page to download. */
async function exportFolder(name) {
  if (!run) return;
  try {
    const files = await exclusive(() => run.exportFiles());
    const bytes = await zipFolder(files, name);
    post({ type: ToPage.saved, bytes, step, purpose: 'export' }, [bytes.buffer]);
  } catch (e) {
    postError('export', e);
  }
}

/** Your own points from CSV, parsed by the same Rust code a run uses. */
function parseCsv(text) {
  try {
    const points = parsePoints(text);
    post({ type: ToPage.points, points }, [points.inputs.buffer]);
  } catch (e) {
    postError('csv', e);
  }
}

self.onmessage = (e) => {
  const m = e.data;
  switch (m.type) {
    case ToWorker.init: start(m.hash); break;
    case ToWorker.create: create(m.config, m.play); break;
    case ToWorker.play: playLoop(); break;
    case ToWorker.pause:
      playing = false;
      run?.pause?.();
      // Report "paused" once the step in flight has finished, so the step count is final.
      exclusive(() => {}).then(() => post({ type: ToPage.state, playing }));
      break;
    case ToWorker.step: singleStep(); break;
    case ToWorker.view: {
      const shown = view.hidden && m.view.hidden === false;
      view = { ...view, ...m.view };
      // Back from a hidden tab: show the present at once.
      if (shown && run) snapshot({ force: true });
      break;
    }
    case ToWorker.refresh: if (!playing) snapshot({ force: true }); break;
    case ToWorker.sample: if (run && isLlama()) exclusive(() => sample(generation)); break;
    case ToWorker.save: save(m.purpose, m.id, m.dtype); break;
    case ToWorker.load: load(m.bytes); break;
    case ToWorker.openLink: {
      const linked = openLink(m.hash);
      if (linked?.config) post({ type: ToPage.link, config: linked.config });
      else if (linked?.error) postError('link', new Error(linked.error));
      break;
    }
    case ToWorker.parseCsv: parseCsv(m.text); break;
    case ToWorker.quantize: quantize(m.options); break;
    case ToWorker.saveQuantized: saveQuantized(); break;
    case ToWorker.loadQuantized:
      create(null, false, 'quantized', () => Kiln.fromQuantized(m.bytes));
      break;
    case ToWorker.exportFolder: exportFolder(m.name); break;
    case ToWorker.importFolder:
      create(null, false, 'export', async () => Kiln.fromExport(await unzipFolder(m.bytes)));
      break;
    case ToWorker.loseDevice: run?.simulateDeviceLoss(); break;
    default: postError('protocol', new Error(`unknown message ${String(m.type).slice(0, 40)}`));
  }
};
