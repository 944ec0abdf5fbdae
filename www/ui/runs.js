// runs.js — every run a person trains, kept in the browser (runs-store.js) and listed in the
// Runs card: name, model and data, steps, time, final train and validation loss, accuracy; any
// selection overlaid on one loss chart whose legend names the config fields that differ; Open
// continues a run where its last kept checkpoint stopped. A run is kept once it has trained.

import uPlot from '../uplot.js';
import { tickLabel } from './charts.js';
import { ToWorker } from './protocol.js';
import * as store from './runs-store.js';

const $ = (id) => document.getElementById(id);
/** Points of a kept loss curve: longer curves are thinned to every other point. */
const MAX_CURVE = 2000;
/** How long a first click on Delete waits for the second. */
const ARM_MS = 4000;

/** "MLP 2→16→16→2 relu · spiral" or "Llama d64 ×2 h4 ctx64 · text". */
function describe(config, info) {
  const task = info?.task ?? Object.keys(config.data)[0];
  if (config.model.mlp) {
    const m = config.model.mlp;
    return `MLP ${[m.input_dim, ...m.hidden, m.output_dim].join('→')} ${m.activation} · ${task}`;
  }
  const l = config.model.llama;
  return `Llama d${l.d_model} ×${l.layers} h${l.heads} ctx${l.context} · ${task}`;
}

/** A config as {path: value} (long texts shortened), for telling runs apart. */
function flatten(value, path = '', out = {}) {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) flatten(v, path ? `${path}.${k}` : k, out);
  } else {
    const s = JSON.stringify(value);
    out[path] = s.length > 24 ? `${s.slice(0, 20)}…"` : s;
  }
  return out;
}

/** For each run, the `field=value` pairs in which the runs differ. */
export function differences(configs) {
  const flat = configs.map((c) => flatten(c));
  const keys = [...new Set(flat.flatMap(Object.keys))].filter((k) => new Set(flat.map((f) => f[k])).size > 1);
  return flat.map((f) => keys.map((k) => `${k}=${f[k] ?? '–'}`).join(', '));
}

const fmtLoss = (v) => (v == null || !Number.isFinite(v) ? '–' : v.toPrecision(4));
const fmtTime = (s) => (s < 60 ? `${s.toFixed(0)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`);

export class Runs {
  /**
   * `send`: posts to the worker; `rebuild(run)`: builds a kept run from its config (when no
   * checkpoint was kept); `onProblem(text)`: says why something was not kept.
   */
  constructor({ send, rebuild, onProblem }) {
    this.list = [];
    this.current = null; // the record of the run training now (kept once it has trained)
    this.selected = new Set();
    Object.assign(this, { send, rebuild, onProblem });
    this.reopening = null; // the id of the kept run being reopened, until it is built or loaded
    this.kept = { record: 0, checkpoint: 0 }; // when the record and a checkpoint were last kept
    this.chart = null;
    // The run whose Delete was clicked once, until when: kept here, not on the button, because
    // the table is redrawn with every chunk of a training run.
    this.armed = { id: null, until: 0 };
    this.dirty = true;
  }

  /** The worker built a run (`origin` 'checkpoint' when it came from a file). */
  built(config, info, name, origin) {
    this.start(config, info, name, this.reopening);
    if (origin !== 'checkpoint') this.reopening = null;
  }

  /**
   * A checkpoint was loaded at `step`: a reopened run continues its own record, cut back to the
   * checkpoint (steps kept after it are trained again). Returns that record's [step, loss] curve.
   */
  loaded(config, info, step) {
    const reopened = !!this.reopening;
    if (reopened) this.start(config, info, '', this.reopening);
    this.reopening = null;
    if (!reopened) return [];
    this.current.curve = this.current.curve.filter(([s]) => s <= step);
    return this.current.curve;
  }

  /** Opens a kept run: from its checkpoint where one was kept, else rebuilt from its config. */
  async open(run) {
    const bytes = await store.getCheckpoint(run.id).catch(() => null);
    if (!bytes) return this.rebuild(run);
    this.reopening = run.id;
    this.send({ type: ToWorker.load, bytes }, [bytes.buffer]);
  }

  /**
   * Keeps the current run in the browser: its record every 5 s, a checkpoint every 30 s of
   * training and when it pauses (`now`), so a reload or a crash loses at most that much.
   */
  keep(playing, now = false) {
    const t = performance.now();
    if (t - this.kept.record > 5000 || now) {
      this.kept.record = t;
      this.persist();
    }
    if ((playing && t - this.kept.checkpoint > 30_000) || now) {
      this.kept.checkpoint = t;
      if (this.current && this.list.includes(this.current)) this.send({ type: ToWorker.save, purpose: 'keep', id: this.current.id });
    }
  }

  async load() {
    try {
      this.list = await store.listRuns();
    } catch (e) {
      this.onProblem(`Kept runs could not be read: ${store.storageProblem(e)}`);
    }
    this.dirty = true;
  }

  /** A new run was built; `id` continues a kept run (reopened) instead of starting one. */
  start(config, info, name, id = null) {
    this.current = this.list.find((r) => r.id === id) ?? {
      id: `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`,
      name: `${name || 'run'} #${this.list.length + 1}`,
      created: Date.now(),
      updated: Date.now(),
      config,
      summary: { text: describe(config, info), steps: 0, seconds: 0, trainLoss: null, valLoss: null, accuracy: null },
      curve: [],
      checkpoint: false,
    };
    this.dirty = true;
  }

  /** One chunk's steps ([{step, loss}]) and its rates. */
  metrics(points, rates) {
    const run = this.current;
    if (!run || !points.length) return;
    if (!this.list.includes(run)) this.list.unshift(run);
    for (const p of points) if (Number.isFinite(p.loss) && (run.curve.at(-1)?.[0] ?? -1) < p.step) run.curve.push([p.step, p.loss]);
    if (run.curve.length > MAX_CURVE) run.curve = run.curve.filter((_, i) => i % 2 === 1);
    const last = points[points.length - 1];
    Object.assign(run.summary, { steps: last.step, trainLoss: last.loss });
    if (rates?.stepsPerSecond > 0) run.summary.seconds += points.length / rates.stepsPerSecond;
    run.updated = Date.now();
    this.dirty = true;
  }

  validation(loss, accuracy) {
    if (!this.current) return;
    Object.assign(this.current.summary, { valLoss: loss, accuracy: accuracy ?? null });
    this.dirty = true;
  }

  /** Writes the current run's record (the caller throttles). */
  async persist() {
    const run = this.current;
    if (!run || !this.list.includes(run)) return;
    try {
      await store.putRun(run);
    } catch (e) {
      this.onProblem(`This run's record was not kept: ${store.storageProblem(e)}`);
    }
  }

  /** Keeps `bytes` as the checkpoint of run `id` (asked for by `keep`; the run may have changed since). */
  async keepCheckpoint(bytes, id) {
    const run = this.list.find((r) => r.id === id);
    if (!run || run !== this.current) return;
    try {
      await store.putCheckpoint(run.id, bytes);
      run.checkpoint = true;
      run.checkpointStep = run.summary.steps;
      await store.putRun(run);
      this.onProblem('');
    } catch (e) {
      this.onProblem(`Not kept: ${store.storageProblem(e)}`);
    }
    this.dirty = true;
  }

  async remove(id) {
    await store.deleteRun(id).catch((e) => this.onProblem(store.storageProblem(e)));
    this.list = this.list.filter((r) => r.id !== id);
    this.selected.delete(id);
    if (this.current?.id === id) this.current = { ...this.current, id: `${this.current.id}-new` };
    this.dirty = true;
  }

  /** Redraws the table and the comparison chart when something changed. */
  render() {
    if (!this.dirty) return;
    this.dirty = false;
    $('runs-card').hidden = !this.list.length;
    $('runs-table').tBodies[0].replaceChildren(...this.list.map((r) => this.row(r)));
    this.drawChart();
  }

  row(run) {
    const tr = document.createElement('tr');
    tr.dataset.run = run.id;
    if (run === this.current) tr.className = 'current';
    const pick = document.createElement('input');
    pick.type = 'checkbox';
    pick.checked = this.selected.has(run.id);
    pick.title = 'Overlay this run\'s loss';
    pick.onchange = () => {
      if (pick.checked) this.selected.add(run.id);
      else this.selected.delete(run.id);
      this.dirty = true;
    };
    const s = run.summary;
    const acc = s.accuracy == null ? '–' : `${(s.accuracy * 100).toFixed(1)}%`;
    const cells = [run.name, s.text, String(s.steps), fmtTime(s.seconds), fmtLoss(s.trainLoss), fmtLoss(s.valLoss), acc];
    const open = document.createElement('button');
    open.textContent = 'Open';
    open.title = run.checkpoint ? `Continue from its checkpoint at step ${run.checkpointStep}` : 'Rebuild from its config (no checkpoint was kept)';
    open.onclick = () => this.open(run);
    const del = document.createElement('button');
    const armed = () => this.armed.id === run.id && performance.now() < this.armed.until;
    del.textContent = armed() ? 'Sure?' : 'Delete';
    del.title = 'Delete this run, its curve and its checkpoint (asks again first)';
    // The first click asks; a second within 4 s deletes.
    del.onclick = () => {
      if (armed()) return this.remove(run.id);
      this.armed = { id: run.id, until: performance.now() + ARM_MS };
      del.textContent = 'Sure?';
      setTimeout(() => { this.dirty = true; }, ARM_MS); // redrawn as 'Delete'
    };
    tr.append(td(pick), ...cells.map((c) => td(c)), td(open, del));
    return tr;
  }

  drawChart() {
    const runs = this.list.filter((r) => this.selected.has(r.id) && r.curve.length);
    $('runs-chart').hidden = !runs.length;
    this.chart?.destroy();
    this.chart = null;
    if (!runs.length) return;
    const labels = differences(runs.map((r) => r.config));
    const data = uPlot.join(runs.map((r) => [r.curve.map((p) => p[0]), r.curve.map((p) => p[1])]));
    const series = [{ label: 'step' }, ...runs.map((r, i) => ({
      label: labels[i] ? `${r.name}: ${labels[i]}` : r.name,
      stroke: `hsl(${(i * 137) % 360} 65% 45%)`,
      width: 1.5,
      spanGaps: true,
      points: { show: false },
    }))];
    const width = Math.max(300, $('runs-chart').clientWidth - 4);
    this.chart = new uPlot({ width, height: 240, scales: { x: { time: false }, y: { distr: 3 } }, axes: [{ label: 'step' }, { label: 'train loss', size: 60, values: (u, v) => v.map(tickLabel) }], series }, data, $('runs-chart'));
  }

  /** What the tests read: the kept runs and the chart's legend. */
  summary() {
    return {
      runs: this.list.map((r) => ({ id: r.id, name: r.name, steps: r.summary.steps, checkpoint: r.checkpoint, checkpointStep: r.checkpointStep, current: r === this.current })),
      overlay: this.chart ? this.chart.series.slice(1).map((s) => s.label) : [],
    };
  }
}

function td(...children) {
  const cell = document.createElement('td');
  cell.append(...children);
  return cell;
}
