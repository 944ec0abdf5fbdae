// export.test.mjs — the page's bridge to PyTorch and Hugging Face, in headless Chromium with
// SwiftShader's WebGPU against the Trunk release build: a run exports as one zip (fflate), the
// zip opens back as the same run, and a Llama that Transformers made (the committed fixture
// tests/fixtures/hf-foreign, zipped here inside a folder as a person would) opens, trains and
// samples. Bad zips get their own messages. The Llama's short-conv toggle rides along: it
// rebuilds the run with the conv's taps, trains, and its export is refused with the reason;
// so does the mixed-precision toggle: a loss scale chart, and less GPU memory.
//   node tests/e2e/export.test.mjs [dist-dir]

import fs from 'node:fs/promises';
import path from 'node:path';
import { unzipSync, zipSync } from 'fflate';
import { OUT, assert, test, until, summary, run, withPlayground } from './helpers.mjs';

const DIST = process.argv[2] ?? 'dist';
const FIXTURE = 'tests/fixtures/hf-foreign';

/** Uploads `bytes` as a zip into the import control. */
const openZip = (page, name, bytes) => page.setInputFiles('#import-zip', { name, mimeType: 'application/zip', buffer: Buffer.from(bytes) });

async function fixtureZip(leaveOut = []) {
  const files = {};
  for (const name of await fs.readdir(FIXTURE)) {
    if (!leaveOut.includes(name)) files[`downloads/tiny-llama/${name}`] = await fs.readFile(path.join(FIXTURE, name));
  }
  return zipSync(files);
}

async function main() {
  await withPlayground(DIST, async ({ page, errors }) => {
    await until(page, () => window.kilnPage?.summary().info, null, 'the first run', 60_000);

    // What the page fetches from here on: the export folder's work is in the second wasm
    // (js/full.js), which the first load leaves out.
    const fetched = [];
    page.on('request', (r) => fetched.push(new URL(r.url()).pathname));
    const second = () => fetched.filter((p) => p.endsWith('/full/kiln_full_bg.wasm')).length;

    await test('an MLP exports as a zip for PyTorch and opens back at its step', page, async () => {
      assert(second() === 0, 'the second wasm is not fetched before an export');
      for (let i = 0; i < 3; i++) {
        await page.click('#step');
        await until(page, (n) => window.kilnPage.summary().step >= n, i + 1, `step ${i + 1}`, 30_000);
      }
      const [download] = await Promise.all([page.waitForEvent('download', { timeout: 60_000 }), page.click('#export-zip')]);
      // Named after the run as the Runs card names it ("mlp-spiral #1"), and so is its folder.
      const run = /^(mlp-spiral-\d+)-step3-export\.zip$/.exec(download.suggestedFilename())?.[1];
      assert(run, download.suggestedFilename());
      const file = path.join(OUT, download.suggestedFilename());
      await download.saveAs(file);
      const zip = unzipSync(await fs.readFile(file));
      const names = Object.keys(zip).sort();
      const want = ['data.csv', 'kiln_config.json', 'kiln_reference.json', 'model.py', 'model.safetensors', 'train.py'].map((n) => `${run}-export/${n}`);
      assert(names.join() === want.join(), `zip entries: ${names}`);
      const kiln = JSON.parse(new TextDecoder().decode(zip[`${run}-export/kiln_config.json`]));
      assert(kiln.kiln_step === 3 && kiln.kiln_config.model.mlp.hidden.join() === '16,16', JSON.stringify(kiln).slice(0, 200));
      assert(second() === 1, `the second wasm fetched once for the export, got ${second()}`);
      const runs = (await summary(page)).runs;
      await page.setInputFiles('#import-zip', file);
      await until(page, (n) => window.kilnPage.summary().runs > n, runs, 'the run from the zip', 60_000);
      assert(/imported folder/.test(await page.textContent('#preset-desc')), 'the form says where the run came from');
      await page.click('#step');
      await until(page, () => window.kilnPage.summary().step === 4, null, 'the imported run continues at step 4', 30_000);
    });

    await test('a Llama on the built-in text exports as a Hugging Face folder', page, async () => {
      const runs = (await summary(page)).runs;
      await page.selectOption('#preset', 'llama-tiny');
      await until(page, (n) => window.kilnPage.summary().runs > n && window.kilnPage.summary().info?.config?.model?.llama, runs, 'the llama-tiny run', 60_000);
      // Shrunk so SwiftShader keeps up (its export runs the model for kiln_reference.json).
      for (const [field, value] of [['#ll-d_model', '32'], ['#ll-heads', '2'], ['#ll-layers', '1'], ['#ll-context', '32'], ['#ll-hidden', '64'], ['#batch', '4']]) {
        await page.fill(field, value);
      }
      await until(page, () => window.kilnPage.summary().info?.config?.model?.llama?.d_model === 32 && window.kilnPage.summary().info.config.batch === 4, null, 'the small Llama', 60_000);
      await page.click('#step');
      await until(page, () => window.kilnPage.summary().step >= 1, null, 'a llama-tiny step', 60_000);
      // The second wasm is built without Genesis too: it is handed the text the page fetched.
      const [download] = await Promise.all([page.waitForEvent('download', { timeout: 120_000 }), page.click('#export-zip')]);
      // An edited preset is a run of its own, "custom #N": custom-N-step1-export.zip.
      const run = /^(custom-\d+)-step1-export\.zip$/.exec(download.suggestedFilename())?.[1];
      assert(run, download.suggestedFilename());
      const zip = unzipSync(await fs.readFile(await download.path()));
      for (const name of ['config.json', 'model.safetensors', 'tokenizer.json', 'kiln_reference.json']) {
        assert(zip[`${run}-export/${name}`]?.length > 0, `${name} in ${Object.keys(zip)}`);
      }
      const config = JSON.parse(new TextDecoder().decode(zip[`${run}-export/config.json`]));
      assert(config.kiln_step === 1 && config.kiln_config.model.llama.d_model === 32, JSON.stringify(config).slice(0, 200));
      assert(second() === 1, 'the second wasm is fetched once');
    });

    await test("a Llama made by Transformers opens from a zip, trains and samples", page, async () => {
      const runs = (await summary(page)).runs;
      await openZip(page, 'tiny-llama.zip', await fixtureZip());
      await until(page, (n) => window.kilnPage.summary().runs > n, runs, 'the Llama from the fixture', 60_000);
      const s = await summary(page);
      const llama = s.info.config.model.llama;
      assert(llama && llama.vocab === 48 && llama.d_model === 32 && llama.rope_theta === 500, JSON.stringify(llama));
      assert((await page.inputValue('#ll-d_model')) === '32', 'the form shows the imported model');
      await page.click('#step');
      await until(page, () => window.kilnPage.summary().step >= 1, null, 'a training step', 60_000);
      await page.click('#sample-now');
      await until(page, (n) => window.kilnPage.summary().samples > n, s.samples, 'a sample', 60_000);
      await page.screenshot({ path: path.join(OUT, 'export-imported-llama.png'), fullPage: true });
    });

    await test('the short conv toggle adds the taps, trains, and its export says why it cannot be', page, async () => {
      await page.check('#ll-short-conv');
      await until(page, () => window.kilnPage.summary().info?.config?.model?.llama?.short_conv === true, null, 'the run with the short conv', 60_000);
      const conv = await summary(page);
      await page.click('#step');
      await until(page, () => window.kilnPage.summary().step >= 1, null, 'a step with the short conv', 60_000);
      await page.click('#export-zip');
      await until(page, () => /short_conv.*no short convolution/.test(window.kilnPage.summary().error ?? ''), null, 'the export refusal', 90_000);
      await page.uncheck('#ll-short-conv');
      await until(page, (n) => window.kilnPage.summary().runs > n && window.kilnPage.summary().info.config.model.llama.short_conv === undefined, conv.runs, 'the run without it', 60_000);
      const plain = await summary(page);
      // Two layers of d_model 32: taps (32, 3) and a bias (32) each; one forward and two backward dispatches per layer.
      assert(conv.info.parameters === plain.info.parameters + 2 * 4 * 32, `${plain.info.parameters} → ${conv.info.parameters} parameters`);
      assert(conv.info.dispatchesPerStep === plain.info.dispatchesPerStep + 2 * 3, `dispatches ${plain.info.dispatchesPerStep} → ${conv.info.dispatchesPerStep}`);
    });

    await test('mixed precision trains with a loss scale chart in less GPU memory', page, async () => {
      const plain = await summary(page);
      assert(plain.lossScale.shown === false, 'no loss scale card in fp32');
      await page.check('#ll-mixed');
      await until(page, (n) => window.kilnPage.summary().runs > n && window.kilnPage.summary().info.config.model.llama.precision === 'mixed', plain.runs, 'the mixed-precision run', 60_000);
      for (let i = 0; i < 3; i++) {
        await page.click('#step');
        await until(page, (n) => window.kilnPage.summary().step >= n, i + 1, `mixed step ${i + 1}`, 120_000);
      }
      await until(page, () => window.kilnPage.summary().lossScale.points >= 1, null, 'the loss scale on its chart', 30_000);
      const mixed = await summary(page);
      assert(mixed.lossScale.shown && mixed.lossScale.scale === 65536 && mixed.lossScale.backoffs === 0, JSON.stringify(mixed.lossScale));
      assert(mixed.info.gpuBytes < plain.info.gpuBytes, `GPU memory ${plain.info.gpuBytes} → ${mixed.info.gpuBytes}`);
      assert(Number.isFinite(mixed.loss.last) && mixed.loss.last > 0, `loss ${mixed.loss.last}`);
      assert(/MB/.test(await page.textContent('#stat-mem')), 'the stats show the GPU memory');
      await page.screenshot({ path: path.join(OUT, 'mixed-precision.png'), fullPage: true });
      await page.uncheck('#ll-mixed');
      await until(page, (n) => window.kilnPage.summary().runs > n && !window.kilnPage.summary().lossScale.shown, mixed.runs, 'back to fp32', 60_000);
    });

    await test('zips Kiln cannot open say why', page, async () => {
      await openZip(page, 'notes.zip', new TextEncoder().encode('these are not zipped files'));
      await until(page, () => /not a zip archive/.test(window.kilnPage.summary().error ?? ''), null, 'the not-a-zip message', 20_000);
      await openZip(page, 'no-text.zip', await fixtureZip(['train.txt']));
      await until(page, () => /train\.txt.*needs the text to train on/.test(window.kilnPage.summary().error ?? ''), null, 'the missing-text message', 20_000);
      await openZip(page, 'empty.zip', zipSync({ 'readme.md': new TextEncoder().encode('hi') }));
      await until(page, () => /config\.json.*is missing/.test(window.kilnPage.summary().error ?? ''), null, 'the no-config message', 20_000);
      assert((await summary(page)).info.config.model.llama, 'the loaded run stays');
    });

    await test('no uncaught page errors', null, async () => {
      const unexpected = errors.filter((e) => !/favicon/.test(e));
      assert(unexpected.length === 0, `page errors: ${unexpected.slice(0, 3).join(' | ')}`);
    });
  });
}

await run('export', main);
