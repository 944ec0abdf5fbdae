// helpers.mjs — what the end-to-end test files share: Chromium flags, a result log, polling
// the page's state (window.kilnPage.summary()), canvas probes and the closing report.

import fs from 'node:fs/promises';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from './server.mjs';

export const OUT = 'test-output';
export const ARGS = ['--headless=new', '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'];
export const WEBGPU = [...ARGS, '--enable-unsafe-webgpu'];

/** Headless Chromium (CHROMIUM, default /usr/bin/chromium) with `args` (default: WebGPU on). */
export const launch = (args = WEBGPU) => chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args });

export const results = [];
const t0 = Date.now();
export const log = (msg) => console.log(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(3)}s] ${msg}`);

export function assert(cond, message) {
  if (!cond) throw new Error(message);
}

export async function test(name, page, fn) {
  const start = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    log(`ok   ${name} (${((Date.now() - start) / 1000).toFixed(1)}s)`);
  } catch (e) {
    results.push({ name, ok: false });
    log(`FAIL ${name}: ${e.message}`);
    if (page) await page.screenshot({ path: path.join(OUT, `fail-${name.replace(/\W+/g, '-')}.png`), fullPage: true }).catch(() => {});
  }
}

/** Polls `fn` in the page until it returns something truthy; fails with `what` after `ms`. */
export async function until(page, fn, arg, what, ms = 60_000) {
  try {
    const handle = await page.waitForFunction(fn, arg, { timeout: ms, polling: 250 });
    const value = await handle.jsonValue();
    // The page draws its state on the next animation frame: let that frame run so the DOM
    // reads that follow see what the state says.
    await drawn(page);
    return value;
  } catch {
    const s = await page.evaluate(() => window.kilnPage?.summary()).catch(() => null);
    throw new Error(`timed out waiting for ${what}; page state: ${JSON.stringify(s)?.slice(0, 600)}`);
  }
}

/** Resolves after the page has drawn two more animation frames (render runs in each). */
export const drawn = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

export const summary = (page) => page.evaluate(() => window.kilnPage.summary());

/** Every heatmap canvas's pixels, concatenated. */
export const heatPixels = (page) =>
  page.evaluate(() => [...document.querySelectorAll('#heatmaps canvas')].map((c) => Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data)).flat());

/** Fraction of the data canvas that is not white (the boundary tints the whole background). */
export const tinted = (page) =>
  page.evaluate(() => {
    const c = document.getElementById('data-canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] < 250 || d[i + 1] < 250 || d[i + 2] < 250) n++;
    return n / (d.length / 4);
  });

/** Pixels of the loss chart drawn in the train series' colour (#3b6fd4). */
export const lossInk = (page) =>
  page.evaluate(() => {
    const c = document.querySelector('#loss-chart canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - 59) < 40 && Math.abs(d[i + 1] - 111) < 40 && Math.abs(d[i + 2] - 212) < 40) n++;
    return n;
  });

/** Pixels of a canvas that are drawn (not transparent, not white). */
export const canvasInk = (page, selector) =>
  page.evaluate((sel) => {
    const c = document.querySelector(sel);
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && (d[i] < 245 || d[i + 1] < 245 || d[i + 2] < 245)) n++;
    return n;
  }, selector);

/** A checksum of a canvas's pixels: it changes when anything drawn there does. */
export const canvasSum = (page, selector) =>
  page.evaluate((sel) => {
    const c = document.querySelector(sel);
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let h = 0;
    for (let i = 0; i < d.length; i++) h = (h * 31 + d[i] * (i % 251 + 1)) >>> 0;
    return h;
  }, selector);

export const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

export async function newPage(browser, { gpu = true, errors } = {}) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, acceptDownloads: true });
  if (!gpu) await context.addInitScript(() => Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true }));
  const page = await context.newPage();
  page.on('pageerror', (e) => errors?.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors?.push(m.text()); });
  return page;
}

/** Prints "e2e <suite>: N passed, M failed" and exits non-zero on any failure. */
export function report(suite) {
  const passed = results.filter((r) => r.ok).length;
  const failed = results.length - passed;
  console.log(`e2e ${suite}: ${passed} passed, ${failed} failed (${((Date.now() - t0) / 1000).toFixed(0)}s)`);
  process.exit(failed ? 1 : 0);
}

/** Runs `main`; a throw outside any test counts as a failed 'setup'. */
export async function run(suite, main) {
  try {
    await main();
  } catch (e) {
    results.push({ name: 'setup', ok: false });
    log(`FAIL setup: ${e.message}`);
  }
  report(suite);
}

/**
 * Serves the Trunk build in `dist` on 127.0.0.1 (under the strict CSP), starts Chromium with
 * WebGPU, opens the page, and runs `fn({ server, browser, page, errors })`; then closes both.
 */
export async function withPlayground(dist, fn) {
  await fs.mkdir(OUT, { recursive: true });
  await fs.access(path.join(dist, 'index.html')).catch(() => {
    throw new Error(`${dist}/index.html is missing: run \`trunk build --release\` first`);
  });
  const server = await serve(dist);
  const browser = await launch();
  try {
    const errors = [];
    const page = await newPage(browser, { errors });
    await page.goto(server.url);
    await fn({ server, browser, page, errors });
  } finally {
    await browser.close();
    await server.close();
  }
}
