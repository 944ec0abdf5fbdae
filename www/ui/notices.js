// notices.js — what the page says about its state and its troubles: the status line, the
// config error, the link error, the no-WebGPU explanation, device-loss recovery and the errors
// the worker reports, each written into `ui` (render.js draws it).

import { ui } from './render.js';

export function setStatus(text, kind = 'ok') {
  ui.status = { text, kind };
}

export function showError(text) {
  ui.configError = text;
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
export function showWorkerError({ op, message }, live) {
  if (op === 'sample') {
    // Beside the sample it is about, not in the config's error slot: the config is fine.
    ui.sampleError = `Sampling failed: ${message}`;
  } else if (op === 'link') {
    showLinkError(message);
  } else if (op === 'csv') {
    showError(`Your CSV: ${message}`);
  } else if (op === 'create') {
    showError(`Could not build this model: ${message}`);
    setStatus(live ? 'The previous model is still loaded.' : 'Fix the config to start.', 'error');
  } else {
    showError(`${op} failed: ${message}`);
  }
}
