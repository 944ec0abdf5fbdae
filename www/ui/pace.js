// pace.js — how much the worker's readbacks of a Llama run do, so that each stays near a time
// budget on any adapter: how many validation tokens to score and how many characters to sample.
// Each call is measured and sizes the next. Before the first measure, a CPU adapter (SwiftShader,
// llvmpipe) starts at one context window: scoring a Llama preset's whole batch there took
// 147 s for llama-small, and 120 characters of sample 26 s for a 32-wide model, during which
// the worker could not start the smaller run the page advises.

/** Milliseconds a validation score aims for. */
const EVAL_MS = 1000;
/** Milliseconds a text sample aims for, and its length in characters: most, least, first on a CPU. */
const SAMPLE_MS = 3000;
const SAMPLE_MOST = 120;
const SAMPLE_LEAST = 8;
const SAMPLE_FIRST_ON_CPU = 16;

const clamp = (x, lo, hi) => Math.max(lo, Math.min(hi, Math.round(x)));

export class Pace {
  /** `info`: the run's info (`Kiln.info`). */
  constructor(info) {
    this.cpu = !!info.adapter?.cpu;
    // About one training batch: cheap enough to repeat while training on a GPU.
    this.full = clamp(info.tokensPerStep, 1, info.maxEvalTokens);
    this.window = Math.min(this.full, info.config?.model?.llama?.context ?? this.full);
    this.evalPerMs = null; // tokens scored a millisecond, last call
    this.msPerChar = null; // milliseconds a sampled character, last call
  }

  /** Validation tokens for the next score. */
  evalTokens() {
    if (this.evalPerMs === null) return this.cpu ? this.window : this.full;
    return clamp(this.evalPerMs * EVAL_MS, this.window, this.full);
  }

  evaluated(tokens, ms) {
    this.evalPerMs = tokens / Math.max(ms, 1);
  }

  /** Characters for the next sample. */
  sampleChars() {
    if (this.msPerChar === null) return this.cpu ? SAMPLE_FIRST_ON_CPU : SAMPLE_MOST;
    return clamp(SAMPLE_MS / this.msPerChar, SAMPLE_LEAST, SAMPLE_MOST);
  }

  sampled(chars, ms) {
    this.msPerChar = ms / Math.max(chars, 1);
  }
}
