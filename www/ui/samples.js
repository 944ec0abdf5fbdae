// samples.js — for the Llama's sample card: a prompt kept readable for the text the model
// learns, and the advice shown when the browser runs WebGPU on the CPU. (render.js draws the
// sample and a sampling error beside it.)

const $ = (id) => document.getElementById(id);

/**
 * A prompt the model can read: the default ("And God said") suits Genesis only. When the
 * prompt has characters the training text lacks, it becomes the start of the text (for a
 * sequence task, the first example up to its `>` or `=`). Returns whether it changed.
 */
export function fitPrompt(dataset, sequenceTask) {
  const vocab = new Set(dataset?.vocab ?? []);
  const prompt = $('sample-prompt').value;
  if (!vocab.size || [...prompt].every((c) => vocab.has(c))) return false;
  const first = (dataset.excerpt ?? '').split('\n').find((l) => l.length) ?? '';
  const cut = sequenceTask ? first.search(/[>=]/) : -1;
  $('sample-prompt').value = cut >= 0 ? first.slice(0, cut + 1) : [...first].slice(0, 16).join('');
  return true;
}

/** Sizes that train visibly on a CPU WebGPU (SwiftShader): a step in tens of milliseconds. */
export const CPU_SIZES = { batch: 4, context: 32, d_model: 32, hidden: 96 };

/**
 * On a CPU adapter a Llama of the presets' size steps slowly: the advice to show (with a button
 * for CPU_SIZES), or '' when the run is small enough or the GPU is real.
 */
export function cpuAdvice(info) {
  const slow = !!info.adapter?.cpu && info.model === 'llama' && info.tokensPerStep > CPU_SIZES.batch * CPU_SIZES.context;
  if (!slow) return '';
  return `This browser runs WebGPU on the CPU (${info.adapter.name}), so a Llama of `
    + `${info.tokensPerStep.toLocaleString('en-US')} tokens a step trains slowly (a few steps a second at best). `
    + `Smaller settings — batch ${CPU_SIZES.batch}, context ${CPU_SIZES.context}, d_model ${CPU_SIZES.d_model} — train visibly here; a machine with a GPU runs the full size.`;
}

/** Names of the characters that draw nothing alone but often sit inside emoji. */
const UNSEEN_NAMES = { 0x200d: 'zero-width joiner', 0xfe0f: 'emoji style', 0xfe0e: 'text style', 0x200b: 'zero-width space' };

/**
 * A character of the model's vocabulary as the next-token view shows it: quoted and escaped
 * (JSON), except that one which draws nothing on its own — a joiner, a variation selector,
 * a lone combining mark, a control — is named by its code point, so "👩‍👧" reads as
 * "👩", "U+200D zero-width joiner", "👧": the model sees three characters.
 */
export function tokenLabel(text) {
  const cp = text.codePointAt(0);
  if (cp === undefined || [...text].length !== 1 || !/[\p{Cf}\p{Mn}\p{Me}\p{Cc}\p{Zl}\p{Zp}]/u.test(text) || /[\n\t\r]/.test(text)) return JSON.stringify(text);
  const name = UNSEEN_NAMES[cp];
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}${name ? ` ${name}` : ''}`;
}
