// full.js — the page's second wasm, kiln_full: the library with the Cargo features its
// first-load wasm leaves out, `llama` (building and training Llamas, ≈ 37 KB gzipped) and
// `formats` (reading checkpoints and quantized files, quantizing, and the export folder for
// PyTorch / Hugging Face both ways, ≈ 42 + 47 KB). The first wasm trains MLPs and writes their
// checkpoints (the page keeps its runs that way); full/kiln_full.js beside this file
// (scripts/build-full-wasm.sh) is loaded the first time a Llama is built, a file opened, a run
// quantized or exported. kiln-gpu's own wasm (the npm package) has everything and never loads it.
//
// A Llama run, and a run opened from a file, lives in the second wasm, on its own GPU device. An
// MLP run built in the first crosses over as an f32 checkpoint, which holds all of it (weights,
// optimizer state, step, sampler state): a copy of it to be exported (the folder is the one the
// run itself would write), or the run itself, moved, the first time it loads a checkpoint or
// quantizes.

import { bindings, ensureInit, genesisText, loadGenesis, withGenesis } from './module.js';
import { invalid, asError, checkpointBytes } from './args.js';

let second = null; // Promise<the second wasm's bindings>, loaded once

/** Whether kiln-gpu's own wasm has the `formats` feature (the npm package's does, the page's not). */
const hasFormats = () => typeof bindings.Session.fromExport === 'function';

function fullModule() {
  second ??= (async () => {
    // A name in a variable, so that a bundler leaves the import alone (the npm package has no
    // such file and never asks for it).
    const name = './full/kiln_full.js';
    try {
      const module = await import(/* @vite-ignore */ new URL(name, import.meta.url).href);
      await module.default();
      return module;
    } catch (e) {
      // Named like genesis.txt's failed fetch: the file, and that trying again may work.
      throw invalid(name.slice(2), `loading the page's second wasm failed (${asError(e).message}); check the connection and try again`);
    }
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

/** `make(bindings)` where files are read: in kiln-gpu's own wasm if it can, else in the second. */
export const inFormats = (make) => (hasFormats() ? openSession(make) : inFullModule(make));

/** `{config, step}` from a checkpoint's header, without loading it (kiln-gpu's API). */
export async function readCheckpoint(bytes) {
  const view = checkpointBytes(bytes);
  await ensureInit();
  try {
    return await inFormats((b) => b.readCheckpoint(view));
  } catch (e) {
    throw asError(e);
  }
}

/** Whether `session` (of either wasm) reads files and quantizes; else `moveToFull` it first. */
export const readsFiles = (session) => typeof session.load === 'function';

/** A new session of the second wasm holding all of the first wasm's `session` (an f32 checkpoint). */
async function copyInFull(session) {
  const checkpoint = await session.save(undefined);
  return inFullModule((m) => m.Session.fromCheckpoint(checkpoint));
}

/**
 * The export folder of `session` (of either wasm): written by the second wasm, in a session of
 * its own (its own GPU device, destroyed after) where the run is the first wasm's.
 */
export async function exportFilesOf(session) {
  if (typeof session.exportFiles === 'function') return session.exportFiles();
  const copy = await copyInFull(session);
  try {
    return await copy.exportFiles();
  } finally {
    copy.destroy();
    copy.free();
  }
}

/**
 * The first wasm's `session` rebuilt in the second, where it then lives (snapshots every
 * `snapshotEvery` steps where set); the first's is released only once the second's is built, so
 * a failure leaves the run where it was.
 */
export async function moveToFull(session, snapshotEvery) {
  const moved = await copyInFull(session);
  if (snapshotEvery !== undefined) moved.setSnapshotEvery(snapshotEvery);
  session.destroy();
  session.free();
  return moved;
}
