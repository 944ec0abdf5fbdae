// Runs bench/engine_bench.mjs in this page: Kiln (pkg/, the npm build) and TF.js's webgpu
// backend on the browser's own WebGPU. ?quick=1&seconds=N; the report lands in
// window.benchReport (bench/chromium_bench.mjs waits for it).
import * as kiln from '../../pkg/kiln.js';
import { benchMatmul } from '../../pkg/kiln_wasm.js';
import { benchKiln, benchTfjs } from '../engine_bench.mjs';

const params = new URLSearchParams(location.search);
const quick = params.get('quick') === '1';
const seconds = Number(params.get('seconds') ?? 3);
const pre = document.getElementById('log');
const log = (line) => {
  console.log(line);
  pre.textContent += line + '\n';
};
const engine = `Chromium ${navigator.userAgent.match(/Chrome\/([\d.]+)/)?.[1] ?? '?'}`;

try {
  await kiln.init();
  const report = await benchKiln({ kiln, benchMatmul, engine, quick, seconds, log });
  await globalThis.tf.setBackend('webgpu');
  await globalThis.tf.ready();
  report.tfjs = await benchTfjs({ tf: globalThis.tf, engine: `tfjs-webgpu on ${engine}`, seconds, log });
  window.benchReport = report;
} catch (e) {
  log(`benchmark failed: ${e?.stack ?? e}`);
  window.benchReport = { error: String(e?.message ?? e) };
}
