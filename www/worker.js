// worker.js — the training loop, in a dedicated module worker so the page never stalls. It owns
// the one Kiln run, trains in chunks sized to ~150 ms, and between chunks sends metrics and
// throttled snapshots (weights, update ratios, decision grid, validation loss, text samples).
//
// Page → worker: init | create {config, play} | play | pause | step | view {grid, prompt,
//   temperature, hidden} | sample | save | load {bytes}
// Worker → page: ready {presets, adapter} | nogpu {message} | created {info, dataset, config}
//   | error {op, message} | state {playing} | metrics {points, rates} | snapshot {…} | sample
//   {step, text} | saved {bytes} | loaded {step} | recovered {reason, lostAt, resumedAt}
// (`lose-device` destroys the GPU device, as a driver reset would: for testing recovery.)

import { init, Kiln, presets, preset, adapterInfo } from './kiln.js';

let run = null;
let generation = 0; // bumps whenever `run` is replaced; stale loops and snapshots stop
let playing = false;
let step = 0;
let chunk = 1;
let view = { grid: { size: 64, extent: [-1.25, 1.25, -1.25, 1.25] }, prompt: 'And God said', temperature: 0.8 };
const due = { weights: 0, evaluate: 0, sample: 0 };
const cost = { weights: 0, evaluate: 0, sample: 0 };

const post = (msg, transfer = []) => self.postMessage(msg, transfer);
const messageOf = (e) => String(e?.message ?? e);

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
  post({ type: 'state', playing });
}

async function start() {
  try {
    await init();
    // navigator.gpu can exist with no usable adapter (blocklisted driver, GPU off): ask once.
    await adapterInfo();
  } catch (e) {
    post({ type: 'nogpu', message: messageOf(e) });
    return;
  }
  const list = presets().map((p) => ({ ...p, config: preset(p.name) }));
  post({ type: 'ready', presets: list });
}

async function create(config, play, origin = 'form') {
  const gen = ++generation;
  setPlaying(false);
  await exclusive(async () => {
    let fresh;
    try {
      fresh = await Kiln.create(config);
    } catch (e) {
      post({ type: 'error', op: 'create', message: messageOf(e) });
      return;
    }
    if (gen !== generation) {
      fresh.dispose();
      return;
    }
    run?.dispose();
    run = fresh;
    step = 0;
    chunk = 1;
    Object.keys(due).forEach((k) => { due[k] = 0; });
    run.on('metrics', (points, rates) => {
      if (gen !== generation || !points.length) return;
      step = Math.max(step, points[points.length - 1].step);
      post({ type: 'metrics', points, rates });
    });
    // A lost device is rebuilt from the latest snapshot inside kiln.js; the page says so.
    run.on('recovered', (r) => {
      if (gen === generation) post({ type: 'recovered', ...r });
    });
    post({ type: 'created', info: run.info, dataset: datasetOf(run), config, origin });
  });
  if (gen === generation && run) {
    if (origin !== 'checkpoint') await snapshot({ force: true });
    if (play) playLoop();
  }
  return gen === generation && !!run;
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
      post({ type: 'error', op: 'train', message: messageOf(e) });
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
  if (!wantWeights && !wantEval && !wantSample) return;
  await exclusive(async () => {
    if (gen !== generation || !run) return;
    const msg = { type: 'snapshot' };
    const transfer = [];
    try {
      if (wantWeights) {
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
      }
      if (wantEval) {
        const t0 = performance.now();
        msg.validation = await run.evaluate({ validation: true });
        cost.evaluate = performance.now() - t0;
        due.evaluate = performance.now() + Math.max(llama ? 1500 : 500, 6 * cost.evaluate);
      }
    } catch (e) {
      post({ type: 'error', op: 'snapshot', message: messageOf(e) });
    }
    if (gen !== generation) return;
    msg.step = step;
    post(msg, [...new Set(transfer)]);
    if (wantSample) await sample(gen);
  });
}

async function sample(gen) {
  const t0 = performance.now();
  try {
    const text = await run.generate(view.prompt, { maxTokens: 120, temperature: view.temperature, topK: 20, seed: step });
    if (gen === generation) post({ type: 'sample', step, prompt: view.prompt, text });
  } catch (e) {
    post({ type: 'error', op: 'sample', message: messageOf(e) });
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
    post({ type: 'error', op: 'step', message: messageOf(e) });
    return;
  }
  if (gen === generation) await snapshot({ force: true });
}

async function save() {
  if (!run) return;
  try {
    const bytes = await exclusive(() => run.save());
    post({ type: 'saved', bytes, step }, [bytes.buffer]);
  } catch (e) {
    post({ type: 'error', op: 'save', message: messageOf(e) });
  }
}

/** The config and step in a Kiln checkpoint's safetensors header; throws when it is not one. */
function checkpointMeta(bytes) {
  const bad = new Error('this file is not a Kiln checkpoint (a .safetensors file saved by Kiln)');
  if (!(bytes instanceof Uint8Array) || bytes.length < 8) throw bad;
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  if (!(n > 1 && n <= bytes.length - 8 && n <= 64 << 20)) throw bad;
  let meta;
  try {
    meta = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n))).__metadata__;
  } catch {
    throw bad;
  }
  if (meta?.format !== 'kiln-checkpoint-1' || typeof meta.config !== 'string') throw bad;
  return { config: JSON.parse(meta.config), step: Number(meta.step) || 0 };
}

/**
 * Loads a checkpoint: into the current run when it holds the same config, otherwise into a new
 * run built from the checkpoint's own config (the page then shows that config).
 */
async function load(bytes) {
  let meta;
  try {
    meta = checkpointMeta(bytes);
  } catch (e) {
    post({ type: 'error', op: 'load', message: messageOf(e) });
    return;
  }
  setPlaying(false);
  const same = run && JSON.stringify(run.info?.config) === JSON.stringify(meta.config);
  if (!same && !(await create(meta.config, false, 'checkpoint'))) return;
  const gen = generation;
  try {
    await exclusive(() => run.load(bytes));
  } catch (e) {
    post({ type: 'error', op: 'load', message: messageOf(e) });
    return;
  }
  if (gen !== generation) return;
  step = meta.step;
  post({ type: 'loaded', step });
  await snapshot({ force: true });
}

self.onmessage = (e) => {
  const m = e.data;
  switch (m.type) {
    case 'init': start(); break;
    case 'create': create(m.config, m.play); break;
    case 'play': playLoop(); break;
    case 'pause':
      playing = false;
      run?.pause?.();
      // Report "paused" once the step in flight has finished, so the step count is final.
      exclusive(() => {}).then(() => post({ type: 'state', playing }));
      break;
    case 'step': singleStep(); break;
    case 'view': {
      const shown = view.hidden && m.view.hidden === false;
      view = { ...view, ...m.view };
      // Back from a hidden tab: show the present at once.
      if (shown && run) snapshot({ force: true });
      break;
    }
    case 'refresh': if (!playing) snapshot({ force: true }); break;
    case 'sample': if (run && isLlama()) exclusive(() => sample(generation)); break;
    case 'save': save(); break;
    case 'load': load(m.bytes); break;
    case 'lose-device': run?.simulateDeviceLoss(); break;
    default: post({ type: 'error', op: 'protocol', message: `unknown message ${String(m.type).slice(0, 40)}` });
  }
};
