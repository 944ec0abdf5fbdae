// full.js — the page's second wasm, kiln_full: the library with the Cargo features its
// first-load wasm leaves out, `llama` (building and training Llamas, ≈ 37 KB gzipped) and
// `formats` (the export folder for PyTorch / Hugging Face, both ways, ≈ 47 KB). The first wasm
// trains MLPs only (the page's default run is one); full/kiln_full.js beside this file
// (scripts/build-full-wasm.sh) is loaded the first time a Llama is built, a run exported or an
// export folder opened. kiln-gpu's own wasm (the npm package) has everything and never loads it.
//
// A Llama run, and a run opened from an export folder, lives in the second wasm, on its own GPU
// device. An MLP run built in the first stays there and crosses over to be exported as an f32
// checkpoint, which holds all of it (weights, optimizer state, step, sampler state), so the
// folder is the one the run itself would write.

import { bindings, genesisText, loadGenesis, withGenesis } from './module.js';
import { asError } from './args.js';

let second = null; // Promise<the second wasm's bindings>, loaded once

/** Whether kiln-gpu's own wasm reads export folders (the npm package's does, the page's not). */
export const readsFolders = () => typeof bindings.Session.fromExport === 'function';

function fullModule() {
  second ??= (async () => {
    // A name in a variable, so that a bundler leaves the import alone (the npm package has no
    // such file and never asks for it).
    const name = './full/kiln_full.js';
    const module = await import(/* @vite-ignore */ new URL(name, import.meta.url).href);
    await module.default();
    return module;
  })();
  second.catch(() => {
    second = null; // a failed load may be retried
  });
  return second;
}

/** `make(module)` in the second wasm; a run on the built-in text hands it the text first. */
export async function inFullModule(make) {
  const module = await fullModule();
  return withGenesis(() => make(module), async () => module.provideGenesis(await genesisText()));
}

/**
 * The session `make(bindings)` builds in kiln-gpu's wasm; where that wasm has no Llamas (the
 * page's first) and the run is one, it answers `llama-missing` before acquiring a device, and
 * the run is built in the second wasm instead.
 */
export async function openSession(make) {
  try {
    return await withGenesis(() => make(bindings), loadGenesis);
  } catch (e) {
    if (asError(e).code !== 'llama-missing') throw e;
  }
  return inFullModule(make);
}

/**
 * The export folder of `session` (of either wasm): written by the second wasm, in a session of
 * its own (its own GPU device, destroyed after) where the run is the first wasm's.
 */
export async function exportFilesOf(session) {
  if (typeof session.exportFiles === 'function') return session.exportFiles();
  const checkpoint = await session.save(undefined);
  const copy = await inFullModule((m) => m.Session.fromCheckpoint(checkpoint));
  try {
    return await copy.exportFiles();
  } finally {
    copy.destroy();
    copy.free();
  }
}
