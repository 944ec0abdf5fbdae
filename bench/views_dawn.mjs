// views_dawn.mjs — what the look-inside views cost training on Dawn (Node + `webgpu`, the npm
// build in pkg/), without a page: the worker's loop (chunks of ~150 ms) with and without the
// views' calls at the worker's cadence (inspect + neuronOutputs for an MLP, inspect +
// attentionMaps for a Llama; every max(400 or 1000 ms, 10 × their cost)).
//   node bench/views_dawn.mjs [--seconds 8] [--presets mlp-spiral,llama-tiny]
// A benchmark: it prints steps/s both ways and asserts nothing.
import { create, globals } from 'webgpu';
import * as kiln from '../pkg/kiln.js';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const seconds = Number(arg('--seconds', 8));
const presets = arg('--presets', 'mlp-spiral,llama-tiny').split(',');

Object.assign(globalThis, globals);
await kiln.init({ gpu: create([]) });
const adapter = await kiln.adapterInfo();
console.log(`adapter: ${adapter.name} (${adapter.backend})`);

/** Steps/s of the worker's loop for `seconds`, calling `views` at the worker's cadence. */
async function loop(run, views, floor) {
  let chunk = 1;
  let steps = 0;
  let due = 0;
  let calls = 0;
  let viewMs = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < seconds * 1000) {
    const c0 = performance.now();
    await run.train({ steps: chunk, readEvery: chunk });
    steps += chunk;
    const dt = performance.now() - c0;
    chunk = Math.max(1, Math.min(500, Math.round(chunk * Math.min(2, Math.max(0.5, 150 / Math.max(dt, 1))))));
    if (views && performance.now() >= due) {
      const v0 = performance.now();
      await views();
      calls++;
      viewMs += performance.now() - v0;
      due = performance.now() + Math.max(floor, 10 * (performance.now() - v0));
    }
  }
  return { sps: steps / ((performance.now() - t0) / 1000), calls, viewMs: calls ? viewMs / calls : 0 };
}

for (const name of presets) {
  const run = await kiln.Kiln.create(kiln.preset(name));
  const llama = run.info.model === 'llama';
  const views = llama
    ? async () => { await run.inspect({ bins: 32 }); await run.attentionMaps('And God said'); }
    : async () => { await run.inspect({ bins: 32 }); await run.neuronOutputs({ size: 24, extent: 1.25 }); };
  await run.train({ steps: 5, readEvery: 5 });
  const t = performance.now();
  await views();
  const once = performance.now() - t;
  const off = await loop(run, null, 0);
  const on = await loop(run, views, llama ? 1000 : 400);
  const off2 = await loop(run, null, 0);
  const base = (off.sps + off2.sps) / 2;
  console.log(`${name}: views off ${off.sps.toFixed(1)} / ${off2.sps.toFixed(1)} steps/s, live ${on.sps.toFixed(1)} steps/s (${on.calls} view updates of ${on.viewMs.toFixed(1)} ms each; the first, compiling, ${once.toFixed(1)} ms): training keeps ${((100 * on.sps) / base).toFixed(0)}%`);
  await run.dispose();
}
process.exit(0);
