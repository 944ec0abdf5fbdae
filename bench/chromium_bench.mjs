// Kiln's browser benchmark in headless Chromium: serves the repository on 127.0.0.1, opens
// bench/chromium/index.html (Kiln from pkg/ — `make npm` — and TF.js from node_modules), and
// prints and saves what bench/engine_bench.mjs measured there.
//
//   node bench/chromium_bench.mjs [--quick] [--seconds 3] [--json FILE]
//
// CHROMIUM picks the browser (default /usr/bin/chromium). Without a GPU its WebGPU runs on
// SwiftShader (--enable-unsafe-webgpu), so this is the CPU-only browser table.
import fs from 'node:fs';
import { chromium } from 'playwright-core';
import { serve } from '../tests/e2e/server.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const quick = process.argv.includes('--quick');
const seconds = Number(arg('--seconds', 3));

const server = await serve('.', { csp: false });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--enable-unsafe-webgpu', '--disable-dev-shm-usage'],
});
let report;
try {
  const page = await browser.newPage();
  page.on('console', (m) => console.log(m.text()));
  page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
  await page.goto(`${server.url}bench/chromium/index.html?quick=${quick ? 1 : 0}&seconds=${seconds}`);
  const handle = await page.waitForFunction(() => window.benchReport, null, { timeout: 3_600_000, polling: 500 });
  report = await handle.jsonValue();
} finally {
  await browser.close();
  await server.close();
}
if (report.error) {
  console.error(`chromium bench: ${report.error}`);
  process.exit(1);
}
const out = arg('--json');
if (out) fs.writeFileSync(out, JSON.stringify(report, null, 2));
process.exit(0);
