// Runs inside a fresh Node project that installed the packed kiln-gpu tarball and `webgpu`
// (Dawn). Each check prints `ok - name` or `not ok - name: reason`; tests/npm/run.mjs counts
// them. Exits non-zero if any check failed.
import { create, globals } from 'webgpu';
import { init, Kiln, presets, preset, validateConfig, shareConfig, openShared, readCheckpoint } from 'kiln-gpu';
import { check, assert, rejects, failsWith, failures, preset_free, mean } from './checks.mjs';

const DISPOSED = 'this Kiln run was disposed';

Object.assign(globalThis, globals);

await check('no WebGPU: create rejects with advice; init with an injected GPU; presets and preset', async () => {
  assert(/not initialized/.test((() => { try { presets(); } catch (e) { return e.message; } })() ?? ''), 'presets() before init should throw');
  // Without a GPU (Node has no navigator.gpu) creating a run rejects, saying what to do.
  await rejects(Kiln.create(preset_free()), 'init({ gpu: create([]) })', 'create without WebGPU');
  await init({ gpu: create([]) });
  const names = presets().map((p) => p.name);
  assert(names.includes('mlp-spiral') && names.includes('llama-tiny'), `presets: ${names}`);
  assert(presets().every((p) => typeof p.description === 'string' && p.description.length > 0), 'descriptions');
  const cfg = preset('mlp-spiral');
  assert(cfg.model.mlp.input_dim === 2 && cfg.data.points.task === 'spiral', JSON.stringify(cfg));
  // f32 fields read as written, not as their f64 widening (0.003000000026077032).
  const tiny = preset('llama-tiny');
  assert(tiny.optimizer.lr === 0.003 && tiny.optimizer.beta1 === 0.9 && tiny.model.llama.norm_eps === 1e-5, JSON.stringify(tiny.optimizer));
  assert(/no preset named/.test((() => { try { preset('nope'); } catch (e) { return e.message; } })() ?? ''), 'unknown preset should throw');
});

await check('invalid configs reject naming the field', async () => {
  const llama = preset('llama-tiny');
  llama.model.llama.heads = 5;
  await rejects(Kiln.create(llama), 'invalid `model.llama.heads`: must divide d_model (64) evenly, got 5', 'heads = 5');
  await failsWith(() => Kiln.create(llama), 'invalid-input', 'model.llama.heads', 'heads = 5');
  const mlp = preset('mlp-spiral');
  // Bad values of every type name the field with the config's own path.
  const o = mlp.optimizer;
  await failsWith(() => Kiln.create({ ...mlp, optimizer: { ...o, lr: NaN } }), 'invalid-input', 'optimizer.lr', 'lr NaN');
  await failsWith(() => Kiln.create(JSON.stringify({ ...mlp, optimizer: { ...o, lr: NaN } })), 'invalid-input', 'optimizer.lr', 'lr NaN as JSON (null)');
  await failsWith(() => Kiln.create({ ...mlp, optimizer: { ...o, beta1: 'high' } }), 'invalid-input', 'optimizer.beta1', 'beta1 a string');
  await failsWith(() => Kiln.create({ ...mlp, optimizer: { ...o, beta1: 1.5 } }), 'invalid-input', 'optimizer.beta1', 'beta1 out of range');
  await failsWith(() => Kiln.create({ ...mlp, batch: -1 }), 'invalid-input', 'batch', 'batch -1');
  await failsWith(() => Kiln.create({ ...mlp, seed: 1.5 }), 'invalid-input', 'seed', 'seed 1.5');
  await failsWith(() => Kiln.create({ ...mlp, model: { mlp: { ...mlp.model.mlp, hidden: [16, 2.5] } } }), 'invalid-input', 'model.mlp.hidden[1]', 'hidden 2.5');
  await failsWith(() => Kiln.create({ ...mlp, data: { points: { ...mlp.data.points, noise: Infinity } } }), 'invalid-input', 'data.points.noise', 'noise Infinity');
  const lr = await failsWith(() => Kiln.create({ ...mlp, optimizer: { ...o, lr: 1e300 } }), 'invalid-input', 'optimizer.lr', 'lr 1e300');
  assert(!/\binf\b/.test(lr.message), lr.message);
  await rejects(Kiln.create({ ...mlp, batch: 0 }), '`batch`', 'batch = 0');
  await rejects(Kiln.create({ ...mlp, optimizer: { ...mlp.optimizer, lr: -1 } }), '`optimizer.lr`', 'lr = -1');
  await rejects(Kiln.create({ ...mlp, bogus: 1 }), 'bogus', 'unknown field');
  await rejects(Kiln.create(42), '`config`', 'a number as config');
  let thrown = null;
  try {
    validateConfig({ ...mlp, model: { mlp: { ...mlp.model.mlp, input_dim: 3 } } });
  } catch (e) {
    thrown = e;
  }
  assert(thrown?.message.includes('`model.mlp.input_dim`'), `validateConfig: ${thrown?.message}`);
});

// A smaller copy of mlp-spiral: the same model and data, a batch SwiftShader steps through fast.
const cfg = preset('mlp-spiral');
cfg.batch = 128;
let run;

await check('create: info describes the run', async () => {
  run = await Kiln.create(cfg);
  const i = run.info;
  assert(i.model === 'mlp' && i.task === 'spiral' && i.regression === false && i.classes === 2, JSON.stringify(i));
  assert(i.parameters === 2 * 16 + 16 + 16 * 16 + 16 + 16 * 2 + 2, `parameters ${i.parameters}`);
  assert(i.dispatchesPerStep > 5, `dispatchesPerStep ${i.dispatchesPerStep}`);
  assert(typeof i.adapter.name === 'string' && i.adapter.name.length > 0, `adapter ${JSON.stringify(i.adapter)}`);
  assert(i.tokensPerStep === 128 && i.config.batch === 128, 'tokensPerStep');
});

await check('mlp-spiral trains: loss falls, metrics arrive in chunks', async () => {
  const before = await run.evaluate();
  const seen = [];
  const off = run.on('metrics', (batch) => {
    assert(batch.stepsPerSecond > 0 && batch.tokensPerSecond > 0, 'throughput in the event');
    seen.push(...batch);
  });
  const last = await run.train({ steps: 120, readEvery: 30 });
  off();
  assert(seen.length === 120, `${seen.length} metrics`);
  assert(seen.every((m, k) => m.step === k + 1 && Number.isFinite(m.loss) && m.gradNorm >= 0), 'steps 1..120, finite');
  assert(last.step === 120, `last ${JSON.stringify(last)}`);
  const first = mean(seen.slice(0, 20).map((m) => m.loss));
  const end = mean(seen.slice(-20).map((m) => m.loss));
  console.log(`  training loss ${first.toFixed(4)} -> ${end.toFixed(4)}`);
  assert(end < 0.85 * first, `training loss did not fall: ${first} -> ${end}`);
  const after = await run.evaluate();
  console.log(`  validation loss ${before.loss.toFixed(4)} -> ${after.loss.toFixed(4)}, accuracy ${after.accuracy}`);
  assert(after.loss < before.loss && after.accuracy > before.accuracy, 'validation improved');
});

await check('overlapping calls are serialized; pause stops train early', async () => {
  const training = run.train({ steps: 1000, readEvery: 5 });
  const [grid, ev, one, ratios] = await Promise.all([
    run.predictGrid({ size: 16 }),
    run.evaluate({ validation: false }),
    run.step(),
    run.updateRatios(),
  ]);
  run.pause();
  const last = await training;
  assert(last.step < 1120, `pause: train ran to step ${last.step}`);
  assert(grid.kind === 'classification' && grid.classes === 2 && grid.values.length === 512 && grid.values.every((p) => p >= 0 && p <= 1), 'grid');
  for (let c = 0; c < 256; c++) assert(Math.abs(grid.values[2 * c] + grid.values[2 * c + 1] - 1) < 1e-5, `cell ${c}: probabilities sum to 1`);
  assert(ev.accuracy !== null && one.step > 120 && ratios.length === 6, 'results');
  const first = run.train({ steps: 10 });
  const second = run.train({ steps: 10 });
  const busy = await rejects(second, 'already training', 'a second concurrent train');
  assert(busy.code === 'busy', busy.code);
  assert((await first).step > 0, 'the first train finishes');
});

await check('weights, updateRatios, dataset, predictGrid', async () => {
  const w = await run.weights();
  assert(w.map((t) => t.name).join() === 'layer0.weight,layer0.bias,layer1.weight,layer1.bias,layer2.weight,layer2.bias', w.map((t) => t.name).join());
  assert(w[0].shape.join() === '16,2' && w[0].data instanceof Float32Array && w[0].data.length === 32, 'layer0.weight');
  await run.updateRatios();
  await run.train({ steps: 5 });
  const r = await run.updateRatios();
  assert(r.every((x) => x.ratio > 0 && x.ratio < 1), `ratios after 5 steps ${JSON.stringify(r)}`);
  const d = run.dataset();
  assert(d.kind === 'points' && d.inputDim === 2 && d.inputs.length === 2 * d.labels.length && d.labels.length === 1600, 'train split');
  assert(d.validation.labels.length === 400, 'validation split');
  await rejects(run.predictGrid({ size: 1000 }), '`size`', 'grid too large');
  await rejects(run.predictGrid({ sizes: 4 }), '`sizes`', 'unknown option');
  // The box a grid covers: a half-width (default 1.5), or bounds; Rust names a bad one.
  assert((await run.predictGrid({ size: 2 })).extent.join() === '-1.5,1.5,-1.5,1.5', 'the default box');
  const box = await run.predictGrid({ size: 4, extent: [2, 4, -1, 0.5] });
  assert(box.extent.join() === '2,4,-1,0.5' && box.values.length === 32, `a box's grid: ${box.extent}`);
  await rejects(run.predictGrid({ extent: [4, 2] }), 'xmin (4) must be below xmax (2)', 'a reversed range');
  const nan = await rejects(run.predictGrid({ extent: [0, NaN] }), '`extent[1]`', 'a NaN bound');
  assert(nan.code === 'invalid-input' && nan.field === 'extent[1]', `${nan.code} ${nan.field}`);
  await rejects(run.predictGrid({ extent: '2' }), '`extent`', 'a string box');
  await rejects(run.generate('hi'), 'Llama', 'generate on an MLP');
});

await check('look inside an MLP: neuronOutputs and inspect', async () => {
  const n = await run.neuronOutputs({ size: 8, extent: [2, 4, -1, 0.5] });
  // The first cell's centre: x = 2 + 0.5 · 2/8, y = 0.5 − 0.5 · 1.5/8 (both exact in f32).
  assert(n.layers[0].values[0] === 2.125 && n.layers[0].values[64] === 0.40625, `first point ${n.layers[0].values[0]}, ${n.layers[0].values[64]}`);
  assert(n.points === 64 && n.layers.map((l) => `${l.name}:${l.neurons}`).join() === 'input:2,layer0:16,layer1:16,output:2', JSON.stringify(n.layers.map((l) => l.name)));
  assert(n.layers.every((l) => l.values.length === l.neurons * 64), 'values are (neurons, points)');
  // The output neurons are predictGrid's class probabilities.
  const g = await run.predictGrid({ size: 8, extent: [2, 4, -1, 0.5] });
  assert(n.layers[3].values.every((v, i) => Math.abs(v - g.values[(i % 64) * 2 + Math.floor(i / 64)]) < 1e-6), 'outputs match predictGrid');
  const stats = await run.inspect({ bins: 16 });
  assert(stats.tensors.length === 6 && stats.tensors.every((t) => t.weights.counts.length === 16 && t.grads.quantiles.length === 9), 'six tensors, 16 bins, 9 quantiles');
  const w = (await run.weights())[0].data;
  const t0 = stats.tensors[0];
  assert(t0.weights.min === Math.min(...w) && t0.weights.max === Math.max(...w), `layer0.weight range ${t0.weights.min}..${t0.weights.max}`);
  assert(stats.layers.map((l) => l.name).join() === 'layer0,layer1,layer2' && stats.layers.every((l) => l.gradRms > 0), JSON.stringify(stats.layers.map((l) => l.gradRms)));
  await failsWith(() => run.inspect({ bins: 65 }), 'invalid-input', 'bins', 'bins 65');
  await rejects(run.attentionMaps('x'), 'Llama', 'attention maps of an MLP');
});

await check('quantize: the copy scores, predicts and reloads from its MLX file; the run keeps its weights', async () => {
  const r = await Kiln.create({ model: { mlp: { input_dim: 2, hidden: [64], output_dim: 2, activation: 'tanh' } }, data: { points: { task: 'circles', points: 300, noise: 0.05, validation_fraction: 0.2 } }, batch: 64, seed: 2 });
  await r.train({ steps: 30 });
  const before = await r.evaluate();
  const rep = await r.quantize({ bits: 4, groupSize: 32 });
  const by = (n) => rep.tensors.find((t) => t.name === n);
  assert(by('layer1.weight').quantized && !by('layer0.weight').quantized && /group size 32/.test(by('layer0.weight').keptBecause), JSON.stringify(rep.tensors.map((t) => [t.name, t.quantized])));
  assert(rep.bytesAfter < rep.bytesBefore && by('layer1.weight').relativeError > 0, `${rep.bytesBefore} → ${rep.bytesAfter}`);
  assert(rep.full.loss === before.loss && (await r.evaluate()).loss === before.loss, 'the run keeps its own weights');
  assert((await r.evaluate({ quantized: true })).loss === rep.quantized.loss, 'evaluate({quantized}) scores the copy');
  const g = await r.predictGrid({ size: 4, quantized: true });
  assert(g.values.length === 32, 'the copy predicts the grid');
  const bytes = await r.saveQuantized();
  const back = await Kiln.fromQuantized(bytes);
  assert((await back.evaluate()).loss === rep.quantized.loss && back.info.config.model.mlp.hidden[0] === 64, 'the MLX file reloads as the copy');
  await failsWith(() => r.quantize({ bits: 3 }), 'invalid-input', 'bits', 'bits 3');
  await rejects(r.quantize({ group: 64 }), 'group', 'an unknown option');
  await rejects(r.quantize([4, 32]), '`options`', 'quantize options as an array');
  await failsWith(() => Kiln.fromQuantized(new Uint8Array(16)), 'bad-checkpoint', 'checkpoint', 'a file that is not one');
  await failsWith(() => back.evaluate({ quantized: 'yes' }), 'invalid-input', 'quantized', 'quantized must be a boolean');
  await back.dispose();
  await r.dispose();
});

await check('save, load and fromCheckpoint restore the run exactly', async () => {
  const bytes = await run.save();
  const saved = await run.weights();
  assert(bytes instanceof Uint8Array && bytes.length > 1000, 'checkpoint bytes');
  await run.train({ steps: 5 });
  await run.load(bytes);
  const restored = await run.weights();
  assert(restored.every((t, k) => t.data.every((x, j) => x === saved[k].data[j])), 'weights differ after load');
  await failsWith(() => run.load(new Uint8Array([1, 2, 3])), 'bad-checkpoint', 'checkpoint', 'garbage checkpoint');
  const header = await readCheckpoint(bytes);
  assert(header.config.batch === 128 && header.step > 0 && (await readCheckpoint(bytes.buffer)).step === header.step, `readCheckpoint ${JSON.stringify(header.step)}`);
  // A NaN written into the first tensor's data is refused on load, naming the tensor.
  const poisoned = bytes.slice();
  const headerLength = Number(new DataView(poisoned.buffer).getBigUint64(0, true));
  new DataView(poisoned.buffer).setFloat32(8 + headerLength, NaN, true);
  const nan = await failsWith(() => run.load(poisoned), 'bad-checkpoint', 'checkpoint', 'NaN weights');
  assert(/tensor `[^`]+` holds a non-finite value/.test(nan.message), nan.message);
  const copy = await Kiln.fromCheckpoint(bytes);
  const copied = await copy.weights();
  assert(copied.every((t, k) => t.data.every((x, j) => x === saved[k].data[j])), 'fromCheckpoint weights differ');
  assert(copy.info.parameters === run.info.parameters, 'fromCheckpoint info');
  const [a, b] = [await run.step(), await copy.step()];
  assert(a.step === b.step && a.loss === b.loss, `loaded runs continue identically: ${JSON.stringify([a, b])}`);
  await copy.dispose();
  // F16: half the file, every weight within f16's rounding (2^-11 relative, 2^-25 near zero).
  const half = await run.save({ dtype: 'f16' });
  const now = await run.weights();
  // Two bytes saved per number (weights, m, v): the headers of a model this small are the rest.
  const full = (await run.save()).length;
  assert(full - half.length > 5 * run.info.parameters, `f16 ${half.length} bytes against f32 ${full}`);
  const fromHalf = await Kiln.fromCheckpoint(half);
  const rounded = await fromHalf.weights();
  assert(rounded.every((t, k) => t.data.every((x, j) => Math.abs(x - now[k].data[j]) <= Math.abs(now[k].data[j]) * 2 ** -11 + 2 ** -25)), 'f16 weights within rounding');
  assert((await readCheckpoint(half)).step === (await readCheckpoint(bytes)).step + 1, 'the f16 header reads');
  await fromHalf.dispose();
  await failsWith(() => run.save({ dtype: 'bf16' }), 'invalid-input', 'dtype', 'an unknown dtype');
});

await check('a lost device is recovered from the snapshot and training continues identically', async () => {
  const small = { ...preset('mlp-spiral'), batch: 16 };
  const steps = (ms) => ms.map((m) => [m.step, m.loss, m.gradNorm]);
  const reference = await Kiln.create(small);
  const seen = [];
  reference.on('metrics', (ms) => seen.push(...steps(ms)));
  await reference.train({ steps: 30, readEvery: 10 });
  await reference.dispose();

  const r = await Kiln.create(small);
  await r.setSnapshotEvery(10);
  const after = [];
  const recoveries = [];
  r.on('recovered', (x) => recoveries.push(x));
  r.on('metrics', (ms) => after.push(...steps(ms)));
  await r.train({ steps: 20, readEvery: 10 }); // a snapshot lands with each read: steps 10 and 20
  await r.train({ steps: 3, readEvery: 3 }); // 23: no snapshot (fewer than 10 steps since 20)
  await r.simulateDeviceLoss();
  await r.train({ steps: 7, readEvery: 7 });
  assert(recoveries.length === 1, `recovered ${recoveries.length} times`);
  const [rec] = recoveries;
  assert(rec.lostAt === 23 && rec.resumedAt === 20 && /destroyed/.test(rec.reason), JSON.stringify(rec));
  // After the recovery the 7 steps are 21..27, exactly as in the uninterrupted run.
  const tail = after.slice(-7);
  assert(JSON.stringify(tail) === JSON.stringify(seen.slice(20, 27)), `after recovery ${JSON.stringify(tail)} vs ${JSON.stringify(seen.slice(20, 27))}`);
  assert((await r.evaluate()).loss > 0, 'the recovered run answers');
  await r.dispose();
});

await check('a regression MLP predicts a curve', async () => {
  const sine = preset('mlp-sine');
  sine.batch = 64;
  const r = await Kiln.create(sine);
  await r.train({ steps: 10 });
  const g = await r.predictGrid({ size: 33, extent: 1 });
  assert(g.kind === 'regression' && g.values.length === 33 && g.values.every(Number.isFinite), 'curve');
  assert((await r.evaluate()).accuracy === null, 'regression accuracy is null');
  assert(r.dataset().targets.length > 0, 'targets');
  await r.dispose();
});

// The Llama checks (and the export folder, which takes an MLP too) live in their own file.
await import('./node-check-llama.mjs');

await check('your own CSV points and your own text; share links round-trip', async () => {
  // Three classes of your own points: task 'custom', the CSV in the config.
  const rows = [];
  for (let i = 0; i < 90; i++) rows.push(`${Math.cos(i) * (1 + (i % 3))},${Math.sin(i) * (1 + (i % 3))},${i % 3}`);
  const mine = { model: { mlp: { input_dim: 2, hidden: [8], output_dim: 3, activation: 'tanh' } }, data: { points: { task: 'custom', csv: rows.join('\n'), validation_fraction: 0.2 } }, batch: 32 };
  const r = await Kiln.create(mine);
  assert(r.info.task === 'custom' && r.info.classes === 3 && r.dataset().labels.length === 72, JSON.stringify(r.info.task));
  await r.train({ steps: 5 });
  const g = await r.predictGrid({ size: 4 });
  assert(g.classes === 3 && g.values.length === 48, `3-class grid ${g.values.length}`);
  await r.dispose();
  const bad = await failsWith(() => Kiln.create({ ...mine, data: { points: { ...mine.data.points, csv: '1,2,0\n1,x,1' } } }), 'invalid-input', 'data.points.csv', 'bad CSV');
  assert(bad.message.includes('line 2, column y: `x` is not a number') && bad.reason === 'line 2, column y: `x` is not a number', `${bad.message} / ${bad.reason}`);
  // Standardized inputs: the network sees each column centred and scaled, the points stay as given,
  // and the export's model.py applies the same scaling (the folder comes back exactly).
  const far = rows.map((row) => row.split(',').map(Number)).map(([x, y, l]) => `${x + 50},${y * 10},${l}`);
  const std = await Kiln.create({ ...mine, data: { points: { ...mine.data.points, csv: far.join('\n'), standardize: true } } });
  const sc = std.info.inputScaling;
  assert(sc && Math.abs(sc.mean[0] - 50) < 1 && sc.std[1] > 5 && r.info.inputScaling === null, `input scaling ${JSON.stringify(sc)}`);
  assert(Math.min(...std.dataset().inputs.filter((_, i) => i % 2 === 0)) > 45, 'dataset() keeps the points as given');
  await std.train({ steps: 5 });
  const files = await std.exportFiles();
  const modelPy = new TextDecoder().decode(files['model.py']);
  assert(modelPy.includes('INPUT_MEAN = [') && modelPy.includes('class Standardized(nn.Sequential)'), 'model.py standardizes');
  const back = await Kiln.fromExport(files);
  assert((await back.evaluate()).loss === (await std.evaluate()).loss && back.info.inputScaling.mean.join() === sc.mean.join(), 'the export comes back exactly');
  await back.dispose();
  await std.dispose();
  // Share links carry the config (your data too, while it fits) and open validated.
  for (const name of presets().map((p) => p.name)) {
    const shared = shareConfig(preset(name));
    assert(shared.dropped === null && JSON.stringify(openShared(shared.state)) === JSON.stringify(preset(name)), `share ${name}`);
  }
  assert(JSON.stringify(openShared(shareConfig(mine).state)) === JSON.stringify(validateConfig(mine)), 'your points travel in the link');
  await failsWith(() => openShared('!!'), 'invalid-input', 'url state', 'a damaged link');
});

await check('after dispose() every call rejects', async () => {
  const pending = run.evaluate(); // queued before dispose: still answered
  const disposing = run.dispose();
  await pending;
  await disposing;
  assert(run.disposed, 'disposed flag');
  for (const [name, call] of [
    ['train', () => run.train({ steps: 1 })],
    ['step', () => run.step()],
    ['evaluate', () => run.evaluate()],
    ['weights', () => run.weights()],
    ['updateRatios', () => run.updateRatios()],
    ['predictGrid', () => run.predictGrid()],
    ['neuronOutputs', () => run.neuronOutputs()],
    ['inspect', () => run.inspect()],
    ['save', () => run.save()],
    ['load', () => run.load(new Uint8Array(8))],
  ]) {
    const e = await rejects(call(), DISPOSED, name);
    assert(e.message === DISPOSED && e.code === 'disposed', `${name}: ${e.message}`);
  }
  let thrown = null;
  try {
    run.dataset();
  } catch (e) {
    thrown = e;
  }
  assert(thrown?.message === DISPOSED, 'dataset() after dispose');
  await run.dispose(); // twice is fine
});

console.log(`node checks: ${failures() ? `${failures()} failed` : 'all passed'}`);
process.exitCode = failures() ? 1 : 0;
