// kiln-gpu's module: loading the wasm (once, in a browser or in Node with an injected GPU) and
// the functions that need no run (presets, config validation, share links, adapter info).
// kiln.js re-exports them next to the Kiln class.

import initWasm, * as bindings from './kiln_wasm.js';
import { invalid, asError, checkKeys, configArg } from './args.js';

const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined';

let ready = null; // Promise<void> of the one initialization
let initialized = false; // set once the wasm module has started

/** Makes an injected GPU (Node's `webgpu` package) visible where wgpu looks: navigator.gpu in a Window. */
function installGpu(gpu) {
  const nav = globalThis.navigator;
  if (nav && nav.gpu !== gpu) {
    try {
      Object.defineProperty(nav, 'gpu', { value: gpu, configurable: true, writable: true });
    } catch {
      /* replaced below */
    }
  }
  if (!globalThis.navigator || globalThis.navigator.gpu !== gpu) {
    Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  }
  // wgpu reads navigator.gpu only from a Window or a worker's global scope.
  if (globalThis.Window === undefined && globalThis.WorkerGlobalScope === undefined) {
    Object.defineProperty(globalThis, 'Window', { value: class Window {}, configurable: true, writable: true });
  }
}

/** In Node, file paths and file: URLs are read from disk (Node's fetch cannot load them). */
async function resolveWasm(wasm) {
  if (!isNode) return wasm;
  const source = wasm ?? new URL('./kiln_wasm_bg.wasm', import.meta.url);
  const isFile = source instanceof URL ? source.protocol === 'file:' : typeof source === 'string' && !/^(https?|data|blob):/i.test(source);
  if (!isFile) return source;
  return readFromDisk(source);
}

/** Node's readFile, imported only in Node (a bundler leaves the dynamic import alone). */
async function readFromDisk(source, encoding) {
  const fsName = 'node:fs/promises';
  const { readFile } = await import(/* @vite-ignore */ fsName);
  return readFile(source, encoding);
}

/**
 * Loads and starts the wasm module (once; later calls return the same promise, though a `gpu`
 * they pass is still installed).
 * @param {import('./kiln').InitOptions} [options]
 */
export function init(options = {}) {
  let opts;
  try {
    opts = checkKeys(options, ['wasm', 'gpu'], 'init');
  } catch (e) {
    return Promise.reject(e);
  }
  // A GPU given later still counts (runs created after this call use it); the wasm loads once.
  if (opts.gpu) installGpu(opts.gpu);
  if (ready) return ready;
  ready = (async () => {
    await initWasm({ module_or_path: await resolveWasm(opts.wasm) });
    initialized = true;
  })();
  ready.catch(() => {
    ready = null; // a failed load may be retried, e.g. with another `wasm` source
  });
  return ready;
}

function wasm() {
  if (!initialized) throw new Error('kiln-gpu is not initialized: call `await init()` first');
  return bindings;
}
export async function ensureInit() {
  await (ready ?? init());
}

let genesis = null; // Promise<string> of the built-in text, fetched once
let provided = null; // Promise<void> of handing it to this module's wasm, once

/**
 * data/genesis.txt (beside this file; read from disk in Node), for a wasm built without it:
 * `loadGenesis` hands it to kiln-gpu's, js/full.js to its second wasm.
 */
export function genesisText() {
  genesis ??= (async () => {
    // A name in a variable, so that a bundler does not look for the file in the npm package
    // (whose wasm has the text built in and never asks).
    const name = 'genesis.txt';
    const url = new URL(name, import.meta.url);
    if (isNode && url.protocol === 'file:') return readFromDisk(url, 'utf8');
    const response = await fetch(url);
    if (!response.ok) throw invalid('genesis.txt', `fetching ${url} failed: HTTP ${response.status}`);
    return response.text();
  })();
  genesis.catch(() => {
    genesis = null; // a failed fetch may be retried by the next run
  });
  return genesis;
}

/** Hands the built-in text to the wasm, which checks that it is that file. Called by kiln.js on `corpus-missing`. */
export function loadGenesis() {
  provided ??= genesisText().then((text) => bindings.provideGenesis(text));
  provided.catch(() => {
    provided = null;
  });
  return provided;
}

/**
 * Runs `make()`, which builds a session in a wasm built without the built-in text (the page's,
 * and full.js's second wasm). The first time a run trains on that text the wasm answers
 * `corpus-missing`: then `provide()` hands the text to that wasm and `make()` runs once more.
 */
export async function withGenesis(make, provide) {
  try {
    return await make();
  } catch (e) {
    if (asError(e).code !== 'corpus-missing') throw e;
    await provide();
    return make();
  }
}

/** Calls a wasm function; its Errors (with `code` and `field`) pass through as they are. */
function call(fn) {
  try {
    return fn(wasm());
  } catch (e) {
    throw asError(e);
  }
}

/** `[{name, description}]` of the built-in presets. Needs `await init()`. */
export function presets() {
  return call((w) => w.presets());
}

/** A preset's SessionConfig (a plain object: edit it and pass it to `Kiln.create`). Needs `await init()`. */
export function preset(name) {
  if (typeof name !== 'string') throw invalid('preset', `expected a preset name, got ${typeof name}`);
  return call((w) => w.preset(name));
}

/**
 * Checks `config` (an object or its JSON) and returns it with every default filled in; throws an
 * Error with `code` 'invalid-input' naming the `field` otherwise. Needs `await init()`.
 */
export function validateConfig(config) {
  return call((w) => w.validateConfig(configArg(config)));
}

/** The config as URL state `{state, dropped}` (your text or points kept while they fit). Needs `await init()`. */
export function shareConfig(config) {
  return call((w) => w.shareConfig(configArg(config)));
}

/** The validated config in URL state made by `shareConfig`. Needs `await init()`. */
export function openShared(state) {
  if (typeof state !== 'string') throw invalid('state', `expected the URL state string, got ${typeof state}`);
  return call((w) => w.openShared(state));
}

/**
 * Your own points from CSV text (`x,y,label` or `x,target` rows; blank lines, `#` comments and a
 * header line skipped), parsed as a run would: `{inputs, labels | targets, inputDim, classes}`.
 * Needs `await init()`.
 */
export function parsePoints(csv) {
  if (typeof csv !== 'string') throw invalid('csv', `expected CSV text, got ${typeof csv}`);
  return call((w) => w.parsePoints(csv));
}

/** Acquires a WebGPU device and describes its adapter. */
export async function adapterInfo() {
  await ensureInit();
  try {
    return await bindings.adapterInfo();
  } catch (e) {
    throw asError(e);
  }
}

/** [step, loss, gradNorm, lossScale, …] as `[{step, loss, gradNorm, lossScale?}]`
 * (lossScale only in mixed precision, where it is never 0). */
export function toMetrics(flat) {
  const out = [];
  for (let i = 0; i + 3 < flat.length; i += 4) {
    const m = { step: flat[i], loss: flat[i + 1], gradNorm: flat[i + 2] };
    if (flat[i + 3] > 0) m.lossScale = flat[i + 3];
    out.push(m);
  }
  return out;
}

export { bindings };
