// page_first_step.mjs — how soon the page trains, in headless Chromium against the release page
// in dist/ (`make build-page`). Each run opens a fresh browser context (nothing cached) and
// times, from navigation: the worker ready (wasm compiled, WebGPU device), the default run built
// (mlp-spiral), and, with Play pressed at that moment, the first trained step shown. It also sums what the page downloaded, gzipped as a server would send it. A benchmark:
// it prints a table and asserts nothing.
//   node bench/page_first_step.mjs [dist] [--runs 3]
// Here Chromium's WebGPU is SwiftShader (the CPU); bench/first_step_dawn.mjs times the same
// stages on a real GPU through Dawn.

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { launch, newPage } from '../tests/e2e/helpers.mjs';
import { serve } from '../tests/e2e/server.mjs';

const argv = process.argv.slice(2);
const arg = (name, fallback) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);
const dist = argv.find((a, i) => !a.startsWith('--') && argv[i - 1] !== '--runs') ?? 'dist';
const runs = Number(arg('--runs', 3));

/** What `fn` returns in the page once it is truthy, checked every frame: each one below ends in
 * `&& performance.now()`, the time since navigation. */
const when = (page, fn) => page.waitForFunction(fn, null, { polling: 'raf', timeout: 600_000 }).then((h) => h.jsonValue());

const server = await serve(dist);
const browser = await launch();
const rows = [];
let files = new Map();
try {
  for (let r = 0; r < runs; r++) {
    const page = await newPage(browser, { errors: [] });
    const seen = new Map();
    page.on('requestfinished', (req) => {
      const url = new URL(req.url());
      if (url.origin === new URL(server.url).origin) seen.set(url.pathname, true);
    });
    await page.goto(server.url);
    const ready = await when(page, () => window.kilnPage?.summary().ready && performance.now());
    const built = await when(page, () => window.kilnPage.summary().info && performance.now());
    await page.click('#play');
    const first = await when(page, () => window.kilnPage.summary().step >= 1 && performance.now());
    rows.push({ ready, built, first, afterPlay: first - built });
    files = seen;
    await page.context().close();
  }
} finally {
  await browser.close();
  server.close();
}

let total = 0;
const sizes = [...files.keys()].map((p) => {
  const file = path.join(dist, p.endsWith('/') ? `${p}index.html` : p);
  const gz = fs.existsSync(file) ? zlib.gzipSync(fs.readFileSync(file), { level: 9 }).length : 0;
  total += gz;
  return [p, gz];
});
console.log(`page downloads (gzip -9): ${(total / 1000).toFixed(1)} KB in ${sizes.length} files; largest: ${sizes.sort((a, b) => b[1] - a[1]).slice(0, 3).map(([p, b]) => `${p} ${(b / 1000).toFixed(1)} KB`).join(', ')}`);
console.log(`| run | worker ready | run built | first step shown | Play → first step |`);
console.log('|---|---|---|---|---|');
rows.forEach((r, i) => console.log(`| ${i + 1} | ${r.ready.toFixed(0)} ms | ${r.built.toFixed(0)} ms | ${r.first.toFixed(0)} ms | ${r.afterPlay.toFixed(0)} ms |`));
