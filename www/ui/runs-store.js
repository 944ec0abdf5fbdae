// runs-store.js — the runs a person trained, kept in the browser's IndexedDB (through the `idb`
// library) so a reload or a crash loses nothing older than the last snapshot. Two stores: `runs`
// (config, name, summary and thinned loss curve: small, listed whole) and `checkpoints` (the
// latest safetensors bytes of each run, read only when a run is reopened).

import { openDB } from '../idb/index.js';

const DB = 'kiln-runs';

let db = null;
function open() {
  db ??= openDB(DB, 1, {
    upgrade(d) {
      d.createObjectStore('runs', { keyPath: 'id' });
      d.createObjectStore('checkpoints');
    },
  });
  return db;
}

/** Why storing failed, in words a person can act on (a full quota above all). */
export function storageProblem(e) {
  if (e?.name === 'QuotaExceededError') {
    return 'the browser\'s storage for this page is full, so the latest checkpoint was not kept (older ones and the runs table are). Delete runs you no longer need in the Runs table.';
  }
  return `the browser refused to store it (${e?.message ?? e})`;
}

/** Every kept run (without checkpoints), the most recently updated first. */
export async function listRuns() {
  const runs = await (await open()).getAll('runs');
  return runs.sort((a, b) => b.updated - a.updated);
}

export async function putRun(run) {
  await (await open()).put('runs', run);
}

/** Keeps `bytes` as run `id`'s latest checkpoint (replacing the one before). */
export async function putCheckpoint(id, bytes) {
  await (await open()).put('checkpoints', bytes, id);
}

export async function getCheckpoint(id) {
  return (await open()).get('checkpoints', id);
}

export async function deleteRun(id) {
  const d = await open();
  const tx = d.transaction(['runs', 'checkpoints'], 'readwrite');
  await Promise.all([tx.objectStore('runs').delete(id), tx.objectStore('checkpoints').delete(id), tx.done]);
}
