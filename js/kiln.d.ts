// Type declarations for kiln-gpu (js/kiln.js). The config and result types are generated from
// the Rust structs into kiln-types.d.ts (`make types`); this file declares the functions and the
// Kiln class that use them.

// ---------------------------------------------------------------------------------------------
// Initialization

/** Where the wasm module comes from; by default `kiln_wasm_bg.wasm` next to kiln.js. */
export type WasmSource = URL | string | Response | ArrayBuffer | ArrayBufferView | WebAssembly.Module;

/**
 * The part of WebGPU's `GPU` object (`navigator.gpu`) Kiln needs to find an adapter; the
 * browser's object and the `webgpu` package's `create([])` both satisfy it.
 */
export interface GpuEntryPoint {
  requestAdapter(options?: object): Promise<object | null>;
}

export interface InitOptions {
  /** The wasm module (a URL or path, a fetch Response, its bytes, or a compiled module). */
  wasm?: WasmSource;
  /**
   * A WebGPU entry point to use instead of the browser's `navigator.gpu`, e.g. Node's
   * `create([])` from the `webgpu` package. It is installed as `navigator.gpu` (and, outside
   * a browser, a `globalThis.Window` stub is defined, which is where wgpu looks for it).
   */
  gpu?: GpuEntryPoint;
}

/**
 * Loads and starts the wasm module. Idempotent: later calls return the first call's promise
 * (a `gpu` they pass is still installed, for runs created afterwards).
 */
export function init(options?: InitOptions): Promise<void>;

// ---------------------------------------------------------------------------------------------
// Configuration and results: generated from the Rust structs (kiln-types.d.ts, `make types`)

import type {
  SessionConfig, OptimConfig, PresetInfo, AdapterSummary, RunInfo, Evaluation, UpdateRatio, Recovered,
  GenerateOptions, Shared, CheckpointInfo, ErrorCode, PositionGuesses, NeuronOutputs, AttentionMaps, Inspection, QuantizeOptions, QuantizeReport, CheckpointDtype,
} from './kiln-types.js';
export type * from './kiln-types.js';

/** A preset's (or a validated) config: every field filled in. */
export type FullSessionConfig = SessionConfig & { optimizer: Required<OptimConfig>; seed: number };

/**
 * Every Error kiln-gpu throws or rejects with: `code` says what kind (branch on it, never on
 * the message), `field` names the config field or argument at fault, with the config's own
 * path (`optimizer.beta1`, `model.mlp.hidden[0]`, `data.points.csv line 3`).
 */
export interface KilnError extends Error {
  code: ErrorCode;
  /** The config field or argument it is about (`optimizer.lr`), for bad input and bad checkpoints. */
  field?: string;
  /** For code 'invalid-input': what is wrong, without the field's name (`must be in (0, 10], got 0`). */
  reason?: string;
}

/** Bytes of a file: a Uint8Array, an ArrayBuffer, or any typed-array view of one. */
export type Bytes = Uint8Array | ArrayBufferLike | ArrayBufferView;

/** The built-in presets. Needs `await init()`. */
export function presets(): PresetInfo[];

/** A preset's config, to edit and pass to `Kiln.create`. Throws for an unknown name. Needs `await init()`. */
export function preset(name: string): FullSessionConfig;

/** Returns the config with every default filled in; throws a KilnError (code 'invalid-input') naming the field. Needs `await init()`. */
export function validateConfig(config: SessionConfig | string): FullSessionConfig;

/** The config as URL state (your text or points kept while the link stays under 8,192 characters). Needs `await init()`. */
export function shareConfig(config: SessionConfig | string): Shared;

/** The validated config in URL state from `shareConfig`; throws naming what is wrong. Needs `await init()`. */
export function openShared(state: string): FullSessionConfig;

/** A checkpoint's config and step, read from its header (code 'bad-checkpoint' if it is not one). */
export function readCheckpoint(bytes: Bytes): Promise<CheckpointInfo>;

/** Your own points parsed from CSV as a run would (`x,y,label` or `x,target` rows). Needs `await init()`. */
export function parsePoints(csv: string): ClassSplit | RegressionSplit;

export type AdapterInfo = AdapterSummary;

/** Acquires a WebGPU device and describes its adapter. */
export function adapterInfo(): Promise<AdapterInfo>;

// ---------------------------------------------------------------------------------------------
// A run


export interface StepMetrics {
  /** 1-based optimizer step. */
  step: number;
  /** Mean training loss of the step's batch (NaN if it diverged). */
  loss: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** Mixed precision only: the loss scale the step used (see `precision` in LlamaConfig). */
  lossScale?: number;
}

export interface Throughput {
  stepsPerSecond: number;
  /** Tokens (Llama) or examples (MLP) per second. */
  tokensPerSecond: number;
}

/** The steps of one chunk, with the chunk's throughput. */
export type MetricsEvent = StepMetrics[] & Throughput;


export interface KilnEvents {
  metrics: (metrics: MetricsEvent, throughput: Throughput) => void;
  error: (error: Error) => void;
  recovered: (recovery: Recovered) => void;
}

export interface TrainOptions {
  /** Steps to run (0..=1e9). */
  steps: number;
  /** Steps per chunk: metrics are read back and emitted once per chunk (1..=1024, default 50). */
  readEvery?: number;
}

export interface EvaluateOptions {
  /** Validation split (default) or training split. */
  validation?: boolean;
  /** Score the copy `quantize()` made instead of the run's weights (default false). */
  quantized?: boolean;
  /**
   * Text only: score at most this many next tokens (1..=16384, default 16384), in whole
   * windows from the split's start; one training batch's worth keeps an evaluation about as
   * cheap as a step.
   */
  maxTokens?: number;
}


export interface WeightTensor {
  /** e.g. "layer0.weight", "blocks.0.attn.wq". */
  name: string;
  shape: number[];
  /** A copy of the values, row-major. */
  data: Float32Array;
}


export interface PredictGridOptions {
  /** Grid side (classification, 1..=512) or number of x values (regression, 2..=65536); default 64. */
  size?: number;
  /**
   * The part of the input plane: a half-width e (the square [-e, e]², default 1.5),
   * [xmin, xmax] (y over the same range) or [xmin, xmax, ymin, ymax]; each within ±1e7, each
   * min below its max. A regression curve uses the x range alone.
   */
  extent?: number | [number, number] | [number, number, number, number];
  /** predictGrid only: predict with the copy `quantize()` made (default false). */
  quantized?: boolean;
}

export interface PredictGrid {
  kind: 'classification' | 'regression';
  size: number;
  /** The box the grid covers, [xmin, xmax, ymin, ymax], from the `extent` asked for. */
  extent: [number, number, number, number];
  /** Values per cell: the number of classes (1 for regression). */
  classes: number;
  /**
   * classification: (size, size, classes) probabilities, row-major; cell (row, col) is the point
   * x = xmin + (col + 0.5)·(xmax − xmin)/size, y = ymax − (row + 0.5)·(ymax − ymin)/size (the
   * first row is the top), and its class c probability is values[(row·size + col)·classes + c].
   * regression: `size` predictions at x = xmin + i·(xmax − xmin)/(size − 1).
   */
  values: Float32Array;
}


interface PointSplit {
  /** (N × inputDim) coordinates, row-major. */
  inputs: Float32Array;
  inputDim: number;
  /** Number of classes; 0 for regression. */
  classes: number;
}

/** Points of a classification task: labels present, targets absent. */
export interface ClassSplit extends PointSplit {
  labels: Uint32Array;
  targets?: undefined;
}

/** Points of a regression task: targets present, labels absent. */
export interface RegressionSplit extends PointSplit {
  targets: Float32Array;
  labels?: undefined;
}

/** The training split at top level, the validation split under `validation`. */
export type PointsPreview = (ClassSplit | RegressionSplit) & {
  kind: 'points';
  validation: ClassSplit | RegressionSplit;
};

export interface TextPreview {
  kind: 'text';
  /** The first 2000 characters. */
  excerpt: string;
  /** The distinct characters, in token order. */
  vocab: string[];
  /** Characters in the text; the first `trainLength` train, the rest validate. */
  length: number;
  trainLength: number;
}

export type DatasetPreview = PointsPreview | TextPreview;

/** An export folder in memory: file name → its bytes. */
export type ExportFolder = Record<string, Uint8Array>;

export declare class Kiln {
  private constructor();
  /** Validates `config`, acquires a WebGPU device and builds the run; rejects with a KilnError naming the bad field. */
  static create(config: SessionConfig | string): Promise<Kiln>;

  /** A new run from a checkpoint of `save()`, built from the config it carries; it continues exactly. */
  static fromCheckpoint(bytes: Bytes): Promise<Kiln>;
  /** A new run from an MLX-layout file of `saveQuantized()`: its config, step and dequantized weights. */
  static fromQuantized(bytes: Bytes): Promise<Kiln>;
  /**
   * A new run from an export folder (file name → bytes): the files of `exportFiles()`, trained
   * on anywhere (PyTorch, Transformers, torchrun), or another char-level Hugging Face Llama
   * (config.json, model.safetensors, tokenizer.json) with its text as train.txt (and
   * validation.txt). What Kiln cannot hold is refused naming the file or field.
   */
  static fromExport(files: Record<string, Bytes>): Promise<Kiln>;

  readonly info: Readonly<RunInfo & { config: FullSessionConfig }>;
  /** Whether a `train()` is in progress. */
  readonly training: boolean;
  /** Whether `dispose()` was called. */
  readonly disposed: boolean;

  /** Subscribes to an event; returns a function that unsubscribes. */
  on<E extends keyof KilnEvents>(event: E, callback: KilnEvents[E]): () => void;
  off<E extends keyof KilnEvents>(event: E, callback: KilnEvents[E]): void;

  /**
   * Trains in chunks of `readEvery` steps, emitting 'metrics' after each and yielding to the
   * event loop between chunks; resolves with the last step's metrics (null if no step ran),
   * early after `pause()` or `dispose()`. A second concurrent `train()` rejects.
   */
  train(options: TrainOptions): Promise<StepMetrics | null>;
  /** Stops a running `train()` after its current chunk. */
  pause(): void;
  /** One training step (also emitted as 'metrics'). */
  step(): Promise<StepMetrics>;
  evaluate(options?: EvaluateOptions): Promise<Evaluation>;
  /** Every parameter tensor in model order. */
  weights(): Promise<WeightTensor[]>;
  updateRatios(): Promise<UpdateRatio[]>;
  /** MLP only. */
  predictGrid(options?: PredictGridOptions): Promise<PredictGrid>;
  /** Llama only: continues `prompt` (its characters must occur in the training text). */
  generate(prompt: string, options?: GenerateOptions): Promise<string>;
  /**
   * Llama only: for each of the prompt's last `context` characters, the `k` (1..=min(vocab,
   * 256), default 5) most likely next characters and their probabilities, most likely first.
   */
  nextTokens(prompt: string, options?: { k?: number }): Promise<PositionGuesses[]>;
  /**
   * MLP only: every neuron's output (inputs, each hidden layer after its activation, outputs)
   * over predictGrid's grid or curve (default size 32, extent 1.5), from one forward pass.
   */
  neuronOutputs(options?: PredictGridOptions): Promise<NeuronOutputs>;
  /** Llama only: every layer's and head's attention probabilities over the prompt's last `context` characters. */
  attentionMaps(prompt: string): Promise<AttentionMaps>;
  /**
   * Histograms (`bins` 1..=64, default 32) and quantiles of every tensor's weights, gradients
   * and last update, and each layer's gradient RMS and activations, as the last step left them.
   */
  inspect(options?: { bins?: number }): Promise<Inspection>;
  /**
   * Quantizes the current weights (8 or 4 bits, groups of 32, 64 or 128 along each row; MLX's
   * layout) into a copy beside them and scores both; `{ quantized: true }` on evaluate,
   * predictGrid and generate then uses the copy.
   */
  quantize(options?: QuantizeOptions): Promise<QuantizeReport>;
  /** The quantized copy as an MLX-layout safetensors file (read back by `Kiln.fromQuantized`). */
  saveQuantized(): Promise<Uint8Array>;
  /**
   * The run as a folder to keep working on elsewhere: a Llama as a Hugging Face
   * LlamaForCausalLM folder (config.json, model.safetensors, tokenizer.json, …), an MLP as a
   * PyTorch nn.Sequential (model.safetensors, model.py, data.csv, kiln_config.json); both with
   * the run's data, train.py (PyTorch, torchrun) and kiln_reference.json (Kiln's outputs).
   */
  exportFiles(): Promise<ExportFolder>;
  /** A safetensors checkpoint (weights, optimizer state, config, step, sampler state). */
  save(options?: { dtype?: CheckpointDtype }): Promise<Uint8Array>;
  /**
   * Snapshot the whole state in memory, for recovery from device loss, at most every `steps`
   * steps (0..=1e9; 0 turns snapshots off; default 100, more for models over a million parameters). In the browser a snapshot is taken
   * when metrics are read, so at most `steps` plus one chunk of steps are trained again.
   */
  setSnapshotEvery(steps: number): Promise<void>;
  /** Destroys the GPU device under the run, as a driver reset would: for testing recovery. */
  simulateDeviceLoss(): Promise<void>;
  /** Restores a checkpoint of the same model; on error the run is unchanged. */
  load(bytes: Bytes): Promise<void>;
  /** The training data (cached at create time). */
  dataset(): DatasetPreview;
  /**
   * Stops training, lets already-queued calls finish, then frees the GPU device and wasm memory
   * (the promise resolves then). Every later call rejects with a KilnError of code 'disposed'.
   */
  dispose(): Promise<void>;
}
