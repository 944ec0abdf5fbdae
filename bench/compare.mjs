// Prints Kiln against its references from the JSON files the benchmarks wrote:
//   node bench/compare.mjs DIR   (DIR holds kiln.json, and any of dawn.json, torch.json, tfjs.json)
import fs from 'node:fs';
import path from 'node:path';

const dir = process.argv[2] ?? 'target/bench';
const read = (name) => {
  const file = path.join(dir, name);
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : null;
};
const kiln = read('kiln.json');
const dawn = read('dawn.json');
const torch = read('torch.json');
const tfjs = read('tfjs.json');
if (!kiln) {
  console.error(`compare: ${dir}/kiln.json is missing (run kiln bench --json first)`);
  process.exit(1);
}
const fmt = (x, d = 1) => (x == null || !Number.isFinite(x) ? '—' : x.toFixed(d));
const ratio = (a, b) => (a == null || b == null ? '—' : `${(a / b).toFixed(2)}×`);

console.log(`Kiln native: ${kiln.adapter} (${kiln.backend}); Dawn: ${dawn?.adapter?.name ?? '—'}; PyTorch: ${torch ? `${torch.torch} on ${torch.device}` : '—'}\n`);
console.log('matmul GFLOP/s        kiln-native   kiln-dawn     torch   native/torch  dawn/torch');
for (const m of kiln.matmul) {
  const d = dawn?.matmul.find((x) => x.shape === m.shape)?.gflops;
  const t = torch?.matmul.find((x) => x.shape === m.shape)?.gflops;
  console.log(`${m.shape.padEnd(20)} ${fmt(m.gflops).padStart(12)} ${fmt(d).padStart(11)} ${fmt(t).padStart(9)} ${ratio(m.gflops, t).padStart(14)} ${ratio(d, t).padStart(11)}`);
}
console.log('\ntraining (steps/s; tokens/s for Llama)   kiln-native   kiln-dawn  torch-eager  torch-best (mode)            tfjs   native/best  dawn/best  dawn/tfjs');
for (const k of kiln.training) {
  const llama = k.preset.startsWith('llama');
  const val = (r) => (r == null ? null : llama ? r.tokens_per_sec : r.steps_per_sec);
  const d = val(dawn?.training.find((x) => x.preset === k.preset));
  const te = val(torch?.training.find((x) => x.preset === k.preset && x.mode === 'eager'));
  // Ratios are against PyTorch's strongest mode in the same run (torch_reference.py times them all).
  const modes = torch?.training.filter((x) => x.preset === k.preset) ?? [];
  const best = modes.reduce((a, b) => (a && val(a) >= val(b) ? a : b), null);
  const tb = val(best);
  const tf = k.preset === 'mlp-spiral' ? tfjs?.steps_per_sec : null;
  const n = val(k);
  console.log(
    `${k.preset.padEnd(40)} ${fmt(n, 0).padStart(11)} ${fmt(d, 0).padStart(11)} ${fmt(te, 0).padStart(12)} ${`${fmt(tb, 0)} (${best?.mode ?? '—'})`.padStart(28)} ${fmt(tf, 0).padStart(6)} ${ratio(n, tb).padStart(12)} ${ratio(d, tb).padStart(10)} ${ratio(d, tf).padStart(10)}`,
  );
}
