// The benchmark Kiln runs in a browser's engine, wherever that engine is: Node + `webgpu`
// (bench/dawn_bench.mjs) or a page in headless Chromium (bench/chromium_bench.mjs). Matmul
// GFLOP/s and preset training throughput, measured as the native `kiln bench` measures them.

/**
 * `kiln`: the kiln-gpu module, initialized; `benchMatmul` from its wasm bindings. `configs`:
 * [{name, config}] to train instead of the presets (the scaling table), with no matmuls.
 */
export async function benchKiln({ kiln, benchMatmul, engine, quick = false, seconds = 3, log = console.log, configs = null }) {
  const { Kiln, preset, adapterInfo } = kiln;
  const adapter = await adapterInfo();
  const report = { engine, adapter, matmul: [], training: [] };
  log(`adapter: ${adapter.name} (${adapter.backend})`);

  const squares = quick ? [256, 512] : [256, 512, 1024, 2048, 4096];
  const shapes = configs ? [] : squares.map((s) => [`${s}³`, s, s, s, false]);
  if (!quick && !configs) {
    shapes.push(['llama-small qkv', 4096, 768, 256, true], ['llama-small up', 4096, 1024, 256, true], ['llama-small down', 4096, 256, 1024, true]);
  }
  for (const [label, m, n, k, transB] of shapes) {
    const gflops = await benchMatmul(m, n, k, transB);
    report.matmul.push({ shape: label, m, n, k, gflops });
    log(`matmul ${label.padEnd(18)} ${gflops.toFixed(1).padStart(10)} GFLOP/s`);
  }

  const runs = configs ?? (quick ? ['mlp-spiral', 'llama-tiny'] : ['mlp-spiral', 'llama-tiny', 'llama-small']).map((name) => ({ name, config: preset(name) }));
  for (const { name, config } of runs) {
    const run = await Kiln.create(config);
    const chunk = config.model.mlp ? 50 : quick ? 2 : 10;
    await run.train({ steps: 3, readEvery: 3 });
    let steps = 0;
    let loss = NaN;
    const t0 = performance.now();
    while ((performance.now() - t0) / 1000 < seconds || steps < chunk) {
      const last = await run.train({ steps: chunk, readEvery: chunk });
      loss = last?.loss ?? loss;
      steps += chunk;
    }
    const rate = steps / ((performance.now() - t0) / 1000);
    const info = run.info;
    const r = { preset: name, parameters: info.parameters, steps_per_sec: rate, tokens_per_sec: rate * info.tokensPerStep, dispatches_per_step: info.dispatchesPerStep, gpu_bytes: info.gpuBytes, final_loss: loss };
    report.training.push(r);
    log(`${name.padEnd(12)} ${rate.toFixed(1).padStart(9)} steps/s ${r.tokens_per_sec.toFixed(0).padStart(10)} tokens/s  ${info.dispatchesPerStep} dispatches  ${(info.gpuBytes / 1e6).toFixed(1)} MB  loss ${Number(loss).toFixed(4)}`);
    await run.dispose();
  }
  return report;
}

/**
 * The TF.js reference: mlp-spiral (2→16→16→2 ReLU, batch 512, Adam lr 0.02, cross-entropy) with
 * `tf` already on its webgpu backend. Steps/s over `seconds`, one readback per 10 steps (as
 * Kiln reads its metrics once per chunk).
 */
export async function benchTfjs({ tf, engine, seconds = 3, log = console.log }) {
  // Same data shape as Kiln's spiral: 4096 points, two classes.
  const n = 4096;
  const xs = new Float32Array(n * 2);
  const ys = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const c = i % 2, t = Math.random(), r = 0.05 + 0.95 * t, a = 1.75 * 2 * Math.PI * t + Math.PI * c;
    xs[2 * i] = r * Math.cos(a);
    xs[2 * i + 1] = r * Math.sin(a);
    ys[i] = c;
  }
  const X = tf.tensor2d(xs, [n, 2]);
  const Y = tf.oneHot(tf.tensor1d(ys, 'int32'), 2);
  const layer = (fanIn, out) => [
    tf.variable(tf.randomUniform([fanIn, out], -1 / Math.sqrt(fanIn), 1 / Math.sqrt(fanIn))),
    tf.variable(tf.zeros([out])),
  ];
  const params = [layer(2, 16), layer(16, 16), layer(16, 2)];
  const optimizer = tf.train.adam(0.02);
  const step = () =>
    optimizer.minimize(() => {
      const idx = tf.randomUniform([512], 0, n, 'int32');
      let h = tf.gather(X, idx);
      params.forEach(([w, b], l) => {
        h = tf.add(tf.matMul(h, w), b);
        if (l < params.length - 1) h = tf.relu(h);
      });
      return tf.losses.softmaxCrossEntropy(tf.gather(Y, idx), h);
    }, true);

  for (let i = 0; i < 5; i++) tf.dispose(step());
  let steps = 0;
  let loss = NaN;
  const t0 = performance.now();
  while ((performance.now() - t0) / 1000 < seconds || steps < 20) {
    for (let i = 0; i < 10; i++) {
      const l = step();
      if (i === 9) loss = (await l.data())[0];
      tf.dispose(l);
    }
    steps += 10;
  }
  const rate = steps / ((performance.now() - t0) / 1000);
  log(`tfjs webgpu mlp-spiral ${rate.toFixed(1)} steps/s, loss ${loss.toFixed(4)}`);
  return { engine, tfjs: tf.version_core, preset: 'mlp-spiral', steps_per_sec: rate, final_loss: loss };
}
