// share.js — the shareable URL: a SessionConfig in the fragment (#c=<base64url JSON>),
// size-capped and structurally validated before the page trusts it. Kiln.create validates
// values again; this check keeps odd shapes, huge strings and unknown keys out of the form.

/** Longest fragment we write or accept, in characters. */
export const MAX_FRAGMENT = 12_000;

function toBase64Url(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

function fromBase64Url(s) {
  if (!/^[A-Za-z0-9_-]*$/.test(s)) throw new Error('the link is not base64url');
  const bin = atob(s.replaceAll('-', '+').replaceAll('_', '/'));
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
}

/**
 * The URL that carries `config`. User data (pasted text, CSV points) is dropped when it would
 * make the link longer than MAX_FRAGMENT; `dropped` then says what was left out.
 */
export function shareUrl(config, base = location.href) {
  const url = new URL(base);
  let dropped = null;
  let fragment = 'c=' + toBase64Url(JSON.stringify(config));
  if (fragment.length > MAX_FRAGMENT) {
    const slim = structuredClone(config);
    if (slim.data?.text?.text != null) {
      delete slim.data.text.text;
      // Without the text the link trains on Genesis, which needs a vocabulary of 60.
      if (slim.model?.llama) slim.model.llama.vocab = Math.max(slim.model.llama.vocab, 60);
      dropped = 'your text';
    }
    if (slim.data?.points?.csv != null) {
      delete slim.data.points.csv;
      slim.data.points.task = slim.data.points.task ?? 'spiral';
      if (slim.model?.mlp && !['sine', 'piecewise'].includes(slim.data.points.task)) slim.model.mlp.output_dim = 2;
      dropped = 'your points';
    }
    fragment = 'c=' + toBase64Url(JSON.stringify(slim));
  }
  url.hash = fragment;
  return { url: url.toString(), dropped };
}

/** The config in a location hash, or null when there is none; throws a readable Error when bad. */
export function configFromHash(hash = location.hash) {
  if (!hash || hash === '#') return null;
  if (hash.length > MAX_FRAGMENT + 1) throw new Error(`the link's config is too long (${hash.length} characters, at most ${MAX_FRAGMENT})`);
  const m = /^#c=([A-Za-z0-9_-]+)$/.exec(hash);
  if (!m) throw new Error('the link has no config (#c=…)');
  let value;
  try {
    value = JSON.parse(fromBase64Url(m[1]));
  } catch {
    throw new Error('the link is damaged: its config is not valid JSON');
  }
  checkConfig(value);
  return value;
}

// ---- structural check ---------------------------------------------------------------------

const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

function num(v, path, lo, hi, int = false) {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi || (int && !Number.isInteger(v))) {
    throw new Error(`${path} must be ${int ? 'an integer' : 'a number'} in [${lo}, ${hi}]`);
  }
}

function keys(o, path, required, optional = []) {
  if (!isObj(o)) throw new Error(`${path} must be an object`);
  for (const k of Object.keys(o)) {
    if (!required.includes(k) && !optional.includes(k)) throw new Error(`${path} has an unknown field "${k.slice(0, 40)}"`);
  }
  for (const k of required) if (!(k in o)) throw new Error(`${path}.${k} is missing`);
}

function oneOf(v, path, allowed) {
  if (!allowed.includes(v)) throw new Error(`${path} must be one of ${allowed.join(', ')}`);
}

function str(v, path, max) {
  if (typeof v !== 'string' || v.length > max) throw new Error(`${path} must be text of at most ${max} characters`);
}

/** Throws an Error naming the first field of `c` that is not a well-formed SessionConfig. */
export function checkConfig(c) {
  keys(c, 'config', ['model', 'data', 'batch'], ['optimizer', 'seed']);
  num(c.batch, 'batch', 1, 65536, true);
  if ('seed' in c) num(c.seed, 'seed', 0, Number.MAX_SAFE_INTEGER, true);
  keys(c.model, 'model', [], ['mlp', 'llama']);
  keys(c.data, 'data', [], ['points', 'text']);
  if (Object.keys(c.model).length !== 1) throw new Error('model must be {mlp: …} or {llama: …}');
  if (Object.keys(c.data).length !== 1) throw new Error('data must be {points: …} or {text: …}');
  if (c.model.mlp) {
    const m = c.model.mlp;
    keys(m, 'model.mlp', ['input_dim', 'hidden', 'output_dim', 'activation']);
    num(m.input_dim, 'model.mlp.input_dim', 1, 2, true);
    num(m.output_dim, 'model.mlp.output_dim', 1, 10, true);
    if (!Array.isArray(m.hidden) || m.hidden.length > 15) throw new Error('model.mlp.hidden must be a list of at most 15 widths');
    m.hidden.forEach((w, i) => num(w, `model.mlp.hidden[${i}]`, 1, 4096, true));
    oneOf(m.activation, 'model.mlp.activation', ['relu', 'tanh', 'silu']);
  } else {
    const l = c.model.llama;
    keys(l, 'model.llama', ['vocab', 'd_model', 'heads', 'layers', 'context', 'hidden'], ['rope_theta', 'norm_eps']);
    num(l.vocab, 'model.llama.vocab', 2, 256, true);
    num(l.d_model, 'model.llama.d_model', 2, 4096, true);
    num(l.heads, 'model.llama.heads', 1, 4096, true);
    num(l.layers, 'model.llama.layers', 1, 48, true);
    num(l.context, 'model.llama.context', 1, 1024, true);
    num(l.hidden, 'model.llama.hidden', 1, 16384, true);
    if ('rope_theta' in l) num(l.rope_theta, 'model.llama.rope_theta', 1, 1e9);
    if ('norm_eps' in l) num(l.norm_eps, 'model.llama.norm_eps', 1e-12, 1);
  }
  if (c.data.points) {
    const p = c.data.points;
    keys(p, 'data.points', ['task', 'points', 'noise', 'validation_fraction'], ['csv']);
    oneOf(p.task, 'data.points.task', ['spiral', 'circles', 'xor', 'gaussians', 'sine', 'piecewise']);
    num(p.points, 'data.points.points', 1, 100000, true);
    num(p.noise, 'data.points.noise', 0, 1);
    num(p.validation_fraction, 'data.points.validation_fraction', 0.05, 0.5);
    if ('csv' in p) str(p.csv, 'data.points.csv', MAX_FRAGMENT);
  } else {
    const t = c.data.text;
    keys(t, 'data.text', ['validation_fraction'], ['text']);
    num(t.validation_fraction, 'data.text.validation_fraction', 0.05, 0.5);
    if ('text' in t) str(t.text, 'data.text.text', MAX_FRAGMENT);
  }
  if ('optimizer' in c) {
    const o = c.optimizer;
    keys(o, 'optimizer', [], ['kind', 'lr', 'beta1', 'beta2', 'eps', 'weight_decay', 'momentum', 'clip', 'accumulation', 'schedule']);
    if ('kind' in o) oneOf(o.kind, 'optimizer.kind', ['adamw', 'sgd']);
    if ('lr' in o) num(o.lr, 'optimizer.lr', 0, 10);
    for (const k of ['beta1', 'beta2', 'momentum']) if (k in o) num(o[k], `optimizer.${k}`, 0, 1);
    if ('eps' in o) num(o.eps, 'optimizer.eps', 0, 1);
    if ('weight_decay' in o) num(o.weight_decay, 'optimizer.weight_decay', 0, 10);
    if ('clip' in o) num(o.clip, 'optimizer.clip', 0, 1e6);
    if ('accumulation' in o) num(o.accumulation, 'optimizer.accumulation', 1, 64, true);
    if ('schedule' in o) {
      const s = o.schedule;
      if (!isObj(s)) throw new Error('optimizer.schedule must be an object');
      oneOf(s.kind, 'optimizer.schedule.kind', ['constant', 'warmup_cosine']);
      if (s.kind === 'constant') keys(s, 'optimizer.schedule', ['kind']);
      else {
        keys(s, 'optimizer.schedule', ['kind', 'warmup_steps', 'total_steps', 'min_lr_fraction']);
        num(s.warmup_steps, 'optimizer.schedule.warmup_steps', 0, 1e9, true);
        num(s.total_steps, 'optimizer.schedule.total_steps', 1, 1e9, true);
        num(s.min_lr_fraction, 'optimizer.schedule.min_lr_fraction', 0, 1);
      }
    }
  }
}
