// notices.js — what the page says about its state and its troubles: the status line, the
// config error, the link error, the no-WebGPU explanation, device-loss recovery and the errors
// the worker reports, each written into `ui` (render.js draws it).

import { ui } from './render.js';
import { inputOf, custom } from './form.js';
import { csvRefused } from './files.js';

export function setStatus(text, kind = 'ok') {
  ui.status = { text, kind };
}

/**
 * Shows (or with '' clears) the config error. `input`: the id of the input it is about;
 * `waiting`: it only says what the form waits for (your text, your points), not what is wrong.
 */
export function showError(text, { input = '', waiting = false } = {}) {
  ui.configError = text;
  ui.invalidInput = text ? input : '';
  ui.configWaiting = !!text && waiting;
}

/**
 * A worker's bad-input error as the form says its own: the input's label (or the CSV's file name,
 * `file`) before what is wrong, and the input to mark. Rust names the config field (`optimizer.lr`).
 */
function asFormError({ field, reason, message }, file) {
  if (reason === undefined) return { text: message, input: '' };
  if (field === 'data.points.csv') return { text: `${file ?? 'Your points'}: ${reason}`, input: '' };
  const input = inputOf(field);
  return input ? { text: `${input.label}: ${reason}`, input: input.id } : { text: message, input: '' };
}

export function showLinkError(message) {
  ui.linkError = `Ignoring the link's config: ${message}. Showing a preset instead.`;
}

export function showNoGpu(reason) {
  ui.noGpu = reason;
  setStatus('WebGPU is not available — see below.', 'error');
}

/** The GPU device was lost and the worker rebuilt the run from its latest snapshot. */
export function showRecovered({ reason, lostAt, resumedAt }) {
  const redone = lostAt - resumedAt;
  ui.gpuNotice = `The GPU device was lost (${reason}). Kiln rebuilt the run on a new device from its snapshot at step ${resumedAt}`
    + (redone ? `; the ${redone} step${redone === 1 ? '' : 's'} after it were trained again, identically.` : '; nothing was lost.');
}

/** A request the worker could not carry out (`op`), shown where it belongs; `live`: a run is loaded. */
export function showWorkerError(error, live) {
  const { op, message } = error;
  if (op === 'sample') {
    // Beside the sample it is about, not in the config's error slot: the config is fine.
    ui.sampleError = `Sampling failed: ${message}`;
  } else if (op === 'link') {
    showLinkError(message);
  } else if (op === 'csv') {
    showError(asFormError(error, csvRefused()).text);
  } else if (op === 'create') {
    const { text, input } = asFormError(error, custom.file);
    showError(`Could not build this model: ${text}`, { input });
    setStatus(live ? 'The previous model is still loaded.' : 'Fix the config to start.', 'error');
  } else {
    showError(`${op} failed: ${message}`);
  }
}
