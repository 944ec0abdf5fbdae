// page_first_step.mjs — how soon the page trains, in headless Chromium against the release page
// in dist/ (`make build-page`). Each run opens a fresh browser context and times, from
// navigation: the worker ready (wasm compiled, WebGPU device), the default run built
// (mlp-spiral), and, with Play pressed on that frame, the first trained step shown. It also
// sums what the page downloaded, gzipped as a server would send it. A benchmark: it prints a
// table and asserts nothing.
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
if (!(runs >= 1)) throw new Error('--runs takes a count of at least 1');

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
    // Checked every frame in the page: the worker ready, then the run built, when Play is
    // pressed from inside the page, as a person pressing it at once would (a click sent by the
    // harness lands a second or more later on this machine).
    const { ready, built } = await page.evaluate(() => new Promise((resolve) => {
      let ready = null;
      const tick = () => {
        const s = window.kilnPage?.summary();
        if (s?.ready && ready === null) ready = performance.now();
        if (!s?.info) return requestAnimationFrame(tick);
        const built = performance.now();
        document.getElementById('play').click();
        resolve({ ready: ready ?? built, built });
      };
      tick();
    }));
    const first = await when(page, () => window.kilnPage.summary().step >= 1 && performance.now());
    rows.push({ ready, built, first });
    files = seen;
    await page.context().close();
  }
} finally {
  await browser.close();
  await server.close();
}

let total = 0;
const sizes = [...files.keys()].map((p) => {
  const file = path.join(dist, p.endsWith('/') ? `${p}index.html` : p);
  const gz = fs.existsSync(file) ? zlib.gzipSync(fs.readFileSync(file), { level: 9 }).length : 0;
  total += gz;
  return [p, gz];
});
console.log(`page downloads (zlib level 9): ${(total / 1000).toFixed(1)} KB in ${sizes.length} files; largest: ${sizes.sort((a, b) => b[1] - a[1]).slice(0, 3).map(([p, b]) => `${p} ${(b / 1000).toFixed(1)} KB`).join(', ')}`);
console.log('| run | worker ready | run built, Play pressed | first step shown | Play → first step |');
console.log('|---|---|---|---|---|');
const ms = (x) => `${x.toFixed(0)} ms`;
rows.forEach((r, i) => console.log(`| ${i + 1} | ${ms(r.ready)} | ${ms(r.built)} | ${ms(r.first)} | ${ms(r.first - r.built)} |`));
