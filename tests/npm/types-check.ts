// Compiled with `tsc --noEmit --strict` against the installed kiln-gpu: the declarations must
// accept the documented uses and reject the wrong ones (each @ts-expect-error must be needed).
import { init, Kiln, presets, preset, validateConfig, adapterInfo, shareConfig, openShared, readCheckpoint, parsePoints } from 'kiln-gpu';
import type { SessionConfig, StepMetrics, MetricsEvent, PredictGrid, DatasetPreview, WeightTensor, UpdateRatio, Evaluation, RunInfo, FullSessionConfig, KilnError, ErrorCode, Shared, CheckpointInfo, Recovered, NeuronOutputs, AttentionMaps, Inspection, QuantizeReport, ExportFolder } from 'kiln-gpu';

export async function documented(gpu: { requestAdapter(options?: object): Promise<object | null> }): Promise<void> {
  await init({ gpu, wasm: new URL('https://example.com/kiln_wasm_bg.wasm') });
  await init({ wasm: new Uint8Array(8) });
  const names: string[] = presets().map((p) => p.name);
  const cfg: FullSessionConfig = preset(names[0]);
  cfg.batch = 64;
  cfg.optimizer.lr = 0.01;
  if ('mlp' in cfg.model) cfg.model.mlp.hidden.push(8);
  const own: SessionConfig = {
    model: { llama: { vocab: 60, d_model: 64, heads: 4, layers: 2, context: 64, hidden: 192, short_conv: true } },
    data: { text: { validation_fraction: 0.1 } },
    batch: 8,
    optimizer: { lr: 3e-3, schedule: { kind: 'warmup_cosine', warmup_steps: 10, total_steps: 100, min_lr_fraction: 0.1 } },
  };
  const full: FullSessionConfig = validateConfig(own);
  // The data union narrows with `in`: your own text in a preset's config.
  const tiny = preset('llama-tiny');
  if ('text' in tiny.data) tiny.data.text.text = 'my own text, at least sixty-four characters long, to train a Llama on';
  const points: SessionConfig = {
    model: { mlp: { input_dim: 2, hidden: [8], output_dim: 3, activation: 'tanh' } },
    data: { points: { task: 'custom', csv: '0,0,0\n1,1,1\n2,2,2\n3,3,0', validation_fraction: 0.25 } },
    batch: 4,
  };
  const shared: Shared = shareConfig(points);
  const reopened: FullSessionConfig = openShared(shared.state);
  const dropped: string | null = shared.dropped;
  const split = parsePoints('x,y,label\n0,0,1');
  const dim: number = split.inputDim;
  try {
    await Kiln.create(points);
  } catch (e) {
    const k = e as KilnError;
    const code: ErrorCode = k.code;
    if (k.code === 'invalid-input') console.log(k.field?.startsWith('model.'));
    void code;
  }
  void [full, reopened, dropped, dim];
  const run = await Kiln.create(cfg);
  const info: Readonly<RunInfo> = run.info;
  const params: number = info.parameters + info.dispatchesPerStep;
  const model: 'mlp' | 'llama' = info.model;
  const off = run.on('metrics', (batch: MetricsEvent) => {
    const last: StepMetrics | undefined = batch[batch.length - 1];
    const rate: number = batch.stepsPerSecond + batch.tokensPerSecond + (last?.gradNorm ?? 0);
    void rate;
  });
  run.on('error', (e: Error) => console.error(e.message));
  off();
  const last: StepMetrics | null = await run.train({ steps: 10, readEvery: 5 });
  run.pause();
  const one: StepMetrics = await run.step();
  const ev: Evaluation = await run.evaluate({ validation: false });
  const acc: number | null = ev.accuracy;
  const w: WeightTensor[] = await run.weights();
  const f: Float32Array = w[0].data;
  const r: UpdateRatio[] = await run.updateRatios();
  const g: PredictGrid = await run.predictGrid({ size: 32, extent: 2 });
  const [xmin, xmax, ymin, ymax]: [number, number, number, number] = (await run.predictGrid({ extent: [2, 4, -1, 0.5] })).extent;
  const neurons: NeuronOutputs = await run.neuronOutputs({ size: 16 });
  const firstHidden: number[] = neurons.layers[1].values;
  const maps: AttentionMaps = await run.attentionMaps('In the');
  const inside: Inspection = await run.inspect({ bins: 16 });
  const report: QuantizeReport = await run.quantize({ bits: 4, groupSize: 32 });
  const kept: string | null = report.tensors[0].keptBecause;
  const mlx: Uint8Array = await run.saveQuantized();
  const fromMlx: Kiln = await Kiln.fromQuantized(mlx);
  const grid: PredictGrid = await fromMlx.predictGrid({ quantized: true });
  const folder: ExportFolder = await run.exportFiles();
  const hfConfig: Uint8Array = folder['config.json'];
  const imported: Kiln = await Kiln.fromExport({ ...folder, 'train.txt': new TextEncoder().encode('more text') });
  // @ts-expect-error: an export folder is file name → bytes, not a list of names
  await Kiln.fromExport(['config.json']);
  void [hfConfig, imported];
  // @ts-expect-error: bits is a number
  await run.quantize({ bits: '8' });
  const gradRms: number = inside.layers[0].gradRms;
  const activation: number | undefined = inside.layers[0].activation?.rms;
  // @ts-expect-error: bins is a number
  await run.inspect({ bins: '16' });
  const text: string = await run.generate('In the', { maxTokens: 10, temperature: 0, topK: 5, seed: 1 });
  const bytes: Uint8Array = await run.save();
  const halfBytes: Uint8Array = await run.save({ dtype: 'f16' });
  // @ts-expect-error: f16 or f32 only
  await run.save({ dtype: 'bf16' });
  await run.load(bytes);
  await run.load(new ArrayBuffer(8));
  // TypeScript 5.7+ types a view's `.buffer` as ArrayBufferLike.
  await run.load(bytes.buffer);
  const header: CheckpointInfo = await readCheckpoint(bytes);
  const at: number = header.step;
  run.on('recovered', (r: Recovered) => console.log(r.lostAt - r.resumedAt));
  const scored: number = (await run.evaluate()).scored;
  void [at, scored];
  const copy: Kiln = await Kiln.fromCheckpoint(bytes);
  await copy.dispose();
  const d: DatasetPreview = run.dataset();
  if (d.kind === 'text') {
    const v: string[] = d.vocab;
    void v;
  } else if (d.labels) {
    const labels: Uint32Array = d.labels;
    void labels;
  } else {
    const targets: Float32Array = d.targets;
    void targets;
  }
  const a = await adapterInfo();
  const n: string = a.name;
  await run.dispose();
  void [params, model, last, one, acc, f, r, g, text, n];
}

export async function rejected(run: Kiln): Promise<void> {
  // @ts-expect-error steps is required
  await run.train({});
  // @ts-expect-error steps is a number
  await run.train({ steps: '10' });
  // @ts-expect-error unknown option
  await run.predictGrid({ sizes: 4 });
  // @ts-expect-error a box has 2 or 4 bounds
  await run.predictGrid({ extent: [0, 1, 2] });
  // @ts-expect-error unknown event
  run.on('done', () => {});
  // @ts-expect-error the model is mlp or llama
  const bad: SessionConfig = { model: { cnn: {} }, data: { text: { validation_fraction: 0.1 } }, batch: 1 };
  // @ts-expect-error activation names are fixed
  const act: SessionConfig = { model: { mlp: { input_dim: 2, hidden: [], output_dim: 2, activation: 'gelu' } }, data: { points: { task: 'spiral', points: 10, noise: 0, validation_fraction: 0.2 } }, batch: 1 };
  // @ts-expect-error error codes are a fixed set
  const code: ErrorCode = 'oops';
  // @ts-expect-error a custom task's points are CSV text
  const csv: SessionConfig = { model: { mlp: { input_dim: 2, hidden: [], output_dim: 2, activation: 'relu' } }, data: { points: { task: 'custom', csv: [1, 2], validation_fraction: 0.2 } }, batch: 1 };
  void [code, csv];
  // @ts-expect-error Kiln has no public constructor
  new Kiln();
  // @ts-expect-error info is read-only
  run.info.parameters = 3;
  void [bad, act];
}
