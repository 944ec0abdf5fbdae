// The check helpers of node-check.mjs: `check(name, fn)` prints `ok - name` or `not ok - name:
// reason` (tests/npm/run.mjs counts them); `assert`, `rejects` and `failsWith` state what a
// check expects; and the configs several checks share.

let failed = 0;

/** How many checks failed so far. */
export const failures = () => failed;

export async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    console.log(`ok - ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}: ${e?.stack ?? e}`);
  }
}

export function assert(cond, message) {
  if (!cond) throw new Error(message);
}

export async function rejects(promise, needle, what) {
  try {
    await promise;
  } catch (e) {
    assert(e instanceof Error, `${what}: rejected with a non-Error ${String(e)}`);
    assert(typeof e.code === 'string', `${what}: the Error has no code: ${e.message}`);
    assert(e.message.includes(needle), `${what}: message ${JSON.stringify(e.message)} lacks ${JSON.stringify(needle)}`);
    return e;
  }
  throw new Error(`${what}: resolved; a rejection naming ${needle} was expected`);
}

/** Rejects (or throws) with this `code` and `field`; returns the Error. */
export async function failsWith(call, code, field, what) {
  let error = null;
  try {
    await call();
  } catch (e) {
    error = e;
  }
  assert(error instanceof Error, `${what}: expected an Error of code ${code}, got ${error}`);
  assert(error.code === code && error.field === field, `${what}: code ${error.code}, field ${error.field} (${error.message}); expected ${code}, ${field}`);
  return error;
}

// Configs the checks share.

/** mlp-xor's config, written out: preset() needs the module started. */
export const preset_free = () => ({
  model: { mlp: { input_dim: 2, hidden: [8], output_dim: 2, activation: 'relu' } },
  data: { points: { task: 'xor', points: 200, noise: 0.01, validation_fraction: 0.2 } },
  batch: 32,
});

export const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** A d_model-16 Llama on a pangram repeated (vocabulary 32), with `llama` fields and top-level fields overridden. */
export const PANGRAM = 'the quick brown fox jumps over the lazy dog. '.repeat(20);
export const tinyLlama = (llama = {}, rest = {}) => ({
  model: { llama: { vocab: 32, d_model: 16, heads: 2, layers: 1, context: 16, hidden: 32, ...llama } },
  data: { text: { text: PANGRAM, validation_fraction: 0.1 } },
  batch: 4,
  ...rest,
});
