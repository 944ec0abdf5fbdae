// kiln-gpu: train tiny MLPs and tiny Llamas on WebGPU, in the browser or in Node.
//
// This module wraps the wasm-bindgen bindings (./kiln_wasm.js, built from src/web.rs) in the
// documented API (see kiln.d.ts): it loads the wasm, checks arguments, shapes typed arrays into
// plain objects, and runs every call of a run through one promise queue, because an async wasm
// method borrows the session while it awaits and an overlapping call would fail with
// wasm-bindgen's "recursive use of an object" error. Every Error it rejects with has a `code`.

import { bindings, ensureInit, toMetrics } from './module.js';
import {
  invalid, asError, kilnError, checkKeys, checkInt, checkU32, checkBool, configArg, checkpointBytes, folderArg,
  checkPrompt, checkExtent,
} from './args.js';
import { openSession, inFormats, readsFiles, moveToFull, exportFilesOf } from './full.js';

export { init, presets, preset, validateConfig, shareConfig, openShared, parsePoints, adapterInfo } from './module.js';
export { readCheckpoint } from './full.js';

const DISPOSED = 'this Kiln run was disposed';
const disposedError = () => kilnError('disposed', DISPOSED);
const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());
const yieldToEventLoop = () => new Promise((resolve) => setTimeout(resolve, 0));
const TOKEN = Symbol('kiln');
const EVENTS = ['metrics', 'error', 'recovered'];
// Errors after which the device may be lost (and the run rebuilt); bad input never is.
const RECOVERABLE = new Set(['device-lost', 'gpu', 'readback', 'out-of-memory']);

export class Kiln {
  #session;
  #queue = Promise.resolve();
  #disposed = false;
  #freed = false;
  #training = false;
  #pauseRequested = false;
  #listeners = { metrics: new Set(), error: new Set(), recovered: new Set() };
  #layout;
  #dataset;
  #slots;
  #snapshotEvery; // as last set, for a session moved to the page's second wasm

  /** Use `await Kiln.create(config)`. */
  constructor(token, session) {
    if (token !== TOKEN) throw new Error('use `await Kiln.create(config)` to start a Kiln run');
    this.#session = session;
    this.info = session.info();
    this.#layout = session.layout();
    this.#dataset = session.datasetPreview();
    this.#slots = bindings.Session.metricSlots();
    Object.freeze(this.info);
  }

  /** Validates `config`, acquires a WebGPU device and builds the run. Rejects with an Error naming the bad field. */
  static async create(config) {
    const arg = configArg(config);
    return Kiln.#open((b) => b.Session.create(arg));
  }

  /** A new run from a checkpoint of `save()`, with the checkpoint's own config; it continues exactly. */
  static async fromCheckpoint(bytes) {
    const view = checkpointBytes(bytes);
    return Kiln.#open((b) => b.Session.fromCheckpoint(view), inFormats);
  }

  /** A new run from an MLX-layout quantized file of `saveQuantized()`: its config, step and dequantized weights. */
  static async fromQuantized(bytes) {
    const view = checkpointBytes(bytes);
    return Kiln.#open((b) => b.Session.fromQuantized(view), inFormats);
  }

  /**
   * A new run from an export folder (file name → bytes): `exportFiles()`'s, trained on
   * anywhere, or another char-level Hugging Face Llama with its text as train.txt.
   */
  static async fromExport(files) {
    const arg = folderArg(files);
    return Kiln.#open((b) => b.Session.fromExport(arg), inFormats);
  }

  /**
   * Loads the wasm if needed, then wraps the session `make(bindings)` builds (its errors as
   * Errors). The page's wasm asks for the built-in text the first time a run trains on it, and
   * builds a Llama, and a run from a file, in its second wasm (full.js); `open` handles both.
   */
  static async #open(make, open = openSession) {
    await ensureInit();
    let session;
    try {
      session = await open(make);
    } catch (e) {
      throw asError(e);
    }
    return new Kiln(TOKEN, session);
  }

  /**
   * Runs `fn(session)` after every call queued before it; rejects once the run is disposed.
   * When the GPU device turns out to be lost, the run is rebuilt on a new device from its
   * latest snapshot ('recovered' event) and `fn` runs once more there.
   */
  #enqueue(fn) {
    if (this.#disposed) return Promise.reject(disposedError());
    const result = this.#queue.then(async () => {
      if (this.#freed) throw disposedError();
      try {
        return await fn(this.#session);
      } catch (e) {
        if (!(await this.#recoverIfLost(asError(e)))) throw asError(e);
      }
      try {
        return await fn(this.#session);
      } catch (e) {
        throw asError(e);
      }
    });
    this.#queue = result.catch(() => {});
    return result;
  }

  /** After a failed call: when the device is lost, rebuilds the run and says so; false otherwise. */
  async #recoverIfLost(error) {
    const s = this.#session;
    if (!s || !RECOVERABLE.has(error.code)) return false; // bad input or a bad file, not the GPU
    // The browser reports a loss through a promise that may settle a task after the failure.
    let reason = s.deviceLost();
    for (let i = 0; i < 5 && reason === undefined; i++) {
      await new Promise((r) => setTimeout(r, 10));
      reason = s.deviceLost();
    }
    if (reason === undefined || this.#freed) return false;
    this.#emit('recovered', await s.recover());
    return true;
  }

  /** Snapshot the state for recovery from device loss at most every `steps` steps (0: never; default 100, more for models over a million parameters). */
  setSnapshotEvery(steps) {
    const n = checkU32(steps, 'steps');
    return this.#enqueue(async (s) => s.setSnapshotEvery((this.#snapshotEvery = n)));
  }

  /**
   * Runs `fn(session)` in a session that reads files and quantizes: the page's first wasm does
   * neither, so there the run first moves to its second wasm (full.js) and lives there after.
   */
  #enqueueWithFormats(fn) {
    return this.#enqueue(async (s) => fn(readsFiles(s) ? s : (this.#session = await moveToFull(s, this.#snapshotEvery))));
  }

  /** Destroys the GPU device under the run, as a driver reset would: for testing recovery. */
  simulateDeviceLoss() {
    return this.#enqueue(async (s) => s.destroy());
  }

  /** Subscribes to 'metrics', 'error' or 'recovered'; returns a function that unsubscribes. */
  on(event, callback) {
    if (!EVENTS.includes(event)) throw invalid('event', `must be one of ${EVENTS.join(', ')}, got ${JSON.stringify(event)}`);
    if (typeof callback !== 'function') throw invalid('callback', 'must be a function');
    this.#listeners[event].add(callback);
    return () => this.off(event, callback);
  }

  off(event, callback) {
    this.#listeners[event]?.delete(callback);
  }

  #emit(event, ...args) {
    for (const cb of [...this.#listeners[event]]) {
      try {
        cb(...args);
      } catch (e) {
        // A listener's bug must not stop training; report it where developers look.
        console.error(`kiln-gpu: a '${event}' listener threw`, e);
      }
    }
  }

  /** One chunk: submit `n` steps, read their metrics back (waits for the GPU), time it. */
  #chunk(n) {
    return this.#enqueue(async (s) => {
      const t0 = now();
      s.train(n);
      const metrics = toMetrics(await s.readMetrics());
      const seconds = Math.max((now() - t0) / 1000, 1e-6);
      metrics.stepsPerSecond = n / seconds;
      metrics.tokensPerSecond = (n * this.info.tokensPerStep) / seconds;
      return metrics;
    });
  }

  #report(metrics) {
    this.#emit('metrics', metrics, { stepsPerSecond: metrics.stepsPerSecond, tokensPerSecond: metrics.tokensPerSecond });
  }

  /**
   * Trains `steps` steps in chunks of `readEvery`, emitting 'metrics' after each chunk and
   * yielding to the event loop between chunks. Resolves with the last step's metrics (early
   * after `pause()` or `dispose()`).
   */
  async train(options = {}) {
    if (this.#disposed) throw disposedError();
    const o = checkKeys(options, ['steps', 'readEvery'], 'train');
    const steps = checkInt(o.steps, 'steps', 0, 1e9);
    const readEvery = checkInt(o.readEvery ?? 50, 'readEvery', 1, this.#slots);
    if (this.#training) throw kilnError('busy', 'this Kiln run is already training: await it, or pause() it first');
    this.#training = true;
    this.#pauseRequested = false;
    let last = null;
    try {
      for (let done = 0; done < steps && !this.#pauseRequested && !this.#disposed; ) {
        const n = Math.min(readEvery, steps - done);
        const metrics = await this.#chunk(n);
        done += n;
        if (metrics.length) last = metrics[metrics.length - 1];
        this.#report(metrics);
        await yieldToEventLoop();
      }
    } catch (e) {
      const err = asError(e);
      if (err.code !== 'disposed') this.#emit('error', err);
      throw err;
    } finally {
      this.#training = false;
    }
    return last;
  }

  /** Stops a running `train()` after its current chunk (it then resolves). */
  pause() {
    this.#pauseRequested = true;
  }

  /** Whether a `train()` is in progress. */
  get training() {
    return this.#training;
  }

  /** One training step; resolves with its metrics (and emits 'metrics'). */
  async step() {
    try {
      const metrics = await this.#chunk(1);
      this.#report(metrics);
      return metrics[metrics.length - 1];
    } catch (e) {
      if (e.code !== 'disposed') this.#emit('error', e);
      throw e;
    }
  }

  /**
   * Loss and accuracy (null for regression) on the validation (default) or training split:
   * every point, or every next token of a text split up to `maxTokens` (default 16,384; in
   * whole windows), and how many were `scored`.
   */
  async evaluate(options = {}) {
    const o = checkKeys(options, ['validation', 'maxTokens', 'quantized'], 'evaluate');
    const validation = checkBool(o.validation, 'validation', true);
    const maxTokens = o.maxTokens === undefined ? undefined : checkU32(o.maxTokens, 'maxTokens');
    const quantized = checkBool(o.quantized, 'quantized');
    return this.#enqueue((s) => s.evaluate(validation, maxTokens, quantized));
  }

  /** Every parameter tensor, in model order, with a copy of its values. */
  weights() {
    return this.#enqueue(async (s) => {
      const flat = await s.weights();
      return this.#layout.map(({ name, shape, offset, len }) => ({ name, shape: [...shape], data: flat.slice(offset, offset + len) }));
    });
  }

  /** ‖Δw‖ / ‖w‖ per tensor at the last step trained (GPU-computed each step; zeros before any). */
  updateRatios() {
    return this.#enqueue(async (s) => s.updateRatios());
  }

  /**
   * A 2-D classifier's probability of every class on a size×size grid of cell centres over the
   * box `extent` names ((size, size, classes), row-major, first row at the top), or a
   * regression MLP's predictions at `size` evenly spaced x across it.
   */
  async predictGrid(options = {}) {
    const o = checkKeys(options, ['size', 'extent', 'quantized'], 'predictGrid');
    const size = checkU32(o.size ?? 64, 'size');
    const asked = checkExtent(o.extent);
    const quantized = checkBool(o.quantized, 'quantized');
    const kind = this.info.regression ? 'regression' : 'classification';
    const classes = this.info.regression ? 1 : this.info.classes;
    return this.#enqueue(async (s) => {
      const extent = Array.from(bindings.planeBox(asked));
      return { kind, size, extent, classes, values: await s.predictGrid(size, extent, quantized) };
    });
  }

  /** Continues `prompt` with a Llama run (characters the training text contains). */
  async generate(prompt, options) {
    checkPrompt(prompt);
    // The options (sampling, and `quantized`: which weights) are checked on the Rust side.
    return this.#enqueue((s) => s.generate(prompt, options));
  }

  /**
   * Llama only: for each of the prompt's last `context` characters, the `k` (default 5) most
   * likely next characters with their probabilities, most likely first.
   */
  async nextTokens(prompt, options = {}) {
    checkPrompt(prompt);
    const k = checkU32(checkKeys(options, ['k'], 'nextTokens').k ?? 5, 'k');
    return this.#enqueue((s) => s.nextTokens(prompt, k));
  }

  /**
   * MLP only: every neuron's output over the input plane from one forward pass — the inputs,
   * each hidden layer after its activation, and the outputs — on the same grid (or curve) as
   * `predictGrid`. Each layer's `values` is (neurons, points), neuron by neuron.
   */
  async neuronOutputs(options = {}) {
    const o = checkKeys(options, ['size', 'extent'], 'neuronOutputs');
    const size = checkU32(o.size ?? 32, 'size');
    const extent = checkExtent(o.extent);
    return this.#enqueue((s) => s.neuronOutputs(size, extent));
  }

  /** Llama only: every layer's and head's attention probabilities over the prompt's last `context` characters. */
  async attentionMaps(prompt) {
    checkPrompt(prompt);
    return this.#enqueue((s) => s.attentionMaps(prompt));
  }

  /**
   * Histograms (`bins`, default 32) and quantiles of every parameter tensor's weights,
   * gradients and last update, and each layer's gradient RMS and activations, as the last step
   * left them (computed on the GPU; only the summaries are read back).
   */
  async inspect(options = {}) {
    const bins = checkU32(checkKeys(options, ['bins'], 'inspect').bins ?? 32, 'bins');
    return this.#enqueue((s) => s.inspect(bins));
  }

  /**
   * Quantizes the current weights ({ bits: 8 | 4, groupSize: 32 | 64 | 128 }, default 8 and 64)
   * into a copy beside them (the run's own weights are untouched) and scores both on the
   * validation split. `{ quantized: true }` on evaluate, predictGrid and generate then uses the
   * copy; `saveQuantized()` writes it as an MLX-layout safetensors file.
   */
  async quantize(options) {
    return this.#enqueueWithFormats((s) => s.quantize(options));
  }

  /** The quantized copy as an MLX-layout safetensors file (`Kiln.fromQuantized` reads it back). */
  saveQuantized() {
    return this.#enqueueWithFormats(async (s) => s.quantizedFile());
  }

  /** The run as a folder for PyTorch / Hugging Face (file name → Uint8Array; see the README). */
  exportFiles() {
    return this.#enqueue((s) => exportFilesOf(s));
  }

  /** A safetensors checkpoint: weights, optimizer state, config, step and sampler state; `{ dtype: 'f16' }` halves the file. */
  async save(options = {}) {
    const dtype = checkKeys(options, ['dtype'], 'save').dtype; // 'f32' | 'f16', checked by Rust
    return this.#enqueue((s) => s.save(dtype));
  }

  /** Restores a checkpoint of the same model (from `save()`); on error the run is unchanged. */
  async load(bytes) {
    const view = checkpointBytes(bytes);
    return this.#enqueueWithFormats((s) => s.load(view));
  }

  /** The training data: points (with the validation split) or a text excerpt and its vocabulary. */
  dataset() {
    if (this.#disposed) throw disposedError();
    return this.#dataset;
  }

  /** Whether `dispose()` was called. */
  get disposed() {
    return this.#disposed;
  }

  /**
   * Stops training, waits for calls already queued, then releases the GPU device and the wasm
   * memory. Every later call rejects with an Error of code 'disposed'.
   */
  dispose() {
    if (this.#disposed) return this.#queue;
    this.#disposed = true;
    this.#pauseRequested = true;
    const done = this.#queue.then(() => {
      this.#freed = true;
      const s = this.#session;
      this.#session = null;
      try {
        s.destroy();
      } finally {
        s.free();
      }
    });
    this.#queue = done.catch(() => {});
    return this.#queue;
  }
}
