// form.js — the model, data and optimizer panels: a SessionConfig written into the form
// (`writeConfig`) and read back out of it (`readConfig`), plus the user's own points and text.
// The form checks only what its inputs can hold; the config itself is validated in Rust (the
// worker's Kiln.create), which names the field when a value is not allowed.

const $ = (id) => document.getElementById(id);

/**
 * The user's own points: `csv` is what the config carries (uploaded, or written from the drawn
 * points); `points` ({x, y, label} for classes, {x, y} with y the target for regression) is what
 * the plot shows, parsed from `csv` by the worker (Rust) or drawn by clicking. `file` names the
 * uploaded CSV they are (null once clicked or cleared, or from a link).
 */
export const custom = { kind: 'classes', points: [], csv: '', file: null };
/** Largest number of points the page lets you draw or upload. */
export const MAX_CUSTOM_POINTS = 20_000;

/** Extra llama fields the form has no inputs for (rope_theta, norm_eps), kept from the last config. */
let llamaExtras = {};
/** The vocabulary the built-in corpus (Genesis) needs, as the presets give it. */
export const GENESIS_VOCAB = 60;
/** The vocabulary the sequence tasks need (digits, `+`, `=`, `>`, newline), as the presets give it. */
const SEQUENCE_VOCAB = 16;
let corpusVocab = GENESIS_VOCAB;

/**
 * The form's inputs by the config field they fill ([input id, label]): how the page names a
 * field in an error (Rust's errors name the config field) and marks the input that holds it.
 */
const INPUTS = {
  'batch': ['batch', 'Batch'],
  'seed': ['seed', 'Seed'],
  'model.mlp.hidden': ['mlp-hidden', 'Hidden widths'],
  'model.mlp.activation': ['mlp-activation', 'Activation'],
  'data.points.points': ['pt-points', 'Points'],
  'data.points.noise': ['pt-noise', 'Noise'],
  'data.points.validation_fraction': ['pt-val', 'Validation'],
  'model.llama.d_model': ['ll-d_model', 'd_model'],
  'model.llama.heads': ['ll-heads', 'Heads'],
  'model.llama.layers': ['ll-layers', 'Layers'],
  'model.llama.context': ['ll-context', 'Context'],
  'model.llama.hidden': ['ll-hidden', 'SwiGLU width'],
  'data.text.validation_fraction': ['tx-val', 'Validation'],
  'data.sequence.validation_fraction': ['tx-val', 'Validation'],
  'data.sequence.digits': ['sq-digits', 'Digits'],
  'data.sequence.examples': ['sq-examples', 'Examples'],
  'text': ['tx-text', 'Your text'],
  'data.text.text': ['tx-text', 'Your text'],
  'optimizer.lr': ['opt-lr', 'Learning rate'],
  'optimizer.beta1': ['opt-beta1', 'β₁'],
  'optimizer.beta2': ['opt-beta2', 'β₂'],
  'optimizer.weight_decay': ['opt-wd', 'Weight decay'],
  'optimizer.momentum': ['opt-momentum', 'Momentum'],
  'optimizer.clip': ['opt-clip', 'Clip norm'],
  'optimizer.accumulation': ['opt-accum', 'Accumulation'],
  'optimizer.schedule.warmup_steps': ['opt-warmup', 'Warmup steps'],
  'optimizer.schedule.total_steps': ['opt-total', 'Total steps'],
  'optimizer.schedule.min_lr_fraction': ['opt-minlr', 'Min LR fraction'],
};

/** The input and label of a config field (`optimizer.lr`), or null when the form has none. */
export function inputOf(field) {
  const entry = INPUTS[field];
  return entry ? { id: entry[0], label: entry[1] } : null;
}

/** An Error about one of the form's inputs: `input` is its id (the page marks it). */
function inputError(id, message) {
  return Object.assign(new Error(message), { input: id });
}

/** An Error that only says what the form waits for (your text, your points): shown as a notice. */
function waitingFor(message) {
  return Object.assign(new Error(message), { waiting: true });
}

/** The number in the input of config field `field`; throws an Error naming its label unless it is one in min..max. */
function number(field, { int = false, min = -Infinity, max = Infinity } = {}) {
  const [id, label] = INPUTS[field];
  const el = $(id);
  const v = Number(el.value);
  if (el.value.trim() === '' || !Number.isFinite(v) || (int && !Number.isInteger(v)) || v < min || v > max) {
    const range = `${Number.isFinite(min) ? min : ''}..${Number.isFinite(max) ? max : ''}`;
    throw inputError(id, `${label}: enter ${int ? 'a whole number' : 'a number'} in ${range} (got "${el.value.slice(0, 20)}")`);
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

/** The data source of a Llama: the built-in corpus, your text, or a sequence task. */
export function textSource() {
  return $('tx-source').value;
}

/** Distinct characters of a text, as the tokenizer counts them (carriage returns dropped). */
export function vocabOf(text) {
  const set = new Set(text.replaceAll('\r', ''));
  return set.size;
}

/** The drawn points as CSV rows (what the config carries). */
function pointsCsv() {
  return custom.points
    .map((p) => (custom.kind === 'regression' ? `${p.x.toFixed(4)},${p.y.toFixed(4)}` : `${p.x.toFixed(4)},${p.y.toFixed(4)},${p.label}`))
    .join('\n');
}

/** Adds a clicked point to your own points (the config's CSV follows). */
export function addPoint(point) {
  custom.points.push(point);
  custom.csv = pointsCsv();
  custom.file = null;
}

export function clearPoints() {
  custom.points = [];
  custom.csv = '';
  custom.file = null;
}

/** Clicked points rebuild the run once there are this many (fewer make a poor split). */
export const MIN_CLICKED_POINTS = 10;

/** What the page says while your clicked points are too few for a run. */
export function pointsWanted() {
  const n = custom.points.length;
  return `Your points: ${n} so far; the model is built on them from ${MIN_CLICKED_POINTS} on (click the data plot to add points, or upload a CSV). Until then the run shown is the previous one.`;
}

/** Starts your own points afresh, of one kind: 'classes' (x,y,label) or 'regression' (x,target). */
/**
 * Makes the dataset your own points. Coming from a generated set turns standardizing on: own
 * points are rarely centred and scaled (the box stays the user's to untick).
 */
export function useOwnPoints() {
  if ($('pt-task').value !== 'custom') $('pt-standardize').checked = true;
  $('pt-task').value = 'custom';
  syncVisibility();
}

export function startPoints(kind) {
  custom.kind = kind;
  clearPoints();
}

/** Your own points as the worker parsed them from `csv` ({inputs, labels | targets, inputDim}), uploaded as `file` (or null). */
export function setParsedPoints(csv, parsed, file) {
  const regression = parsed.inputDim === 1;
  const n = regression ? parsed.targets.length : parsed.labels.length;
  const points = [];
  for (let i = 0; i < n; i++) {
    points.push(regression
      ? { x: parsed.inputs[i], y: parsed.targets[i] }
      : { x: parsed.inputs[2 * i], y: parsed.inputs[2 * i + 1], label: parsed.labels[i] });
  }
  custom.kind = regression ? 'regression' : 'classes';
  custom.points = points;
  custom.csv = csv;
  custom.file = file;
}

/** Reads the form into a SessionConfig; throws an Error naming the field when an input is not usable. */
export function readConfig() {
  const kind = modelKind();
  const batch = number('batch', { int: true, min: 1, max: 65536 });
  const seed = number('seed', { int: true, min: 0, max: Number.MAX_SAFE_INTEGER });
  let model, data;
  if (kind === 'mlp') {
    const text = $('mlp-hidden').value.trim();
    const hidden = text === '' ? [] : text.split(/[\s,]+/).filter(Boolean).map(Number);
    if (hidden.some((w) => !Number.isInteger(w) || w < 1 || w > 4096)) throw inputError('mlp-hidden', 'Hidden widths: enter whole numbers 1..4096 separated by commas, e.g. "16, 16"');
    if (hidden.length > 15) throw inputError('mlp-hidden', 'Hidden widths: at most 15 hidden layers');
    const task = $('pt-task').value;
    const regression = isRegressionTask();
    const points = { task, validation_fraction: number('data.points.validation_fraction', { min: 0.05, max: 0.5 }) };
    if ($('pt-standardize').checked) points.standardize = true;
    let outputs = regression ? 1 : 2;
    if (task === 'custom') {
      if (!custom.csv) throw waitingFor(pointsWanted());
      points.csv = custom.csv;
      if (!regression) outputs = Math.max(2, ...custom.points.map((p) => p.label + 1));
    } else {
      points.points = number('data.points.points', { int: true, min: 1, max: 100000 });
      points.noise = number('data.points.noise', { min: 0, max: 1 });
    }
    model = { mlp: { input_dim: regression ? 1 : 2, hidden, output_dim: outputs, activation: $('mlp-activation').value } };
    data = { points };
  } else {
    const llama = {
      vocab: corpusVocab,
      d_model: number('model.llama.d_model', { int: true, min: 2, max: 4096 }),
      heads: number('model.llama.heads', { int: true, min: 1, max: 4096 }),
      layers: number('model.llama.layers', { int: true, min: 1, max: 48 }),
      context: number('model.llama.context', { int: true, min: 1, max: 1024 }),
      hidden: number('model.llama.hidden', { int: true, min: 1, max: 16384 }),
      ...llamaExtras,
      // Off is left out, as configs and links were before the option existed.
      ...($('ll-short-conv').checked ? { short_conv: true } : {}),
      ...($('ll-mixed').checked ? { precision: 'mixed' } : {}),
    };
    const source = textSource();
    const validation_fraction = number(`data.${source === 'sequence' ? 'sequence' : 'text'}.validation_fraction`, { min: 0.05, max: 0.5 });
    if (source === 'sequence') {
      data = {
        sequence: {
          task: $('sq-task').value,
          digits: number('data.sequence.digits', { int: true, min: 1, max: 12 }),
          examples: number('data.sequence.examples', { int: true, min: 16, max: 50000 }),
          validation_fraction,
        },
      };
      llama.vocab = SEQUENCE_VOCAB;
    } else {
      const text = { validation_fraction };
      if (source === 'custom') {
        // Until something is pasted there is nothing to build; how long and how varied a text must
        // be is Rust's to check (src/data/text.rs), with the field named.
        const t = $('tx-text').value;
        if (t.trim() === '') throw waitingFor('Your text: paste the text to train on into the Text box. Until then the run shown is the previous one.');
        text.text = t;
        llama.vocab = Math.max(2, vocabOf(t));
      }
      data = { text };
    }
    model = { llama };
  }
  const schedule = $('opt-schedule').value === 'constant'
    ? { kind: 'constant' }
    : {
        kind: 'warmup_cosine',
        warmup_steps: number('optimizer.schedule.warmup_steps', { int: true, min: 0 }),
        total_steps: number('optimizer.schedule.total_steps', { int: true, min: 1 }),
        min_lr_fraction: number('optimizer.schedule.min_lr_fraction', { min: 0, max: 1 }),
      };
  const optimizer = {
    kind: $('opt-kind').value,
    lr: number('optimizer.lr', { min: 0, max: 10 }),
    beta1: number('optimizer.beta1', { min: 0, max: 1 }),
    beta2: number('optimizer.beta2', { min: 0, max: 1 }),
    eps: 1e-8,
    weight_decay: number('optimizer.weight_decay', { min: 0, max: 10 }),
    momentum: number('optimizer.momentum', { min: 0, max: 1 }),
    clip: number('optimizer.clip', { min: 0 }),
    accumulation: number('optimizer.accumulation', { int: true, min: 1, max: 64 }),
    schedule,
  };
  return { model, data, batch, optimizer, seed };
}

function set(id, v) {
  if (v !== undefined && v !== null) $(id).value = String(v);
}

/** Fills the form from a SessionConfig (a preset, an opened link or a checkpoint's, all validated in Rust). */
export function writeConfig(c) {
  const kind = c.model.mlp ? 'mlp' : 'llama';
  document.querySelector(`input[name="model-kind"][value="${kind}"]`).checked = true;
  if (c.model.mlp) {
    const m = c.model.mlp;
    set('mlp-hidden', m.hidden.join(', '));
    set('mlp-activation', m.activation);
  } else {
    const { vocab, d_model, heads, layers, context, hidden, short_conv, precision, ...extras } = c.model.llama;
    llamaExtras = extras;
    $('ll-short-conv').checked = !!short_conv;
    $('ll-mixed').checked = precision === 'mixed';
    if (c.data.text && c.data.text.text == null) corpusVocab = Math.max(GENESIS_VOCAB, vocab);
    set('ll-d_model', d_model); set('ll-heads', heads); set('ll-layers', layers);
    set('ll-context', context); set('ll-hidden', hidden);
  }
  if (c.data.points) {
    const p = c.data.points;
    if (p.csv != null) {
      // The points appear when the worker has parsed the CSV (app.js asks it to).
      custom.csv = p.csv;
      custom.points = [];
      custom.kind = c.model.mlp.input_dim === 1 ? 'regression' : 'classes';
      set('pt-task', 'custom');
      set('custom-kind', custom.kind);
    } else {
      set('pt-task', p.task);
      set('pt-points', p.points); set('pt-noise', p.noise);
    }
    set('pt-val', p.validation_fraction);
    $('pt-standardize').checked = !!p.standardize;
  } else if (c.data.sequence) {
    const q = c.data.sequence;
    set('tx-source', 'sequence');
    set('sq-task', q.task); set('sq-digits', q.digits); set('sq-examples', q.examples);
    set('tx-val', q.validation_fraction);
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
  $('tx-text').hidden = textSource() !== 'custom';
  $('sequence-fields').hidden = textSource() !== 'sequence';
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
      // The paste box is not the config until "Use these points" parses it: typing there
      // must not rebuild the run (which would also clear a refused paste's error).
      if (e.target.type === 'file' || e.target.id === 'preset' || e.target.id === 'csv-text') return;
      // A new kind starts its points afresh; syncVisibility then shows the select as chosen.
      if (e.target.id === 'custom-kind') startPoints(e.target.value);
      // Choosing "Your points…" in the select: as useOwnPoints.
      if (e.target.id === 'pt-task' && e.target.value === 'custom') $('pt-standardize').checked = true;
      syncVisibility();
      cb(e.target.id || e.target.name);
    });
  }
}

/** Smaller Llama sizes (for a CPU adapter); heads are cut so they still divide d_model. */
export function shrinkLlama({ batch, context, d_model, hidden }) {
  set('batch', batch);
  set('ll-context', context);
  set('ll-d_model', d_model);
  set('ll-hidden', hidden);
  const heads = Number($('ll-heads').value);
  if (!(heads >= 1 && d_model % heads === 0 && (d_model / heads) % 2 === 0)) set('ll-heads', 4);
}
