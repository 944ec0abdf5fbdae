// Type declarations for kiln-gpu (js/kiln.js). The config types mirror the serde JSON of the
// Rust crate's `SessionConfig` (src/config.rs): snake_case fields, externally tagged enums.

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
// Configuration (the JSON of src/config.rs `SessionConfig`)

export type Activation = 'relu' | 'silu' | 'tanh';

export interface MlpConfig {
  /** 2 for the classification tasks, 1 for the regression tasks. */
  input_dim: number;
  /** Widths of the hidden layers, e.g. [16, 16]; at most 15 layers of width 1..=4096. */
  hidden: number[];
  /** Classes (2; 2..=10 with CSV data) or 1 for regression. */
  output_dim: number;
  activation: Activation;
}

export interface LlamaConfig {
  /** Token vocabulary; at least the number of distinct characters of the text. */
  vocab: number;
  d_model: number;
  /** Must divide d_model; d_model / heads must be even. */
  heads: number;
  layers: number;
  /** Tokens per sequence (attention window), 1..=1024. */
  context: number;
  /** Width of the SwiGLU hidden layer. */
  hidden: number;
  /** RoPE base, default 10000. */
  rope_theta?: number;
  /** RMSNorm epsilon, default 1e-5. */
  norm_eps?: number;
}

export type ModelConfig = { mlp: MlpConfig } | { llama: LlamaConfig };

export type PointTask = 'spiral' | 'circles' | 'xor' | 'gaussians' | 'sine' | 'piecewise';

export interface PointData {
  task: PointTask;
  /** Points to generate, 1..=100000. */
  points: number;
  /** Gaussian noise (standard deviation), 0..=1. */
  noise: number;
  /** Fraction held out for validation, 0.05..=0.5. */
  validation_fraction: number;
  /** Your own points as CSV lines `x,y,label` (classification) or `x,target` (regression). */
  csv?: string;
}

export interface TextData {
  /** Your own text (at most 1 MiB, 2..=256 distinct characters); omitted: Genesis (KJV). */
  text?: string;
  validation_fraction: number;
}

export type DataConfig = { points: PointData } | { text: TextData };

export type Schedule =
  | { kind: 'constant' }
  | { kind: 'warmup_cosine'; warmup_steps: number; total_steps: number; min_lr_fraction: number };

export interface OptimConfig {
  kind: 'adamw' | 'sgd';
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weight_decay: number;
  /** SGD momentum. */
  momentum: number;
  /** Global gradient-norm clip; 0 disables it. */
  clip: number;
  /** Micro-batches averaged into one update, 1..=64. */
  accumulation: number;
  schedule: Schedule;
}

export interface SessionConfig {
  model: ModelConfig;
  data: DataConfig;
  /** Examples per micro-batch: points for an MLP, sequences for a Llama. */
  batch: number;
  /** Missing fields take their defaults (AdamW, lr 0.01, clip 1, constant schedule). */
  optimizer?: Partial<OptimConfig>;
  seed?: number;
}

/** A preset's config has every field filled in. */
export interface FullSessionConfig extends SessionConfig {
  optimizer: OptimConfig;
  seed: number;
}

export interface PresetInfo {
  name: string;
  description: string;
}

/** The built-in presets. Needs `await init()`. */
export function presets(): PresetInfo[];

/** A preset's config, to edit and pass to `Kiln.create`. Throws for an unknown name. Needs `await init()`. */
export function preset(name: string): FullSessionConfig;

/** Throws an Error naming the bad field (`invalid \`llama.heads\`: …`). Needs `await init()`. */
export function validateConfig(config: SessionConfig | string): void;

export interface AdapterInfo {
  name: string;
  /** e.g. "BrowserWebGpu". */
  backend: string;
  driver: string;
  maxStorageBindingBytes: number;
  maxBufferBytes: number;
  maxWorkgroupsPerDim: number;
  maxWorkgroupStorageBytes: number;
}

/** Acquires a WebGPU device and describes its adapter. */
export function adapterInfo(): Promise<AdapterInfo>;

// ---------------------------------------------------------------------------------------------
// A run

export interface RunInfo {
  /** Trainable parameters. */
  parameters: number;
  /** GPU dispatches per optimizer step. */
  dispatchesPerStep: number;
  adapter: AdapterInfo;
  model: 'mlp' | 'llama';
  /** The point task, or 'text' for a Llama. */
  task: PointTask | 'text';
  /** True for the regression tasks (sine, piecewise). */
  regression: boolean;
  /** Output classes (vocabulary for a Llama); 0 for regression. */
  classes: number;
  batch: number;
  /** batch × accumulation. */
  examplesPerStep: number;
  /** examplesPerStep × context (= examplesPerStep for an MLP). */
  tokensPerStep: number;
  /** The validated config, every default filled in. */
  config: FullSessionConfig;
}

export interface StepMetrics {
  /** 1-based optimizer step. */
  step: number;
  /** Mean training loss of the step's batch (NaN if it diverged). */
  loss: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
}

export interface Throughput {
  stepsPerSecond: number;
  /** Tokens (Llama) or examples (MLP) per second. */
  tokensPerSecond: number;
}

/** The steps of one chunk, with the chunk's throughput. */
export type MetricsEvent = StepMetrics[] & Throughput;

/**
 * The GPU device was lost (driver reset, the browser reclaiming it) and the run was rebuilt on
 * a new device from its latest in-memory snapshot. Steps after `resumedAt` are trained again,
 * identically (the metrics of those steps arrive again with the same values).
 */
export interface Recovery {
  /** Why the device was lost. */
  reason: string;
  /** The step training had reached. */
  lostAt: number;
  /** The snapshot's step, where training continues. */
  resumedAt: number;
}

export interface KilnEvents {
  metrics: (metrics: MetricsEvent, throughput: Throughput) => void;
  error: (error: Error) => void;
  recovered: (recovery: Recovery) => void;
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
}

export interface Evaluation {
  loss: number;
  /** Fraction of correct classes or next tokens; null for regression. */
  accuracy: number | null;
}

export interface WeightTensor {
  /** e.g. "layer0.weight", "blocks.0.attn.wq". */
  name: string;
  shape: number[];
  /** A copy of the values, row-major. */
  data: Float32Array;
}

export interface UpdateRatio {
  name: string;
  /** ‖Δw‖ / ‖w‖ at the last step trained (GPU-computed each step); 0 before any step. */
  ratio: number;
}

export interface PredictGridOptions {
  /** Grid side (classification, 1..=512) or number of x values (regression, 2..=65536); default 64. */
  size?: number;
  /** Half-width of the square (or interval) around the origin; default 1.5. */
  extent?: number;
}

export interface PredictGrid {
  kind: 'classification' | 'regression';
  size: number;
  extent: number;
  /**
   * classification: size×size class-1 probabilities, row-major; cell (row, col) is the point
   * x = -extent + (col + 0.5)·2·extent/size, y = extent − (row + 0.5)·2·extent/size (y down).
   * regression: `size` predictions at x = -extent + i·2·extent/(size − 1).
   */
  values: Float32Array;
}

export interface GenerateOptions {
  /** Characters to generate, 1..=4096 (default 200). */
  maxTokens?: number;
  /** Softmax temperature, 0..=10; 0 is greedy (default 0.8). */
  temperature?: number;
  /** Sample from the k most likely characters (default 20). */
  topK?: number;
  /** Sampler seed (default 0): the same seed gives the same text. */
  seed?: number;
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

export declare class Kiln {
  private constructor();
  /** Validates `config`, acquires a WebGPU device and builds the run; rejects with an Error naming the bad field. */
  static create(config: SessionConfig | string): Promise<Kiln>;

  /** A new run from a checkpoint of `save()`, built from the config it carries; it continues exactly. */
  static fromCheckpoint(bytes: Uint8Array | ArrayBuffer | ArrayBufferView): Promise<Kiln>;

  readonly info: Readonly<RunInfo>;
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
  /** A safetensors checkpoint (weights, optimizer state, config, step, sampler state). */
  save(): Promise<Uint8Array>;
  /**
   * Snapshot the whole state in memory, for recovery from device loss, at most every `steps`
   * steps (0..=1e9; 0 turns snapshots off; default 100, more for models over a million parameters). In the browser a snapshot is taken
   * when metrics are read, so at most `steps` plus one chunk of steps are trained again.
   */
  setSnapshotEvery(steps: number): Promise<void>;
  /** Destroys the GPU device under the run, as a driver reset would: for testing recovery. */
  simulateDeviceLoss(): Promise<void>;
  /** Restores a checkpoint of the same model; on error the run is unchanged. */
  load(bytes: Uint8Array | ArrayBuffer | ArrayBufferView): Promise<void>;
  /** The training data (cached at create time). */
  dataset(): DatasetPreview;
  /**
   * Stops training, lets already-queued calls finish, then frees the GPU device and wasm memory
   * (the promise resolves then). Every later call rejects with Error('this Kiln run was disposed').
   */
  dispose(): Promise<void>;
}
