// Kiln in the browser's engine without a browser: the npm build (pkg/, `make npm`) on Dawn
// through Node's `webgpu` package. Matmul GFLOP/s and preset training throughput, as the
// native `kiln bench` measures them.
//
//   node bench/dawn_bench.mjs [--quick] [--seconds 3] [--json FILE]
//
// Without a GPU, Dawn needs SwiftShader: VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json
import fs from 'node:fs';
import { create, globals } from 'webgpu';
import { init, Kiln, preset, adapterInfo } from '../pkg/kiln.js';
import { benchMatmul } from '../pkg/kiln_wasm.js';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const quick = process.argv.includes('--quick');
const seconds = Number(arg('--seconds', 3));

Object.assign(globalThis, globals);
await init({ gpu: create([]) });
const adapter = await adapterInfo();
const report = { engine: 'Dawn (node webgpu)', adapter, matmul: [], training: [] };
console.log(`adapter: ${adapter.name} (${adapter.backend})`);

const squares = quick ? [256, 512] : [256, 512, 1024, 2048, 4096];
const shapes = squares.map((s) => [`${s}³`, s, s, s, false]);
if (!quick) {
  shapes.push(['llama-small qkv', 4096, 768, 256, true], ['llama-small up', 4096, 1024, 256, true], ['llama-small down', 4096, 256, 1024, true]);
}
for (const [label, m, n, k, transB] of shapes) {
  const gflops = await benchMatmul(m, n, k, transB);
  report.matmul.push({ shape: label, m, n, k, gflops });
  console.log(`matmul ${label.padEnd(18)} ${gflops.toFixed(1).padStart(10)} GFLOP/s`);
}

for (const name of quick ? ['mlp-spiral', 'llama-tiny'] : ['mlp-spiral', 'llama-tiny', 'llama-small']) {
  const run = await Kiln.create(preset(name));
  const chunk = name === 'mlp-spiral' ? 50 : quick ? 2 : 10;
  await run.train({ steps: 3, readEvery: 3 });
  let steps = 0, loss = NaN;
  const t0 = performance.now();
  while ((performance.now() - t0) / 1000 < seconds || steps < chunk) {
    const last = await run.train({ steps: chunk, readEvery: chunk });
    loss = last?.loss ?? loss;
    steps += chunk;
  }
  const rate = steps / ((performance.now() - t0) / 1000);
  const info = run.info;
  const r = { preset: name, steps_per_sec: rate, tokens_per_sec: rate * info.tokensPerStep, dispatches_per_step: info.dispatchesPerStep, final_loss: loss };
  report.training.push(r);
  console.log(`${name.padEnd(12)} ${rate.toFixed(1).padStart(9)} steps/s ${r.tokens_per_sec.toFixed(0).padStart(10)} tokens/s  ${info.dispatchesPerStep} dispatches  loss ${Number(loss).toFixed(4)}`);
  await run.dispose();
}
const out = arg('--json');
if (out) fs.writeFileSync(out, JSON.stringify(report, null, 2));
process.exit(0);
