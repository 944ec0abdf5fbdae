// Kiln in the browser's engine without a browser: the npm build (pkg/, `make npm`) on Dawn
// through Node's `webgpu` package (bench/engine_bench.mjs does the measuring).
//
//   node bench/dawn_bench.mjs [--quick] [--scaling | --mixed] [--seconds 3] [--json FILE]
//
// --scaling trains the scaling table's configs (presets::scaling) instead of the presets;
// --mixed trains llama-tiny and llama-small (llama-tiny only with --quick) in fp32 and in mixed
// precision (each run's GPU memory is in its row).
//
// Without a GPU, Dawn needs SwiftShader: VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json
import fs from 'node:fs';
import { create, globals } from 'webgpu';
import * as kiln from '../pkg/kiln.js';
import { benchMatmul, scalingConfigs } from '../pkg/kiln_wasm.js';
import { benchKiln } from './engine_bench.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};

Object.assign(globalThis, globals);
await kiln.init({ gpu: create([]) });
const quick = process.argv.includes('--quick');
/** The Llama presets in both precisions. */
function precisionConfigs() {
  return (quick ? ['llama-tiny'] : ['llama-tiny', 'llama-small']).flatMap((name) =>
    ['fp32', 'mixed'].map((precision) => {
      const config = kiln.preset(name);
      config.model.llama.precision = precision;
      return { name: `${name} ${precision}`, config };
    }));
}
const configs = process.argv.includes('--scaling') ? scalingConfigs() : process.argv.includes('--mixed') ? precisionConfigs() : null;
const report = await benchKiln({ kiln, benchMatmul, engine: 'Dawn (node webgpu)', quick, seconds: Number(arg('--seconds', 3)), configs });
const out = arg('--json');
if (out) fs.writeFileSync(out, JSON.stringify(report, null, 2));
process.exit(0);
