// TF.js side of Kiln's benchmarks: the mlp-spiral preset (2→16→16→2 ReLU, batch 512, Adam
// lr 0.02, cross-entropy) trained with TF.js's WebGPU backend on Dawn — the engine inside
// Chrome — through Node's `webgpu` package, so it runs on a GPU machine without a browser.
//
//   node bench/tfjs_reference.mjs [--seconds 3] [--json FILE]
//
// Without a GPU, Dawn needs SwiftShader: VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json
import fs from 'node:fs';
import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };

const tf = await import('@tensorflow/tfjs');
await import('@tensorflow/tfjs-backend-webgpu');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const seconds = Number(arg('--seconds', 3));

await tf.setBackend('webgpu');
await tf.ready();

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

function step() {
  return optimizer.minimize(() => {
    const idx = tf.randomUniform([512], 0, n, 'int32');
    let h = tf.gather(X, idx);
    params.forEach(([w, b], l) => {
      h = tf.add(tf.matMul(h, w), b);
      if (l < params.length - 1) h = tf.relu(h);
    });
    return tf.losses.softmaxCrossEntropy(tf.gather(Y, idx), h);
  }, true);
}

for (let i = 0; i < 5; i++) tf.dispose(step());
let steps = 0, loss = NaN;
const t0 = performance.now();
while ((performance.now() - t0) / 1000 < seconds || steps < 20) {
  for (let i = 0; i < 10; i++) {
    const l = step();
    if (i === 9) loss = (await l.data())[0]; // one readback per chunk, as Kiln reads its metrics
    tf.dispose(l);
  }
  steps += 10;
}
const rate = steps / ((performance.now() - t0) / 1000);
const result = { engine: 'tfjs-webgpu on Dawn (node webgpu)', tfjs: tf.version_core, preset: 'mlp-spiral', steps_per_sec: rate, final_loss: loss };
console.log(`tfjs webgpu mlp-spiral ${rate.toFixed(1)} steps/s, loss ${loss.toFixed(4)}`);
const out = arg('--json');
if (out) fs.writeFileSync(out, JSON.stringify(result, null, 2));
process.exit(0);
