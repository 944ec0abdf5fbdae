// page_views.mjs — what the look-inside views cost while the page trains, in headless Chromium
// against the release page in dist/ (build it with `make build-page`):
//   node bench/page_views.mjs [dist] [--seconds N]
// For mlp-spiral and a CPU-sized Llama, with the views live and with them off ("live" unticked):
// training steps/s, the page thread's frames/s and its longest frame. A benchmark, not a test:
// it prints a table and asserts nothing.

import { launch, newPage, until, summary } from '../tests/e2e/helpers.mjs';
import { serve } from '../tests/e2e/server.mjs';

const args = process.argv.slice(2);
const dist = args.find((a) => !a.startsWith('--')) ?? 'dist';
const seconds = Number(args[args.indexOf('--seconds') + 1]) || 10;

/** Frames the page thread draws in `ms`, and its longest gap between two frames. */
const frames = (page, ms) =>
  page.evaluate((ms) => new Promise((resolve) => {
    const t0 = performance.now();
    let n = 0;
    let last = t0;
    let worst = 0;
    const tick = (t) => {
      n++;
      worst = Math.max(worst, t - last);
      last = t;
      if (t - t0 < ms) requestAnimationFrame(tick);
      else resolve({ fps: n / ((t - t0) / 1000), worst });
    };
    requestAnimationFrame(tick);
  }), ms);

async function measure(page, live) {
  if ((await page.isChecked('#inside-live')) !== live) await page.click('#inside-live');
  await page.click('#play');
  await page.waitForTimeout(3000); // the chunk size settles
  const s0 = await summary(page);
  const t0 = Date.now();
  const f = await frames(page, seconds * 1000);
  const s1 = await summary(page);
  const sps = (s1.step - s0.step) / ((Date.now() - t0) / 1000);
  await page.click('#pause');
  await until(page, () => !window.kilnPage.summary().playing, null, 'pause', 30_000);
  return { sps, ...f, samples: s1.inside.distributions.samples - s0.inside.distributions.samples };
}

const server = await serve(dist);
const browser = await launch();
const rows = [];
try {
  const page = await newPage(browser, { errors: [] });
  await page.goto(server.url);
  await until(page, () => window.kilnPage?.summary().info?.task === 'spiral', null, 'mlp-spiral', 60_000);
  for (const live of [false, true]) rows.push({ model: 'mlp-spiral', live, ...(await measure(page, live)) });
  await page.selectOption('#preset', 'llama-tiny');
  await until(page, () => window.kilnPage.summary().info?.model === 'llama', null, 'llama-tiny', 60_000);
  await page.click('#cpu-shrink');
  await until(page, () => window.kilnPage.summary().info?.config?.batch === 4, null, 'the CPU-sized Llama', 60_000);
  for (const live of [false, true]) rows.push({ model: 'llama (CPU-sized)', live, ...(await measure(page, live)) });
} finally {
  await browser.close();
  server.close();
}
console.log('| model | views | steps/s | page frames/s | longest frame (ms) | view samples |');
console.log('|---|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.model} | ${r.live ? 'live' : 'off'} | ${r.sps.toFixed(1)} | ${r.fps.toFixed(1)} | ${r.worst.toFixed(0)} | ${r.samples} |`);
for (let i = 0; i < rows.length; i += 2) console.log(`${rows[i].model}: training keeps ${((100 * rows[i + 1].sps) / rows[i].sps).toFixed(0)}% of its steps/s with the views live`);
