// render.js — the page's text, notices and buttons as one plain object (`ui`), drawn into the
// DOM once per frame by `render`. Message handlers in app.js only change `ui`; nothing else
// writes these elements, so what the page shows is one function of one object.

import { tokenLabel } from './samples.js';

const $ = (id) => document.getElementById(id);

/** Everything the bar, the notices and the cards say (charts and canvases draw themselves). */
export const ui = {
  status: { text: 'Starting WebGPU…', kind: 'loading' },
  /** What the chosen preset is (or where the config came from). */
  presetDesc: '',
  /** The form's or the worker's complaint about the config ('' when none), and the id of the input it is about ('' when none). */
  configError: '',
  invalidInput: '',
  /** The config message only says what the form waits for (shown as a notice, not an error). */
  configWaiting: false,
  linkError: '',
  /** Why WebGPU cannot be used here (the no-GPU section), or ''. */
  noGpu: '',
  gpuNotice: '',
  cpuNotice: '',
  stats: { step: '0', sps: '–', tps: '–', params: '–' },
  adapter: '',
  lossKind: '',
  valMetric: '',
  llama: false,
  dataTitle: 'Data & decision boundary',
  dataHint: '',
  excerpt: { text: '', title: '' },
  share: { url: '', note: '' },
  /** The latest sample {step, prompt, text}, or null. */
  sample: null,
  /** The next-token view {step, prompt, positions}, or null, and the position shown. */
  nextTokens: null,
  ntPosition: 0,
  sampleError: '',
  buttons: { ready: false, live: false, playing: false },
  /** Why a run or its checkpoint was not kept in the browser ('' when all is kept). */
  runsProblem: '',
};

const drawn = new Map();

/** Sets `el[prop] = value` only when it differs from what was last drawn there. */
function put(id, prop, value) {
  const key = `${id}.${prop}`;
  if (drawn.get(key) === value) return;
  drawn.set(key, value);
  $(id)[prop] = value;
}

const text = (id, value) => put(id, 'textContent', value);
const shown = (id, visible) => put(id, 'hidden', !visible);

function renderSample(sample) {
  if (drawn.get('sample') === sample) return;
  drawn.set('sample', sample);
  if (!sample) return $('sample-output').replaceChildren();
  // The prompt in bold, then the continuation — as text nodes, never HTML.
  const head = document.createElement('span');
  head.className = 'sample-step';
  head.textContent = `step ${sample.step}\n`;
  const b = document.createElement('b');
  b.textContent = sample.prompt;
  $('sample-output').replaceChildren(head, b, document.createTextNode(sample.text));
}

/** The chosen position's guesses as bars (widths through the CSSOM, which the CSP allows). */
function renderNextTokens(view, position) {
  shown('next-tokens', !!view);
  if (!view || (drawn.get('nt') === view && drawn.get('nt-pos') === position)) return;
  drawn.set('nt', view);
  drawn.set('nt-pos', position);
  const p = Math.min(position, view.positions.length - 1);
  put('nt-position', 'max', String(view.positions.length - 1));
  put('nt-position', 'value', String(p));
  const at = view.positions[p];
  text('nt-char', tokenLabel(at?.text ?? ''));
  $('nt-list').replaceChildren(...(at?.next ?? []).map((g) => {
    const li = document.createElement('li');
    const ch = document.createElement('code');
    ch.textContent = tokenLabel(g.text);
    const bar = document.createElement('span');
    bar.className = 'nt-bar';
    bar.style.width = `${(g.probability * 100).toFixed(1)}%`;
    const pct = document.createElement('span');
    pct.className = 'hint';
    pct.textContent = `${(g.probability * 100).toFixed(1)}%`;
    li.append(ch, bar, pct);
    return li;
  }));
}

function renderButtons({ ready, live, playing }) {
  put('play', 'disabled', !live || playing);
  put('pause', 'disabled', !live || !playing);
  put('step', 'disabled', !live || playing);
  put('reset', 'disabled', !ready);
  put('ckpt-save', 'disabled', !live);
  put('export-zip', 'disabled', !live);
  put('sample-now', 'disabled', !live);
  if (document.body.dataset.playing !== String(playing)) document.body.dataset.playing = String(playing);
}

/** The input marked as holding a refused value, if any. */
let marked = '';

/** Marks input `id` (aria-invalid, outlined in red) and unmarks the one marked before. */
function markInvalid(id) {
  if (id === marked) return;
  $(marked)?.removeAttribute('aria-invalid');
  $(id)?.setAttribute('aria-invalid', 'true');
  marked = id;
}

/** Draws `ui` into the page. */
export function render() {
  // A form edit the page refused leaves the previous run in place: the status must not read as
  // if the edit were running.
  const refused = ui.configError && ui.status.kind === 'ok' ? ' Your last edit is not applied: see the message above the form.' : '';
  text('status', ui.status.text + refused);
  if ($('status').dataset.state !== ui.status.kind) $('status').dataset.state = ui.status.kind;
  const slots = [['config-error', ui.configError], ['link-error', ui.linkError], ['gpu-notice', ui.gpuNotice], ['sample-error', ui.sampleError], ['runs-problem', ui.runsProblem]];
  for (const [id, value] of slots) {
    text(id, value);
    shown(id, !!value);
  }
  markInvalid(ui.invalidInput);
  put('config-error', 'className', ui.configWaiting ? 'notice' : 'error');
  text('cpu-notice-text', ui.cpuNotice);
  shown('cpu-notice', !!ui.cpuNotice);
  shown('nogpu', !!ui.noGpu);
  text('nogpu-reason', ui.noGpu);
  document.body.classList.toggle('no-gpu', !!ui.noGpu);
  text('preset-desc', ui.presetDesc);
  text('stat-step', ui.stats.step);
  text('stat-sps', ui.stats.sps);
  text('stat-tps', ui.stats.tps);
  text('stat-params', ui.stats.params);
  text('stat-mem', ui.stats.mem ?? '–');
  text('adapter', ui.adapter);
  text('loss-kind', ui.lossKind);
  text('val-metric', ui.valMetric);
  shown('sample-card', ui.llama);
  shown('data-card', !ui.llama);
  text('data-title', ui.dataTitle);
  text('data-hint', ui.dataHint);
  text('text-excerpt', ui.excerpt.text);
  put('text-excerpt', 'title', ui.excerpt.title);
  put('share-url', 'value', ui.share.url);
  text('share-note', ui.share.note);
  renderSample(ui.sample);
  renderNextTokens(ui.nextTokens, ui.ntPosition);
  renderButtons(ui.buttons);
}
