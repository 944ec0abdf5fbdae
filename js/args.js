// Argument checks shared by kiln.js: every bad value becomes an Error that names the field and
// says what is allowed, before anything reaches the wasm side.

/** An Error with a stable `code` (see ErrorCode in kiln-types.d.ts), as the wasm side makes them. */
export function kilnError(code, message, field) {
  const e = new Error(message);
  e.name = 'KilnError';
  e.code = code;
  if (field !== undefined) e.field = field;
  return e;
}

export function invalid(field, message) {
  return Object.assign(kilnError('invalid-input', `invalid \`${field}\`: ${message}`, field), { reason: message });
}

/**
 * Errors from wasm are `Error`s with a `code` already. Anything else (a string, a DOMException,
 * wgpu's own Error from inside the browser's WebGPU) becomes one with code 'gpu'.
 */
export function asError(e) {
  if (e instanceof Error && typeof e.code === 'string') return e;
  if (e instanceof Error) {
    e.code = 'gpu';
    return e;
  }
  return kilnError('gpu', typeof e === 'string' ? e : String(e?.message ?? e));
}

export function checkKeys(options, allowed, what) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw invalid(what, `expected an options object, got ${Array.isArray(options) ? 'an array' : typeof options}`);
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) throw invalid(key, `unknown option of ${what}; allowed: ${allowed.join(', ')}`);
  }
  return options;
}

/** A prompt for the wasm: wasm-bindgen would turn a number or an object into its text silently. */
export function checkPrompt(prompt) {
  if (typeof prompt !== 'string') throw invalid('prompt', `must be a string, got ${typeof prompt}`);
}

/**
 * The part of the input plane a grid covers, as numbers for the wasm: a half-width (default
 * 1.5) or an array of bounds. Rust checks the values (planeBox); wasm-bindgen would coerce
 * anything that is not a number.
 */
export function checkExtent(value) {
  const extent = value ?? 1.5;
  if (typeof extent === 'number') return [extent];
  if (Array.isArray(extent) && extent.every((v) => typeof v === 'number')) return extent;
  throw invalid('extent', `must be a number or an array of numbers, got ${Array.isArray(extent) ? 'an array holding a non-number' : typeof extent}`);
}

/** An integer in lo..=hi, for the arguments only the JS layer knows (steps, readEvery). */
export function checkInt(value, field, lo, hi) {
  if (!Number.isInteger(value) || value < lo || value > hi) {
    throw invalid(field, `must be an integer in ${lo}..=${hi}, got ${typeof value === 'string' ? JSON.stringify(value) : value}`);
  }
  return value;
}

/**
 * A whole number for a u32 argument of the wasm: wasm-bindgen would wrap -1 or truncate 1.5
 * silently, so the type is checked here; the allowed range is Rust's to check (and name).
 */
export function checkU32(value, field) {
  return checkInt(value, field, 0, 0xffff_ffff);
}

/** A config as the wasm side takes it: an object, or its JSON text. */
export function configArg(config) {
  if (typeof config === 'string') return config;
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw invalid('config', `expected a SessionConfig object, got ${config === null ? 'null' : Array.isArray(config) ? 'an array' : typeof config}`);
  }
  return config;
}

export function checkpointBytes(bytes, field = 'checkpoint') {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && bytes instanceof SharedArrayBuffer)) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw invalid(field, field === 'checkpoint' ? 'expected a Uint8Array or ArrayBuffer of a saved checkpoint' : "expected a Uint8Array or ArrayBuffer of the file's bytes");
}

/** An export folder as the wasm side takes it: an object of file name → Uint8Array. */
export function folderArg(files) {
  if (files === null || typeof files !== 'object' || Array.isArray(files)) {
    throw invalid('files', 'expected an object of file name → bytes (Uint8Array or ArrayBuffer), as exportFiles() returns');
  }
  return Object.fromEntries(Object.entries(files).map(([name, bytes]) => [name, checkpointBytes(bytes, name)]));
}

/** `value` if it is a boolean (or `fallback` when undefined), else an invalid-input Error naming `field`. */
export function checkBool(value, field, fallback = false) {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalid(field, `must be true or false, got ${JSON.stringify(value) ?? typeof value}`);
  return value;
}
