// first_step_dawn.mjs — how soon kiln-gpu trains from a cold start on Dawn (Node + `webgpu`,
// the npm build in pkg/), the stand-in for a browser with a real GPU. Each preset runs in a
// fresh process, timed from that process's start: the wasm initialized with a device, the run
// built (`Kiln.create`: parameters, data, the step's shader modules and pipelines), its first
// step trained and read back (the first submit waits for every pipeline the step compiles), and
// ten more. A benchmark: it prints a table, writes --json and asserts nothing.
//
//   make npm && node bench/first_step_dawn.mjs [--runs 3] [--json FILE] [preset ...]
//
// Without a GPU, Dawn needs SwiftShader: VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const argv = process.argv.slice(2);
const arg = (name, fallback) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);

/** One cold start in this process: milliseconds since the process began, at each stage. */
async function coldStart(name) {
  const { create, globals } = await import('webgpu');
  Object.assign(globalThis, globals);
  const kiln = await import('../pkg/kiln.js');
  const imported = performance.now();
  await kiln.init({ gpu: create([]) });
  const adapter = await kiln.adapterInfo();
  const initialized = performance.now();
  const run = await kiln.Kiln.create(kiln.preset(name));
  const built = performance.now();
  const first = await run.train({ steps: 1, readEvery: 1 });
  const firstStep = performance.now();
  await run.train({ steps: 10, readEvery: 10 });
  const tenMore = performance.now() - firstStep;
  return { preset: name, adapter: adapter.name, imported, initialized, built, firstStep, loss: first?.loss, steadyStepMs: tenMore / 10 };
}

if (argv[0] === '--one') {
  console.log(JSON.stringify(await coldStart(argv[1])));
  process.exit(0);
}

const runs = Number(arg('--runs', 3));
if (!(runs >= 1)) throw new Error('--runs takes a count of at least 1');
const valued = new Set(['--runs', '--json'].flatMap((f) => (argv.includes(f) ? [argv.indexOf(f), argv.indexOf(f) + 1] : [])));
const named = argv.filter((a, i) => !valued.has(i) && !a.startsWith('--'));
const presets = named.length ? named : ['mlp-spiral', 'llama-tiny', 'llama-small'];
const rows = [];
for (const name of presets) {
  for (let r = 0; r < runs; r++) {
    const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--one', name], { encoding: 'utf8' });
    rows.push(JSON.parse(out.trim().split('\n').pop()));
  }
}
const ms = (x) => x.toFixed(0).padStart(6);
console.log(`adapter: ${rows[0]?.adapter}`);
console.log('| preset | modules imported | wasm + device | run built | first step read | steady step |');
console.log('|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(`| ${r.preset} | ${ms(r.imported)} ms | ${ms(r.initialized)} ms | ${ms(r.built)} ms | ${ms(r.firstStep)} ms | ${r.steadyStepMs.toFixed(2)} ms |`);
}
const out = arg('--json');
if (out) fs.writeFileSync(out, JSON.stringify({ engine: 'Dawn (node webgpu)', rows }, null, 2));
