// protocol.js — the messages between the page thread (app.js) and the training worker
// (worker.js): their names in one place, their fields as JSDoc types. Both sides import it, so
// a message cannot be renamed on one side only.

/** Page → worker. */
export const ToWorker = Object.freeze({
  /** {hash}: start WebGPU; `hash` is the page's location.hash, which may hold a shared config. */
  init: 'init',
  /** {config: SessionConfig, play: boolean}: build a new run (replacing the current one). */
  create: 'create',
  play: 'play',
  pause: 'pause',
  step: 'step',
  /** {view: Partial<View>}: what the page shows, so the worker sends only what is seen. */
  view: 'view',
  /** Send a snapshot now (when paused). */
  refresh: 'refresh',
  /** Sample the Llama now. */
  sample: 'sample',
  /** {purpose?: 'keep', id?, dtype?: 'f32'|'f16'}: a checkpoint, to download or to keep with run `id` (answered by `saved`). */
  save: 'save',
  /** {bytes: Uint8Array}: a checkpoint file. */
  load: 'load',
  /** {hash}: the page's hash changed: open the config it holds. */
  openLink: 'open-link',
  /** {text}: parse your own points from CSV (answered by `points`). */
  parseCsv: 'parse-csv',
  /** {options: QuantizeOptions}: quantize the weights into a copy (answered by `quantized`). */
  quantize: 'quantize',
  /** The quantized copy as an MLX file (answered by `saved` with purpose 'quantized'). */
  saveQuantized: 'save-quantized',
  /** {bytes}: an MLX file Kiln wrote: a new run from it (answered by `created`, origin 'quantized'). */
  loadQuantized: 'load-quantized',
  /** {name}: the run as an export folder for PyTorch / Hugging Face, zipped under `name/` (answered by `saved`, purpose 'export'). */
  exportFolder: 'export-folder',
  /** {bytes}: a zipped export folder: a new run from it (answered by `created`, origin 'export'). */
  importFolder: 'import-folder',
  /** Destroy the GPU device, as a driver reset would: for testing recovery. */
  loseDevice: 'lose-device',
});

/** Worker → page. */
export const ToPage = Object.freeze({
  /** {presets: {name, description, config}[], linked: {config} | {error} | null} */
  ready: 'ready',
  /** {message}: WebGPU exists but Kiln cannot start on it. */
  nogpu: 'nogpu',
  /** {info: RunInfo, dataset: DatasetPreview, config, origin: 'form'|'checkpoint'|'quantized'|'export', share: Shared & {error?}} */
  created: 'created',
  /** {op, message, code, field, reason}: `op` says which request failed; `code`, `field` and `reason` are the KilnError's. */
  error: 'error',
  /** {playing} */
  state: 'state',
  /** {points: StepMetrics[], rates: Throughput} */
  metrics: 'metrics',
  /**
   * {step, weights?, ratios?, grid?, validation?: Evaluation, inspection?: Inspection,
   *  neurons?: NeuronOutputs, neuronsCurve?: boolean, attention?: AttentionMaps, attentionError?: string}
   */
  snapshot: 'snapshot',
  /** {step, prompt, text} */
  sample: 'sample',
  /** {step, prompt, positions: PositionGuesses[]}: the next-token view of the prompt */
  nextTokens: 'next-tokens',
  /** {bytes, step, purpose, id} */
  saved: 'saved',
  /** {step} */
  loaded: 'loaded',
  /** {reason, lostAt, resumedAt} */
  recovered: 'recovered',
  /** {config}: the config of a link opened after start-up. */
  link: 'link',
  /** {report: QuantizeReport, grids?: {full, quantized}, samples?: {prompt, full, quantized}} */
  quantized: 'quantized',
  /** {points: ClassSplit | RegressionSplit}: your CSV, parsed. */
  points: 'points',
});

/**
 * @typedef {object} View
 * @property {{size: number, extent: number[]} | null} grid  the decision-boundary grid, or null
 * @property {string} prompt  the sampling prompt
 * @property {number} temperature
 * @property {boolean} hidden  the tab is hidden: skip snapshots
 * @property {boolean} inside  the look-inside views are live: send their data
 */

/** The URL state in a location hash (`#c=<state>`), or null when there is none. */
export function linkState(hash) {
  if (!hash || hash === '#') return null;
  return hash.startsWith('#c=') ? hash.slice(3) : hash.slice(1);
}
