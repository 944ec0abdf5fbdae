// TF.js side of Kiln's benchmarks: mlp-spiral trained with TF.js's WebGPU backend on Dawn — the
// engine inside Chrome — through Node's `webgpu` package, so it runs on a GPU machine without a
// browser (bench/engine_bench.mjs has the model; bench/chromium_bench.mjs runs it in Chromium).
//
//   node bench/tfjs_reference.mjs [--seconds 3] [--json FILE]
//
// Without a GPU, Dawn needs SwiftShader: VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json
import fs from 'node:fs';
import { create, globals } from 'webgpu';
import { benchTfjs } from './engine_bench.mjs';

Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };

const tf = await import('@tensorflow/tfjs');
await import('@tensorflow/tfjs-backend-webgpu');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
await tf.setBackend('webgpu');
await tf.ready();
const result = await benchTfjs({ tf, engine: 'tfjs-webgpu on Dawn (node webgpu)', seconds: Number(arg('--seconds', 3)) });
const out = arg('--json');
if (out) fs.writeFileSync(out, JSON.stringify(result, null, 2));
process.exit(0);
