// Compiled with `tsc --noEmit --strict` against the installed kiln-gpu: the declarations must
// accept the documented uses and reject the wrong ones (each @ts-expect-error must be needed).
import { init, Kiln, presets, preset, validateConfig, adapterInfo } from 'kiln-gpu';
import type { SessionConfig, StepMetrics, MetricsEvent, PredictGrid, DatasetPreview, WeightTensor, UpdateRatio, Evaluation, RunInfo, FullSessionConfig } from 'kiln-gpu';

export async function documented(gpu: { requestAdapter(options?: object): Promise<object | null> }): Promise<void> {
  await init({ gpu, wasm: new URL('https://example.com/kiln_wasm_bg.wasm') });
  await init({ wasm: new Uint8Array(8) });
  const names: string[] = presets().map((p) => p.name);
  const cfg: FullSessionConfig = preset(names[0]);
  cfg.batch = 64;
  cfg.optimizer.lr = 0.01;
  if ('mlp' in cfg.model) cfg.model.mlp.hidden.push(8);
  const own: SessionConfig = {
    model: { llama: { vocab: 60, d_model: 64, heads: 4, layers: 2, context: 64, hidden: 192 } },
    data: { text: { validation_fraction: 0.1 } },
    batch: 8,
    optimizer: { lr: 3e-3, schedule: { kind: 'warmup_cosine', warmup_steps: 10, total_steps: 100, min_lr_fraction: 0.1 } },
  };
  validateConfig(own);
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
  const text: string = await run.generate('In the', { maxTokens: 10, temperature: 0, topK: 5, seed: 1 });
  const bytes: Uint8Array = await run.save();
  await run.load(bytes);
  await run.load(new ArrayBuffer(8));
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
  // @ts-expect-error unknown event
  run.on('done', () => {});
  // @ts-expect-error the model is mlp or llama
  const bad: SessionConfig = { model: { cnn: {} }, data: { text: { validation_fraction: 0.1 } }, batch: 1 };
  // @ts-expect-error activation names are fixed
  const act: SessionConfig = { model: { mlp: { input_dim: 2, hidden: [], output_dim: 2, activation: 'gelu' } }, data: { points: { task: 'spiral', points: 10, noise: 0, validation_fraction: 0.2 } }, batch: 1 };
  // @ts-expect-error Kiln has no public constructor
  new Kiln();
  // @ts-expect-error info is read-only
  run.info.parameters = 3;
  void [bad, act];
}
