// Kiln in the browser's engine without a browser: the npm build (pkg/, `make npm`) on Dawn
// through Node's `webgpu` package (bench/engine_bench.mjs does the measuring).
//
//   node bench/dawn_bench.mjs [--quick] [--scaling | --mixed] [--profile] [--seconds 3] [--json FILE]
//                             [--toggles disable_robustness,disable_workgroup_init,...]
//
// --scaling trains the scaling table's configs (presets::scaling) instead of the presets;
// --mixed trains llama-tiny and llama-small (llama-tiny only with --quick) in fp32 and in mixed
// precision (each run's GPU memory is in its row); --profile then times each config's step
// dispatch by dispatch (profileStep), as `kiln bench --scaling` does natively. --toggles turns
// Dawn features a browser keeps on off (its robustness checks, zero-filled workgroup memory,
// guarded integer division), to size what each costs; the page can never do so.
//
// Without a GPU, Dawn needs SwiftShader: VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json
import fs from 'node:fs';
import { create, globals } from 'webgpu';
import * as kiln from '../pkg/kiln.js';
import { benchMatmul, profileStep, scalingConfigs } from '../pkg/kiln_wasm.js';
import { benchKiln } from './engine_bench.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};

Object.assign(globalThis, globals);
const toggles = arg('--toggles');
await kiln.init({ gpu: create(toggles ? [`enable-dawn-features=${toggles}`] : []) });
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
// KILN_SCALING_ONLY=PREFIX keeps the scaling configs whose name starts with it (as natively).
const scaling = () => scalingConfigs().filter((c) => c.name.startsWith(process.env.KILN_SCALING_ONLY ?? ''));
const configs = process.argv.includes('--scaling') ? scaling() : process.argv.includes('--mixed') ? precisionConfigs() : null;
const report = await benchKiln({ kiln, benchMatmul, engine: toggles ? `Dawn (node webgpu; ${toggles})` : 'Dawn (node webgpu)', quick, seconds: Number(arg('--seconds', 3)), configs });
if (process.argv.includes('--profile')) {
  report.profile = [];
  for (const { name, config } of configs ?? []) {
    const rows = await profileStep(name, JSON.stringify(config));
    report.profile.push(...rows);
    console.log(`\nprofile ${name}: ${rows.reduce((s, r) => s + r.us_per_step, 0).toFixed(0)} µs a step`);
    for (const r of rows) console.log(`  ${r.entry.padEnd(36)} ${String(r.dispatches).padStart(4)} ${r.us_per_step.toFixed(1).padStart(9)} µs`);
  }
}
const out = arg('--json');
if (out) fs.writeFileSync(out, JSON.stringify(report, null, 2));
process.exit(0);
