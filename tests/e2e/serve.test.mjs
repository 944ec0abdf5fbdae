// serve.test.mjs — the page as `make serve` serves it: `trunk serve` (its dev build, as `make
// serve` runs it) with Trunk.toml's Content-Security-Policy, whose per-response
// nonce lets Trunk's inline autoreload script run. In headless Chromium: the policy arrives
// with a nonce, the autoreload script runs (its WebSocket connects), the page trains, and no
// CSP violation or console error occurs.
//   node tests/e2e/serve.test.mjs

import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { launch, assert, test, until, newPage, run, log } from './helpers.mjs';

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function waitForHttp(url, ms, trunk) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (trunk.exitCode !== null) throw new Error(`trunk serve exited with ${trunk.exitCode}`);
    try {
      const r = await fetch(url);
      if (r.ok) return r;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`trunk serve did not answer ${url} within ${ms / 1000} s`);
}

async function main() {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const env = { ...process.env, PATH: `${path.resolve('node_modules/.bin')}:${process.env.PATH}` };
  const args = ['serve', '--port', String(port), '--dist', 'target/trunk-serve-dist'];
  log(`trunk ${args.join(' ')}`);
  const trunk = spawn('trunk', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  trunk.stdout.on('data', (d) => (output += d));
  trunk.stderr.on('data', (d) => (output += d));
  const browser = await launch();
  try {
    const first = await waitForHttp(url, 600_000, trunk).catch((e) => {
      throw new Error(`${e.message}\n${output.slice(-2000)}`);
    });

    await test('trunk serve sends a strict CSP whose nonce admits only its autoreload script', null, async () => {
      const csp = first.headers.get('content-security-policy') ?? '';
      assert(/script-src 'self' 'wasm-unsafe-eval' 'nonce-[^']+'/.test(csp), `script-src with a nonce: ${csp}`);
      assert(!/unsafe-inline/.test(csp) && /style-src 'self'/.test(csp), `no unsafe-inline: ${csp}`);
      const html = await first.text();
      const nonce = csp.match(/'nonce-([^']+)'/)[1];
      const inline = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1]).filter((a) => !/\bsrc=/.test(a));
      assert(inline.length === 1 && inline[0].includes(`nonce="${nonce}"`), `one inline script, with the nonce: ${JSON.stringify(inline)}`);
    });

    await test('under trunk serve the page trains with no CSP violation, and autoreload connects', null, async () => {
      const errors = [];
      const page = await newPage(browser, { errors });
      await page.addInitScript(() => {
        window.cspViolations = [];
        document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
      });
      const sockets = [];
      page.on('websocket', (ws) => sockets.push(ws.url()));
      await page.goto(url);
      await until(page, () => window.kilnPage?.summary().info && window.kilnPage.summary().heatmaps > 0, null, 'the first run', 90_000);
      await page.fill('#batch', '32');
      await until(page, () => window.kilnPage.summary().info?.config?.batch === 32, null, 'the batch-32 run', 60_000);
      await page.click('#play');
      await until(page, () => window.kilnPage.summary().step > 20, null, '20 steps', 90_000);
      await page.click('#pause');
      const violations = await page.evaluate(() => window.cspViolations);
      assert(violations.length === 0, `CSP violations: ${violations.join(' | ')}`);
      assert(sockets.some((u) => u.includes('/.well-known/trunk/ws')), `autoreload WebSocket: ${JSON.stringify(sockets)}`);
      assert(errors.length === 0, `console errors: ${errors.slice(0, 3).join(' | ')}`);
      await page.context().close();
    });
  } finally {
    await browser.close();
    trunk.kill('SIGINT');
  }
}

await run('trunk serve', main);
