// formats.js — the export folder for PyTorch / Hugging Face, both ways, where kiln-gpu's wasm
// was built without it (the page's is: the Cargo feature `formats` is ≈ 47 KB of its first load
// gzipped). There the work runs in a second wasm, formats/kiln_formats.js beside this file
// (scripts/build-formats-wasm.sh), loaded on first use: the run crosses over as an f32
// checkpoint, which holds all of it (weights, optimizer state, step, sampler state), so the
// folder is the one the run itself would write. The npm package's wasm has the formats built in
// and never loads it.

import { bindings, genesisText, withGenesis } from './module.js';

let second = null; // Promise<the second wasm's bindings>, loaded once

/** Whether kiln-gpu's own wasm writes and reads export folders. */
export const hasFormats = () => typeof bindings.Session.fromExport === 'function';

function formatsModule() {
  second ??= (async () => {
    // A name in a variable, so that a bundler leaves the import alone (the npm package has no
    // such file and never asks for it).
    const name = './formats/kiln_formats.js';
    const module = await import(/* @vite-ignore */ new URL(name, import.meta.url).href);
    await module.default();
    return module;
  })();
  second.catch(() => {
    second = null; // a failed load may be retried
  });
  return second;
}

/**
 * Runs `fn` on a session of the second wasm from `open(bindings)` (a run on the built-in text
 * is handed the text first), then destroys the session (its own GPU device).
 */
async function withSession(open, fn) {
  const module = await formatsModule();
  const session = await withGenesis(() => open(module), async () => module.provideGenesis(await genesisText()));
  try {
    return await fn(session);
  } finally {
    session.destroy();
    session.free();
  }
}

/** The export folder of `session` (a session of kiln-gpu's wasm), written by the second wasm. */
export async function exportFilesOf(session) {
  const checkpoint = await session.save(undefined);
  return withSession((m) => m.Session.fromCheckpoint(checkpoint), (s) => s.exportFiles());
}

/** An f32 checkpoint of the run an export folder (file name → Uint8Array) holds, read by the second wasm. */
export async function checkpointOfExport(files) {
  return withSession((m) => m.Session.fromExport(files), (s) => s.save(undefined));
}
