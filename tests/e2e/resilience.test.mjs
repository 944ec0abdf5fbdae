// resilience.test.mjs — the page under trouble, in headless Chromium with SwiftShader's WebGPU
// against the Trunk release build: the GPU device destroyed mid-training, the tab hidden and
// frozen, the page's second wasm failing to load, and the page without a usable WebGPU: no
// navigator.gpu, no adapter, or an insecure (plain-http, non-localhost) origin; and runs kept
// across a reload (nothing trained is lost).
//   node tests/e2e/resilience.test.mjs [dist-dir]

import path from 'node:path';
import { OUT, ARGS, WEBGPU, launch, assert, test, until, summary, newPage, run, withPlayground } from './helpers.mjs';

const DIST = process.argv[2] ?? 'dist';

/** Makes the page see itself hidden or shown, as a tab switch would (headless Chromium keeps
 * every page visible, so the state is overridden and the real event is dispatched). */
const setHidden = (page, hidden) =>
  page.evaluate((h) => {
    if (h) {
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
    } else {
      delete document.hidden;
      delete document.visibilityState;
    }
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);

/** Steps advance past `n` + `more`. */
const advances = (page, n, more, what) => until(page, ([a, b]) => window.kilnPage.summary().step > a + b, [n, more], what, 90_000);

async function main() {
  await withPlayground(DIST, async ({ server, browser, page, errors }) => {
    await until(page, () => window.kilnPage?.summary().info && window.kilnPage.summary().heatmaps > 0, null, 'the first run', 60_000);
    // A small batch keeps SwiftShader quick.
    await page.fill('#batch', '32');
    await until(page, () => window.kilnPage.summary().info?.config?.batch === 32, null, 'the batch-32 run', 60_000);

    await test('a destroyed GPU device is rebuilt from the snapshot, the page says so, training goes on', page, async () => {
      await page.click('#play');
      await advances(page, 0, 150, '150 steps');
      await page.evaluate(() => window.kilnPage.loseDevice());
      const rec = await until(page, () => window.kilnPage.summary().recoveries[0], null, 'the recovery', 60_000);
      assert(/destroyed/.test(rec.reason), `reason: ${rec.reason}`);
      assert(rec.resumedAt >= 100 && rec.resumedAt <= rec.lostAt, `a snapshot at least every 100 steps: ${JSON.stringify(rec)}`);
      const notice = (await summary(page)).gpuNotice;
      assert(/GPU device was lost/.test(notice) && notice.includes(`step ${rec.resumedAt}`), `notice: ${notice}`);
      await advances(page, rec.lostAt, 50, 'training after the recovery');
      const s = await summary(page);
      assert(s.error === null, `no error shown: ${s.error}`);
      // Redone steps are identical, so the chart holds every step exactly once.
      assert(s.loss.steps === s.loss.lastStep - s.loss.since + 1, `loss chart steps ${JSON.stringify(s.loss)}`);
    });

    await test('a hidden tab keeps training; frozen and thawed it resumes; shown, it catches up', page, async () => {
      await setHidden(page, true);
      // A snapshot already under way may still land, before the metrics of the chunk after the
      // one the worker is in: three chunks later it has, however slow the machine.
      for (let i = 0; i < 3; i++) await advances(page, (await summary(page)).step, 0, 'a chunk while hidden');
      const h0 = await summary(page);
      assert(h0.hidden && h0.playing, 'hidden and playing');
      await advances(page, h0.step, 100, 'training while hidden');
      const h1 = await summary(page);
      assert(h1.lastWeights === h0.lastWeights, `no weight snapshots while hidden (${h0.lastWeights} → ${h1.lastWeights})`);
      // Browsers freeze long-hidden tabs (their workers too); thawed, the run must carry on.
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('Page.setWebLifecycleState', { state: 'frozen' });
      await new Promise((r) => setTimeout(r, 3000));
      await cdp.send('Page.setWebLifecycleState', { state: 'active' });
      const thawed = await summary(page);
      await advances(page, thawed.step, 100, 'training after the thaw');
      await setHidden(page, false);
      await until(page, (w) => window.kilnPage.summary().lastWeights > w, h1.lastWeights, 'a fresh snapshot once shown', 30_000);
      await page.click('#pause');
      await until(page, () => !window.kilnPage.summary().playing, null, 'pause', 20_000);
      await page.waitForTimeout(500);
      const s = await summary(page);
      assert(s.loss.lastStep === s.step, `the chart caught up: last charted ${s.loss.lastStep}, step ${s.step}`);
      // Counted, not from the points: past 3,000 points (a fast machine) the chart thins them.
      assert(s.loss.steps === s.loss.lastStep - s.loss.since + 1, `every step once: ${JSON.stringify(s.loss)}`);
      assert(s.error === null, `no error shown: ${s.error}`);
    });

    await test('no uncaught page errors', null, async () => {
      const unexpected = errors.filter((e) => !/favicon/.test(e));
      assert(unexpected.length === 0, `page errors: ${unexpected.slice(0, 3).join(' | ')}`);
    });

    await test('the second wasm failing to load is named, the MLP run goes on, and a retry works', null, async () => {
      const pageErrors = [];
      const p = await newPage(browser, { errors: pageErrors });
      await p.context().route('**/full/**', (r) => r.abort());
      await p.goto(server.url);
      await until(p, () => window.kilnPage?.summary().info?.model === 'mlp', null, 'the first run', 60_000);
      await p.selectOption('#preset', 'llama-tiny');
      const message = await until(p, () => window.kilnPage.summary().error, null, 'the failed load', 60_000);
      assert(/full\/kiln_full\.js.*second wasm failed.*try again/.test(message), `the message: ${message}`);
      assert((await summary(p)).info.model === 'mlp', 'the MLP run stays');
      await until(p, () => /not applied|previous model is still loaded/.test(document.getElementById('status').textContent), null, 'the status to say the previous run stays', 5_000);
      await p.context().unroute('**/full/**');
      await p.selectOption('#preset', 'mlp-spiral');
      await until(p, () => window.kilnPage.summary().info?.config?.batch !== undefined && window.kilnPage.summary().error === null, null, 'back to the MLP', 60_000);
      await p.selectOption('#preset', 'llama-tiny');
      await until(p, () => window.kilnPage.summary().info?.model === 'llama', null, 'the Llama, loaded on the retry', 60_000);
      assert(pageErrors.length === 0, `page errors: ${pageErrors.slice(0, 3).join(' | ')}`);
      await p.context().close();
    });

    await test('without WebGPU the page explains what is needed', null, async () => {
      const p3 = await newPage(browser, { gpu: false });
      await p3.goto(server.url);
      await p3.waitForSelector('#nogpu:not([hidden])', { timeout: 20_000 });
      const text = await p3.textContent('#nogpu');
      for (const needle of ['WebGPU', 'secure', 'https', 'localhost', 'enable-unsafe-webgpu']) assert(text.includes(needle), `the explanation mentions ${needle}`);
      await p3.screenshot({ path: path.join(OUT, 'no-webgpu.png') });
      await p3.context().close();
    });

    await test('without a WebGPU adapter (Chromium without --enable-unsafe-webgpu) the page explains too', null, async () => {
      const plain = await launch(ARGS);
      try {
        const p4 = await plain.newPage({ viewport: { width: 1400, height: 900 } });
        await p4.goto(server.url);
        await p4.waitForSelector('#nogpu:not([hidden])', { timeout: 30_000 });
        const reason = await p4.textContent('#nogpu-reason');
        assert(/adapter|WebGPU/.test(reason), `the reason names the problem: ${reason}`);
        assert(await p4.isDisabled('#play'), 'Play stays disabled');
        await p4.screenshot({ path: path.join(OUT, 'no-adapter.png') });
      } finally {
        await plain.close();
      }
    });

    await test('from a plain-http origin other than localhost the page explains that WebGPU needs a secure page', null, async () => {
      // kiln.test resolves to the test server, but it is not localhost: an insecure context.
      const insecure = await launch([...WEBGPU, '--host-resolver-rules=MAP kiln.test 127.0.0.1']);
      try {
        const p = await insecure.newPage();
        await p.goto(server.url.replace('127.0.0.1', 'kiln.test'));
        assert((await p.evaluate(() => window.isSecureContext)) === false, 'the origin is insecure');
        await p.waitForSelector('#nogpu:not([hidden])', { timeout: 30_000 });
        const reason = await p.textContent('#nogpu-reason');
        assert(/not a secure context/.test(reason) && reason.includes('kiln.test'), `the reason: ${reason}`);
      } finally {
        await insecure.close();
      }
    });

    await test('runs are kept across a reload, reopen where they stopped, and compare on one chart', null, async () => {
      const p = await newPage(browser, { errors });
      await p.goto(server.url);
      await until(p, () => window.kilnPage?.summary().info?.task === 'spiral', null, 'the first run', 60_000);
      // Space plays and pauses while no field has the keyboard.
      await p.keyboard.press('Space');
      await until(p, () => window.kilnPage.summary().step >= 40, null, '40 steps after Space', 60_000);
      await p.keyboard.press('Space');
      await until(p, () => !window.kilnPage.summary().playing, null, 'paused by Space', 20_000);
      const kept = await until(p, () => window.kilnPage.summary().kept.runs.find((r) => r.checkpoint && r.steps >= 40 && r.checkpointStep === r.steps), null, 'the run and its checkpoint kept', 30_000);
      await p.reload();
      await until(p, (id) => window.kilnPage?.summary().info && window.kilnPage.summary().kept.runs.some((r) => r.id === id), kept.id, 'the kept run after a reload', 60_000);
      await p.click(`#runs-table tr[data-run="${kept.id}"] >> text=Open`);
      await until(p, (n) => /Checkpoint loaded at step/.test(document.getElementById('status').textContent) && window.kilnPage.summary().step === n, kept.checkpointStep, 'the run reopened where it stopped', 30_000);
      const reopened = (await p.evaluate(() => window.kilnPage.summary())).loss;
      assert(reopened.points >= 10 && reopened.lastStep <= kept.checkpointStep && reopened.lastStep >= kept.checkpointStep - 10, `the kept loss curve is drawn again: ${JSON.stringify(reopened)}`);
      // A second run with another learning rate; both on one chart, the legend names the difference.
      await p.fill('#opt-lr', '0.05');
      await until(p, () => window.kilnPage.summary().info?.config?.optimizer?.lr === 0.05, null, 'the lr 0.05 run', 60_000);
      await p.click('#play');
      await until(p, () => window.kilnPage.summary().step >= 20, null, '20 steps at lr 0.05', 60_000);
      await p.click('#pause');
      await until(p, () => window.kilnPage.summary().kept.runs.length === 2, null, 'two kept runs', 30_000);
      await p.check('#runs-table tbody tr:nth-child(1) input[type=checkbox]');
      await p.check('#runs-table tbody tr:nth-child(2) input[type=checkbox]');
      const overlay = await until(p, () => window.kilnPage.summary().kept.overlay.length === 2 && window.kilnPage.summary().kept.overlay, null, 'two curves on the runs chart', 10_000);
      assert(overlay.every((label) => label.includes('optimizer.lr=')), `the legend names the differing field: ${overlay.join(' | ')}`);
      await p.screenshot({ path: path.join(OUT, 'runs.png'), fullPage: true });
      // Delete asks first: one click arms it, a second deletes.
      const del = p.locator('#runs-table tbody tr:nth-child(2) button', { hasText: /Delete|Sure/ });
      await del.click();
      assert(await del.textContent() === 'Sure?' && (await summary(p)).kept.runs.length === 2, 'the first click only asks');
      // The table is redrawn whenever a run changes (every chunk while training): the question stays.
      await p.uncheck('#runs-table tbody tr:nth-child(1) input[type=checkbox]');
      // The overlay changes only when the table is redrawn.
      await until(p, () => window.kilnPage.summary().kept.overlay.length === 1, null, 'the table redrawn with one curve', 10_000);
      assert(await del.textContent() === 'Sure?', 'the question survives a redraw of the table');
      await del.click();
      await until(p, () => window.kilnPage.summary().kept.runs.length === 1, null, 'one run after the second click', 10_000);
      await p.context().close();
    });
  });
}

await run('resilience', main);
