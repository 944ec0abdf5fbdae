// files.js — the user's own data and files: clicking points onto the data plot, clearing them,
// uploading or pasting a CSV of points, copying the share link, downloading and uploading
// checkpoints, and exporting the run as a zip for PyTorch / Hugging Face (and opening such a zip).

import * as form from './form.js';
import { ToWorker } from './protocol.js';

const $ = (id) => document.getElementById(id);

/**
 * The user's own points, drawn before a run exists for them: in the view as it is while they
 * click, or (`fit`) in one fitted to them, for points read from a CSV.
 */
export function showCustomPoints(plot, fit = false) {
  const regression = form.custom.kind === 'regression';
  const p = form.custom.points;
  plot.setPoints(p.map((q) => q.x), p.map((q) => q.y), regression ? null : p.map((q) => q.label), {
    regression, classes: 10, keepExtent: !fit,
  });
  plot.clearGrid();
  $('custom-count').textContent = `${p.length} points`;
}

/** The CSV the worker is parsing, its file's name (null: not uploaded), and whether the run is rebuilt on it once parsed (an upload). */
let parsing = null;

/** Asks the worker to parse your points from `csv` (Rust's parser, as a run uses). */
export function parseCsv(send, csv, applyAfter, file = null) {
  parsing = { csv, applyAfter, file };
  send({ type: ToWorker.parseCsv, text: csv });
}

/** The worker refused the CSV: the parse ends, and your points stay as they were. Returns the refused file's name (or null). */
export function csvRefused() {
  const file = parsing?.file ?? null;
  parsing = null;
  return file;
}

/** The worker parsed the CSV: the points go into the form and onto the plot. */
export function onParsedPoints(points, { plot, apply }) {
  if (!parsing) return;
  const { csv, applyAfter, file } = parsing;
  parsing = null;
  form.setParsedPoints(csv, points, file);
  form.useOwnPoints();
  showCustomPoints(plot, true);
  if (applyAfter) apply(0);
}

/**
 * Wires the own-data and file controls. `apply(ms)` rebuilds the run after `ms` (debounced),
 * `cancelApply()` drops a pending rebuild, `send` posts to the worker, `showError(text)` and
 * `showNote(text)` set the page's config error and the share panel's note.
 */
export function wireFiles({ plot, send, showError, showNote, runName, apply, cancelApply }) {
  plot.onClick = (x, y) => {
    if (form.modelKind() !== 'mlp') return;
    if ($('pt-task').value !== 'custom') {
      // Clicking a generated set starts your own points of the same kind.
      form.startPoints(form.isRegressionTask() ? 'regression' : 'classes');
      form.useOwnPoints();
    }
    if (form.custom.points.length >= form.MAX_CUSTOM_POINTS) return;
    const label = Number($('draw-class').value);
    form.addPoint(form.custom.kind === 'regression' ? { x, y } : { x, y, label });
    showCustomPoints(plot);
    cancelApply();
    if (form.custom.points.length >= form.MIN_CLICKED_POINTS) apply(700);
    else showError(form.pointsWanted(), { waiting: true });
  };

  $('clear-points').onclick = () => {
    form.clearPoints();
    showCustomPoints(plot);
    cancelApply();
    showError(form.pointsWanted(), { waiting: true });
  };

  $('csv-file').onchange = async (e) => {
    const file = e.target.files?.[0];
    e.target.value = '';
    if (!file) return;
    if (file.size > 2 << 20) return showError(`${file.name}: the file is larger than 2 MiB`);
    parseCsv(send, await file.text(), true, file.name);
  };

  // The paste box opens with your points so far, to edit or replace; Rust's parser reads it
  // as it reads an upload, and its errors name it "pasted CSV".
  $('csv-paste').ontoggle = () => {
    if ($('csv-paste').open && !$('csv-text').value) $('csv-text').value = form.custom.csv;
  };
  $('csv-use').onclick = () => parseCsv(send, $('csv-text').value, true, 'pasted CSV');

  $('copy-url').onclick = async () => {
    const url = $('share-url').value;
    try {
      await navigator.clipboard.writeText(url);
      showNote('Link copied.');
    } catch {
      $('share-url').select();
      showNote('Select the link and copy it.');
    }
  };

  $('ckpt-save').onclick = () => send({ type: ToWorker.save, dtype: $('ckpt-f16').checked ? 'f16' : 'f32' });
  // Uploads of up to 512 MiB go to the worker as bytes (transferred, not copied).
  const upload = (id, what, type) => {
    $(id).onchange = async (e) => {
      const file = e.target.files?.[0];
      e.target.value = '';
      if (!file) return;
      if (file.size > 512 << 20) return showError(`${what}: the file is larger than 512 MiB`);
      const bytes = new Uint8Array(await file.arrayBuffer());
      send({ type, bytes }, [bytes.buffer]);
    };
  };
  upload('ckpt-load', 'Checkpoint', ToWorker.load);

  // The zip holds one folder named after the run; unzipped it is what `kiln import` and
  // `from_pretrained` read.
  $('export-zip').onclick = () => send({ type: ToWorker.exportFolder, name: `${fileStem(runName())}-export` });
  upload('import-zip', 'Export folder', ToWorker.importFolder);
}

/** A run's name as a file name: "mlp-spiral #3" → "mlp-spiral-3" ('kiln' when there is none). */
const fileStem = (runName) => (runName ?? '').replace(/[^\w.-]+/g, '-').replace(/^-+|-+$/g, '') || 'kiln';

/**
 * Saves `bytes` as `<run>-<label><ext>`, the run named as on the Runs card ("mlp-spiral #3"
 * saves as "mlp-spiral-3-step278.safetensors"), so files of several runs tell apart.
 */
export function download(bytes, runName, label, ext = '.safetensors') {
  const blob = new Blob([bytes], { type: ext === '.zip' ? 'application/zip' : 'application/octet-stream' });
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = `${fileStem(runName)}-${label}${ext}`;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

