// The npm package's tests (`make test-npm`, after `make npm` built pkg/):
//   1. `npm pack` pkg/ and check the tarball's files;
//   2. install the tarball, `webgpu` (Dawn) and Vite 7 into a fresh temporary Node project
//      (from the npm registry, preferring the local cache);
//   3. TypeScript: tests/npm/types-check.ts compiles against kiln.d.ts with --strict;
//   4. Node: tests/npm/node-check.mjs (with node-check-llama.mjs) trains mlp-spiral on Dawn/SwiftShader, checks that bad
//      configs reject naming the field, that overlapping calls work and that calls after
//      dispose() reject;
//   5. Vite: tests/npm/vite-app built with `vite build`, served by `vite preview` on 127.0.0.1,
//      opened in headless Chromium (playwright-core, /usr/bin/chromium) where it trains
//      mlp-spiral; the page must show falling loss.
// Prints `N passed, N failed` and exits non-zero on any failure. KEEP_NPM_TEST=1 keeps the
// temporary project.
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const pkgDir = resolve(root, process.env.KILN_PKG_DIR ?? 'pkg');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

let passed = 0;
let failed = 0;
function ok(name) {
  passed++;
  console.log(`ok - ${name}`);
}
function notOk(name, why) {
  failed++;
  console.log(`not ok - ${name}: ${why}`);
}
async function check(name, fn) {
  try {
    await fn();
    ok(name);
    return true;
  } catch (e) {
    notOk(name, e?.stack ?? e);
    return false;
  }
}
function assert(cond, message) {
  if (!cond) throw new Error(message);
}

/** Runs a command, echoing its output with a prefix; resolves with {code, out}. */
function run(cmd, args, { cwd, env, timeoutMs = 600_000, echo = true } = {}) {
  return new Promise((resolvePromise) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const onData = (d) => {
      out += d;
      if (echo) process.stdout.write(String(d).replace(/^(?=.)/gm, '    '));
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const timer = setTimeout(() => {
      out += `\n[timed out after ${timeoutMs / 1000} s]`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, out });
    });
  });
}

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

async function waitForHttp(url, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} did not answer within ${ms / 1000} s`);
}

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const tmp = mkdtempSync(join(tmpdir(), 'kiln-npm-'));
const app = join(tmp, 'app');
const gpuEnv = { VK_ICD_FILENAMES: SWIFTSHADER_ICD, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? tmp };

async function main() {
  assert(existsSync(join(pkgDir, 'package.json')), `${pkgDir}/package.json is missing: run \`make npm\` first`);

  // 1. npm pack
  let tarball;
  const packed = await check('npm pack: the tarball holds exactly the package files', async () => {
    const r = await run(npm, ['pack', pkgDir, '--pack-destination', tmp, '--json', '--loglevel=error'], { cwd: tmp, echo: false });
    assert(r.code === 0, `npm pack failed:\n${r.out}`);
    const info = JSON.parse(r.out.slice(r.out.indexOf('[')))[0];
    tarball = join(tmp, info.filename);
    const files = info.files.map((f) => f.path).sort();
    const want = ['README.md', 'args.js', 'full.js', 'kiln-types.d.ts', 'kiln.d.ts', 'kiln.js', 'kiln_wasm.js', 'kiln_wasm_bg.wasm', 'module.js', 'package.json'];
    assert(JSON.stringify(files) === JSON.stringify(want), `files ${files.join(', ')}; expected ${want.join(', ')}`);
    assert(info.name === 'kiln-gpu', `name ${info.name}`);
    const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
    assert(manifest.type === 'module' && manifest.exports['.'].types === './kiln.d.ts' && manifest.types === './kiln.d.ts', 'package.json fields');
    console.log(`    ${info.filename}: ${(info.size / 1024).toFixed(0)} KiB packed, ${(info.unpackedSize / 1024).toFixed(0)} KiB unpacked`);
  });
  if (!packed) return;

  // 2. a fresh project with the tarball, webgpu and vite
  const rootPkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const webgpuVersion = rootPkg.devDependencies?.webgpu ?? 'latest';
  cpSync(join(here, 'vite-app'), app, { recursive: true });
  for (const f of ['node-check.mjs', 'node-check-llama.mjs', 'checks.mjs']) cpSync(join(here, f), join(app, f));
  cpSync(join(here, 'types-check.ts'), join(app, 'types-check.ts'));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'kiln-npm-test', private: true, type: 'module' }, null, 2));
  const installed = await check('npm install the tarball, webgpu and vite@7 into a fresh project', async () => {
    const r = await run(npm, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball, `webgpu@${webgpuVersion}`, 'vite@7', 'typescript@5'], { cwd: app, timeoutMs: 300_000 });
    assert(r.code === 0, `npm install failed (exit ${r.code})`);
    assert(existsSync(join(app, 'node_modules/kiln-gpu/kiln_wasm_bg.wasm')), 'kiln-gpu not installed');
  });
  if (!installed) return;

  // 3. TypeScript: the declarations accept the documented calls and reject wrong ones
  await check('kiln.d.ts: tsc --strict accepts documented uses, rejects wrong ones', async () => {
    const compilerOptions = { noEmit: true, strict: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom'], types: [], skipLibCheck: false };
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['types-check.ts'] }, null, 2));
    const r = await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], { cwd: app, timeoutMs: 120_000 });
    assert(r.code === 0, `tsc failed (exit ${r.code})`);
  });

  // 4. Node + Dawn
  const node = await run(process.execPath, ['node-check.mjs'], { cwd: app, env: gpuEnv, timeoutMs: 300_000 });
  for (const line of node.out.split('\n')) {
    if (line.startsWith('ok - ')) passed++;
    else if (line.startsWith('not ok - ')) failed++;
  }
  if (node.code !== 0 && !/not ok - /.test(node.out)) notOk('node checks', `exit ${node.code} before any check failed`);

  // 5. Vite build + preview + Chromium
  const built = await check('vite build of an app that imports kiln-gpu', async () => {
    const r = await run(process.execPath, ['node_modules/vite/bin/vite.js', 'build', '--logLevel', 'warn'], { cwd: app, timeoutMs: 300_000 });
    assert(r.code === 0, `vite build failed (exit ${r.code})`);
    const assets = readdirSync(join(app, 'dist/assets'));
    assert(assets.some((f) => f.endsWith('.wasm')), `no .wasm among the built assets: ${assets.join(', ')}`);
  });
  if (!built) return;
  const port = await freePort();
  const preview = spawn(process.execPath, ['node_modules/vite/bin/vite.js', 'preview', '--host', '127.0.0.1', '--port', String(port), '--strictPort'], {
    cwd: app,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let previewOut = '';
  preview.stdout.on('data', (d) => (previewOut += d));
  preview.stderr.on('data', (d) => (previewOut += d));
  const { chromium } = await import('playwright-core');
  let browser;
  try {
    await waitForHttp(`http://127.0.0.1:${port}/`, 30_000).catch((e) => {
      throw new Error(`${e.message}\n${previewOut}`);
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless=new', '--no-sandbox', '--enable-unsafe-webgpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
      env: { ...process.env, ...gpuEnv },
    });
    const page = await browser.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
    });
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
    const t0 = Date.now();
    await page.goto(`http://127.0.0.1:${port}/`);
    await page.waitForFunction(() => /^(done|error)/.test(document.getElementById('status').textContent), null, { timeout: 300_000, polling: 500 });
    const status = await page.textContent('#status');
    const adapter = await page.textContent('#adapter');
    const losses = (await page.$$eval('#losses li', (lis) => lis.map((li) => Number(li.textContent))));
    console.log(`    page: ${status}; ${adapter}; ${((Date.now() - t0) / 1000).toFixed(1)} s; chunk losses ${losses.map((l) => l.toFixed(3)).join(' ')}`);
    await check('Vite app in Chromium: trains mlp-spiral and shows falling loss', async () => {
      assert(status === 'done', `status: ${status}`);
      assert(losses.length === 10 && losses.every(Number.isFinite), `${losses.length} losses shown`);
      assert(losses[losses.length - 1] < 0.85 * losses[0], `loss did not fall: ${losses[0]} -> ${losses[losses.length - 1]}`);
      const result = await page.evaluate(() => window.kilnResult);
      // An 8×8 grid of two class probabilities per cell.
      assert(result.gridValues === 128 && result.evaluation.accuracy > 0.5, JSON.stringify(result));
    });
    await check('Vite app: no page errors, console errors or failed requests', async () => {
      assert(problems.length === 0, problems.join('\n'));
    });
  } catch (e) {
    notOk('Vite app in Chromium', e?.stack ?? e);
  } finally {
    await browser?.close().catch(() => {});
    preview.kill('SIGTERM');
  }
}

try {
  await main();
} catch (e) {
  notOk('npm tests', e?.stack ?? e);
} finally {
  if (process.env.KEEP_NPM_TEST) console.log(`kept ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
}
console.log(`npm tests: ${passed} passed, ${failed} failed`);
process.exit(failed || !passed ? 1 : 0);
