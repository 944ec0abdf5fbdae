// form.js — the model, data and optimizer panels: a SessionConfig written into the form
// (`writeConfig`) and read back out of it (`readConfig`), plus the user's own points and text.

const $ = (id) => document.getElementById(id);

/** The user's drawn or uploaded points: {x, y, label} (classes) or {x, y} (regression, y = target). */
export const custom = { kind: 'classes', points: [] };
/** Largest number of points the page lets you draw or upload. */
export const MAX_CUSTOM_POINTS = 20_000;

/** Extra llama fields the form has no inputs for (rope_theta, norm_eps), kept from the last config. */
let llamaExtras = {};
/** The vocabulary the built-in corpus (Genesis) needs, as the presets give it. */
export const GENESIS_VOCAB = 60;
let corpusVocab = GENESIS_VOCAB;

function number(id, field, { int = false, min = -Infinity, max = Infinity } = {}) {
  const el = $(id);
  const v = Number(el.value);
  if (el.value.trim() === '' || !Number.isFinite(v) || (int && !Number.isInteger(v)) || v < min || v > max) {
    const range = `${Number.isFinite(min) ? min : ''}..${Number.isFinite(max) ? max : ''}`;
    throw new Error(`${field}: enter ${int ? 'a whole number' : 'a number'} in ${range} (got "${el.value.slice(0, 20)}")`);
  }
  return v;
}

export function modelKind() {
  return document.querySelector('input[name="model-kind"]:checked').value;
}

export function isRegressionTask() {
  const task = $('pt-task').value;
  return task === 'sine' || task === 'piecewise' || (task === 'custom' && custom.kind === 'regression');
}

/** Distinct characters of a text, as the tokenizer counts them (carriage returns dropped). */
export function vocabOf(text) {
  const set = new Set(text.replaceAll('\r', ''));
  return set.size;
}

export function customCsv() {
  return custom.points
    .map((p) => (custom.kind === 'regression' ? `${p.x.toFixed(4)},${p.y.toFixed(4)}` : `${p.x.toFixed(4)},${p.y.toFixed(4)},${p.label}`))
    .join('\n');
}

/** Parses a CSV of `x,y,label` or `x,target` rows into `custom`; throws naming the bad line. */
export function loadCsv(text) {
  const rows = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  if (!rows.length) throw new Error('CSV: no rows found');
  const first = rows[0].split(',');
  const header = first.some((c) => c.trim() !== '' && !Number.isFinite(Number(c)));
  const body = header ? rows.slice(1) : rows;
  const cols = (header ? first : body[0]?.split(',') ?? []).length;
  if (cols !== 2 && cols !== 3) throw new Error('CSV: expected 3 columns (x,y,label) or 2 (x,target)');
  if (body.length > MAX_CUSTOM_POINTS) throw new Error(`CSV: ${body.length} rows; at most ${MAX_CUSTOM_POINTS}`);
  const points = body.map((line, i) => {
    const c = line.split(',').map((s) => Number(s.trim()));
    const where = `CSV line ${i + 1 + (header ? 1 : 0)}`;
    if (c.length !== cols || c.some((v) => !Number.isFinite(v) || Math.abs(v) > 1e6)) throw new Error(`${where}: expected ${cols} numbers`);
    if (cols === 2) return { x: c[0], y: c[1] };
    if (!Number.isInteger(c[2]) || c[2] < 0 || c[2] > 9) throw new Error(`${where}: label must be 0..9`);
    return { x: c[0], y: c[1], label: c[2] };
  });
  if (!points.length) throw new Error('CSV: no rows found');
  custom.kind = cols === 2 ? 'regression' : 'classes';
  custom.points = points;
}

/** Reads the form into a SessionConfig; throws an Error naming the field when an input is not usable. */
export function readConfig() {
  const kind = modelKind();
  const batch = number('batch', 'Batch', { int: true, min: 1, max: 65536 });
  const seed = number('seed', 'Seed', { int: true, min: 0, max: Number.MAX_SAFE_INTEGER });
  let model, data;
  if (kind === 'mlp') {
    const text = $('mlp-hidden').value.trim();
    const hidden = text === '' ? [] : text.split(/[\s,]+/).filter(Boolean).map(Number);
    if (hidden.some((w) => !Number.isInteger(w) || w < 1 || w > 4096)) throw new Error('Hidden widths: enter whole numbers 1..4096 separated by commas, e.g. "16, 16"');
    if (hidden.length > 15) throw new Error('Hidden widths: at most 15 hidden layers');
    const task = $('pt-task').value;
    const regression = isRegressionTask();
    const points = {
      task: task === 'custom' ? (regression ? 'sine' : 'spiral') : task,
      points: number('pt-points', 'Points', { int: true, min: 1, max: 100000 }),
      noise: number('pt-noise', 'Noise', { min: 0, max: 1 }),
      validation_fraction: number('pt-val', 'Validation', { min: 0.05, max: 0.5 }),
    };
    let outputs = regression ? 1 : 2;
    if (task === 'custom') {
      if (custom.points.length < 10) throw new Error('Your points: add at least 10 points (click the data plot) or upload a CSV');
      points.csv = customCsv();
      if (!regression) outputs = Math.max(2, ...custom.points.map((p) => p.label + 1));
    }
    model = { mlp: { input_dim: regression ? 1 : 2, hidden, output_dim: outputs, activation: $('mlp-activation').value } };
    data = { points };
  } else {
    const llama = {
      vocab: corpusVocab,
      d_model: number('ll-d_model', 'd_model', { int: true, min: 2, max: 4096 }),
      heads: number('ll-heads', 'Heads', { int: true, min: 1, max: 4096 }),
      layers: number('ll-layers', 'Layers', { int: true, min: 1, max: 48 }),
      context: number('ll-context', 'Context', { int: true, min: 1, max: 1024 }),
      hidden: number('ll-hidden', 'SwiGLU width', { int: true, min: 1, max: 16384 }),
      ...llamaExtras,
    };
    const text = { validation_fraction: number('tx-val', 'Validation', { min: 0.05, max: 0.5 }) };
    if ($('tx-source').value === 'custom') {
      const t = $('tx-text').value;
      if (t.replaceAll('\r', '').length < 64) throw new Error('Your text: paste at least 64 characters');
      text.text = t;
      llama.vocab = Math.max(2, vocabOf(t));
    }
    model = { llama };
    data = { text };
  }
  const schedule = $('opt-schedule').value === 'constant'
    ? { kind: 'constant' }
    : {
        kind: 'warmup_cosine',
        warmup_steps: number('opt-warmup', 'Warmup steps', { int: true, min: 0 }),
        total_steps: number('opt-total', 'Total steps', { int: true, min: 1 }),
        min_lr_fraction: number('opt-minlr', 'Min LR fraction', { min: 0, max: 1 }),
      };
  const optimizer = {
    kind: $('opt-kind').value,
    lr: number('opt-lr', 'Learning rate', { min: 0, max: 10 }),
    beta1: number('opt-beta1', 'β₁', { min: 0, max: 1 }),
    beta2: number('opt-beta2', 'β₂', { min: 0, max: 1 }),
    eps: 1e-8,
    weight_decay: number('opt-wd', 'Weight decay', { min: 0, max: 10 }),
    momentum: number('opt-momentum', 'Momentum', { min: 0, max: 1 }),
    clip: number('opt-clip', 'Clip norm', { min: 0 }),
    accumulation: number('opt-accum', 'Accumulation', { int: true, min: 1, max: 64 }),
    schedule,
  };
  return { model, data, batch, optimizer, seed };
}

function set(id, v) {
  if (v !== undefined && v !== null) $(id).value = String(v);
}

/** Fills the form from a SessionConfig (one that passed share.checkConfig or came from Kiln). */
export function writeConfig(c) {
  const kind = c.model.mlp ? 'mlp' : 'llama';
  document.querySelector(`input[name="model-kind"][value="${kind}"]`).checked = true;
  if (c.model.mlp) {
    const m = c.model.mlp;
    set('mlp-hidden', m.hidden.join(', '));
    set('mlp-activation', m.activation);
  } else {
    const { vocab, d_model, heads, layers, context, hidden, ...extras } = c.model.llama;
    llamaExtras = extras;
    if (c.data.text?.text == null) corpusVocab = Math.max(GENESIS_VOCAB, vocab);
    set('ll-d_model', d_model); set('ll-heads', heads); set('ll-layers', layers);
    set('ll-context', context); set('ll-hidden', hidden);
  }
  if (c.data.points) {
    const p = c.data.points;
    if (p.csv != null) {
      try {
        loadCsv(p.csv);
      } catch { custom.points = []; }
      set('pt-task', 'custom');
      set('custom-kind', custom.kind);
    } else {
      set('pt-task', p.task);
    }
    set('pt-points', p.points); set('pt-noise', p.noise); set('pt-val', p.validation_fraction);
  } else {
    const t = c.data.text;
    set('tx-source', t.text != null ? 'custom' : 'genesis');
    if (t.text != null) $('tx-text').value = t.text;
    set('tx-val', t.validation_fraction);
  }
  set('batch', c.batch);
  set('seed', c.seed ?? 0);
  const o = c.optimizer ?? {};
  set('opt-kind', o.kind); set('opt-lr', o.lr); set('opt-beta1', o.beta1); set('opt-beta2', o.beta2);
  set('opt-wd', o.weight_decay); set('opt-momentum', o.momentum); set('opt-clip', o.clip); set('opt-accum', o.accumulation);
  const s = o.schedule ?? { kind: 'constant' };
  set('opt-schedule', s.kind);
  if (s.kind === 'warmup_cosine') {
    set('opt-warmup', s.warmup_steps); set('opt-total', s.total_steps); set('opt-minlr', s.min_lr_fraction);
  }
  syncVisibility();
}

/** Shows the fields that apply to the chosen model, data source, optimizer and schedule. */
export function syncVisibility() {
  const mlp = modelKind() === 'mlp';
  $('mlp-fields').hidden = !mlp;
  $('llama-fields').hidden = mlp;
  $('points-fields').hidden = !mlp;
  $('text-fields').hidden = mlp;
  const isCustom = $('pt-task').value === 'custom';
  $('custom-fields').hidden = !isCustom;
  for (const id of ['pt-points', 'pt-noise']) $(id).closest('label').hidden = isCustom;
  $('custom-count').textContent = isCustom ? `${custom.points.length} points` : '';
  $('custom-kind').value = custom.kind;
  $('draw-class').closest('label').hidden = custom.kind === 'regression';
  $('tx-text').hidden = $('tx-source').value !== 'custom';
  const sgd = $('opt-kind').value === 'sgd';
  document.querySelectorAll('.adamw-only').forEach((e) => { e.hidden = sgd; });
  document.querySelectorAll('.sgd-only').forEach((e) => { e.hidden = !sgd; });
  $('schedule-fields').hidden = $('opt-schedule').value === 'constant';
}

/** Calls `cb(source)` after any edit; `source` is the element id (or radio name) that changed. */
export function onEdit(cb) {
  const panels = ['model-panel', 'data-panel', 'optim-panel'].map($);
  for (const p of panels) {
    p.addEventListener('input', (e) => {
      if (e.target.type === 'file' || e.target.id === 'preset') return;
      syncVisibility();
      cb(e.target.id || e.target.name);
    });
  }
}
