// samples.js — the Llama's sample card: the prompt (kept readable for the text the model
// learns), the latest sample, a sampling error beside it, and the advice shown when the
// browser runs WebGPU on the CPU.

const $ = (id) => document.getElementById(id);

/** The prompt in bold, then the model's continuation — as text nodes, never HTML. */
export function showSample({ step, prompt, text }) {
  const head = document.createElement('span');
  head.className = 'sample-step';
  head.textContent = `step ${step}\n`;
  const b = document.createElement('b');
  b.textContent = prompt;
  $('sample-error').hidden = true;
  $('sample-output').replaceChildren(head, b, document.createTextNode(text));
}

/** A sampling failure, shown where the sample would be: the config is not at fault. */
export function showSampleError(message) {
  $('sample-error').textContent = message ? `Sampling failed: ${message}` : '';
  $('sample-error').hidden = !message;
}

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

/** On a CPU adapter a Llama of the presets' size steps slowly: say so and offer smaller settings. */
export function adviseForCpu(info) {
  const slow = !!info.adapter?.cpu && info.model === 'llama' && info.tokensPerStep > 256;
  $('cpu-notice').hidden = !slow;
  if (!slow) return;
  $('cpu-notice-text').textContent = `This browser runs WebGPU on the CPU (${info.adapter.name}), so a Llama of `
    + `${info.tokensPerStep.toLocaleString('en-US')} tokens a step trains slowly (a few steps a second at best). `
    + 'Smaller settings — batch 4, context 32, d_model 32 — train visibly here; a machine with a GPU runs the full size.';
}
