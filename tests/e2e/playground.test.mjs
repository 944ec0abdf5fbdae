// playground.test.mjs — end-to-end tests of the playground page (www/) in headless Chromium
// with SwiftShader's WebGPU, against the Trunk release build in dist/ served on 127.0.0.1.
//   node tests/e2e/playground.test.mjs [dist-dir]
// Prints one line per test and a closing "e2e: N passed, M failed"; exits 1 on any failure.
// Screenshots go to test-output/.

import fs from 'node:fs/promises';
import path from 'node:path';
import { OUT, assert, test, until, drawn, summary, heatPixels, tinted, lossInk, canvasInk, canvasSum, mean, newPage, run, withPlayground } from './helpers.mjs';

const DIST = process.argv[2] ?? 'dist';

async function main() {
  await withPlayground(DIST, async ({ server, browser, page, errors }) => {
    // The page's second wasm (js/full.js): fetched once, the first time a run needs it.
    const fetched = [];
    page.on('request', (r) => fetched.push(new URL(r.url()).pathname));
    const secondFetches = () => fetched.filter((p) => p.endsWith('/full/kiln_full_bg.wasm')).length;

    await test('page loads and builds the mlp-spiral preset', page, async () => {
      await until(page, () => window.kilnPage?.summary().info && window.kilnPage.summary().heatmaps > 0, null, 'the first run and its heatmaps', 60_000);
      const s = await summary(page);
      assert(s.info.model === 'mlp' && s.info.task === 'spiral', `expected the spiral MLP, got ${s.info.model}/${s.info.task}`);
      assert(await page.inputValue('#preset') === 'mlp-spiral', 'preset menu shows mlp-spiral');
      assert(s.error === null, `no error expected, got ${s.error}`);
    });

    await test('MLP trains: loss curve fills and falls, heatmaps change, boundary appears', page, async () => {
      await until(page, () => window.kilnPage.summary().hasGrid, null, 'the first decision grid', 30_000);
      const before = await heatPixels(page);
      await page.click('#play');
      await until(page, () => window.kilnPage.summary().loss.points >= 30, null, '30 training steps', 120_000);
      await page.waitForTimeout(1500); // one more snapshot
      await page.screenshot({ path: path.join(OUT, 'mlp-spiral-training.png'), fullPage: true });
      await page.click('#pause');
      await until(page, () => !window.kilnPage.summary().playing, null, 'pause', 20_000);
      const s = await summary(page);
      const tr = s.trainLoss;
      const first = mean(tr.slice(0, 5)), last = mean(tr.slice(-5));
      assert(last < first - 0.01, `train loss should fall: first 5 steps ${first.toFixed(4)}, last 5 ${last.toFixed(4)}`);
      assert(s.loss.validation >= 2, `expected validation points, got ${s.loss.validation}`);
      assert((await lossInk(page)) > 100, 'the loss chart canvas shows the train curve');
      const after = await heatPixels(page);
      assert(after.length === before.length && after.length > 0, 'same heatmaps before and after');
      const changed = after.filter((v, i) => v !== before[i]).length;
      assert(changed > 20, `heatmap pixels should change while training (changed: ${changed})`);
      const frac = await tinted(page);
      assert(frac > 0.8, `the decision boundary should tint the data plot (tinted fraction ${frac.toFixed(2)})`);
      const sps = await page.textContent('#stat-sps');
      assert(Number(sps) > 0, `steps/s shows a rate (got "${sps}")`);
    });

    await test('look inside an MLP: the network graph, distributions and layer charts draw and change; a neuron enlarges', page, async () => {
      const s0 = await summary(page);
      const net = s0.inside.network;
      assert(net && net.layers.join() === '2,16,16,2' && net.points === 24 * 24, `the network view shows every layer: ${JSON.stringify(net?.layers)}`);
      assert(net.boxes.length === 36, `every neuron drawn (${net.boxes.length})`);
      const before = await canvasSum(page, '#network-canvas');
      const d0 = s0.inside.distributions;
      await page.click('#play');
      await until(page, (n) => window.kilnPage.summary().step > n + 40, s0.step, '40 more steps', 60_000);
      await page.waitForTimeout(1200);
      await page.click('#pause');
      await until(page, () => !window.kilnPage.summary().playing, null, 'pause', 20_000);
      const s1 = await summary(page);
      assert(s1.inside.network.draws > net.draws && (await canvasSum(page, '#network-canvas')) !== before, 'the network view redraws with new outputs as training goes on');
      const d1 = s1.inside.distributions;
      assert(d1.samples > d0.samples && d1.steps.length >= 2 && d1.steps.every((x, i) => i === 0 || x > d1.steps[i - 1]), `distribution samples over steps: ${d1.steps}`);
      assert(JSON.stringify(d1.last.weights) !== JSON.stringify(d0.last?.weights), 'the weight quantiles move');
      for (const id of ['#dist-weights', '#dist-grads', '#dist-updates']) assert((await canvasInk(page, id)) > 200, `${id} is drawn`);
      // The fused MLP pass keeps no activations: the view runs the last batch through the forward pass.
      assert(/hidden layer's output/.test(await page.textContent('#act-note')), 'the activation chart shows each hidden layer');
      assert(d1.activations.layers.join() === 'layer0,layer1' && d1.activations.points >= 2, `the activation chart plots both hidden layers over steps: ${JSON.stringify(d1.activations)}`);
      // Click layer1's neuron 3: the large view shows it.
      const [, , fx, fy] = s1.inside.network.boxes.find(([l, n]) => l === 2 && n === 3);
      const canvas = page.locator('#network-canvas');
      await canvas.scrollIntoViewIfNeeded();
      const box = await canvas.boundingBox();
      await canvas.click({ position: { x: fx * box.width, y: fy * box.height } });
      await until(page, () => /^layer1 · neuron 3/.test(window.kilnPage.summary().inside.network.caption), null, 'the clicked neuron enlarged', 10_000);
      await page.screenshot({ path: path.join(OUT, 'look-inside-mlp.png'), fullPage: true });
    });

    await test('a learning rate set too high shows in the update distributions', page, async () => {
      const updatesAt = async (lr) => {
        await page.fill('#opt-lr', String(lr));
        await until(page, (v) => window.kilnPage.summary().info?.config?.optimizer?.lr === v && window.kilnPage.summary().step === 0, lr, `the lr ${lr} run`, 60_000);
        await page.selectOption('#dist-tensor', 'layer1.weight');
        for (let i = 0; i < 10; i++) {
          await page.click('#step');
          await until(page, (n) => window.kilnPage.summary().step >= n, i + 1, 'a step', 30_000);
        }
        return until(page, () => { const d = window.kilnPage.summary().inside.distributions; return d.steps.at(-1) === 10 && d.last; }, null, 'the distributions after 10 steps', 30_000);
      };
      const calm = await updatesAt(0.02);
      const wild = await updatesAt(1);
      // AdamW moves each weight by about lr per step, whatever the gradient's scale: 50× here.
      assert(wild.updates > 15 * calm.updates, `update RMS at lr 1 (${wild.updates}) should dwarf lr 0.02's (${calm.updates})`);
      await page.screenshot({ path: path.join(OUT, 'lr-too-high.png'), fullPage: true });
      await page.fill('#opt-lr', '0.02');
      await until(page, () => window.kilnPage.summary().info?.config?.optimizer?.lr === 0.02, null, 'lr back to 0.02', 60_000);
    });

    await test("quantize: the copy's numbers and boundary beside the f32 model; its MLX file downloads and loads back", page, async () => {
      await page.fill('#mlp-hidden', '64, 64');
      await until(page, () => window.kilnPage.summary().info?.config?.model?.mlp?.hidden?.join() === '64,64', null, 'the 64-wide MLP', 60_000);
      await page.click('#play');
      await until(page, () => window.kilnPage.summary().step >= 30, null, '30 steps', 60_000);
      await page.click('#pause');
      await until(page, () => !window.kilnPage.summary().playing, null, 'pause', 20_000);
      await page.selectOption('#q-bits', '4');
      await page.selectOption('#q-group', '32');
      assert(secondFetches() === 0, `the first wasm trains MLPs alone, yet the second was fetched ${secondFetches()} times`);
      await page.click('#q-run');
      const q = await until(page, () => window.kilnPage.summary().quantized, null, 'the quantize report', 60_000);
      // The first wasm neither quantizes nor reads files: the run moved to the second.
      assert(secondFetches() === 1, `second wasm fetches for the quantize: ${secondFetches()}`);
      // layer1 (64×64) and layer2 (2×64) split into groups of 32; layer0 (64×2) does not.
      assert(q.bits === 4 && q.groupSize === 32 && q.quantized === 2 && q.shown === 'boundaries', JSON.stringify(q));
      assert(Math.abs(q.copy.loss - q.full.loss) < 0.1 && q.copy.loss !== q.full.loss, `validation loss ${q.full.loss} → ${q.copy.loss}`);
      assert((await canvasInk(page, '#q-quant')) > 5000 && (await canvasInk(page, '#q-full')) > 5000, 'both boundaries are drawn');
      assert(/kept in f32: its rows hold 2 values/.test(await page.textContent('#q-table')), 'the table says why layer0 stays in f32');
      const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 30_000 }), page.click('#q-download')]);
      const file = path.join(OUT, 'quantized-4bit.safetensors');
      await dl.saveAs(file);
      assert(/4bit-mlx\.safetensors$/.test(dl.suggestedFilename()), dl.suggestedFilename());
      const runs = (await summary(page)).runs;
      await page.setInputFiles('#q-load', file);
      await until(page, (n) => window.kilnPage.summary().runs > n, runs, 'a run from the MLX file', 60_000);
      assert(/quantized file/.test(await page.textContent('#preset-desc')) && (await page.inputValue('#mlp-hidden')).replace(/\s/g, '') === '64,64', "the form shows the file's model");
      await page.click('#step');
      await until(page, () => window.kilnPage.summary().step >= 1, null, 'the loaded run trains on', 30_000);
      await page.setInputFiles('#q-load', { name: 'bad.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.from('not a model') });
      await until(page, () => /not a quantized model/.test(window.kilnPage.summary().error ?? ''), null, 'the bad-file message', 20_000);
      await page.screenshot({ path: path.join(OUT, 'quantize.png'), fullPage: true });
      await page.fill('#mlp-hidden', '16, 16');
      await until(page, () => window.kilnPage.summary().info?.config?.model?.mlp?.hidden?.join() === '16,16', null, 'back to 16, 16', 60_000);
    });

    await test('single step advances exactly one step', page, async () => {
      const s0 = (await summary(page)).step;
      await page.click('#step');
      await until(page, (n) => window.kilnPage.summary().step >= n + 1, s0, 'one step');
      await page.waitForTimeout(500);
      const s1 = (await summary(page)).step;
      assert(s1 === s0 + 1, `step went from ${s0} to ${s1}`);
    });

    await test('checkpoint download and upload', page, async () => {
      const [download] = await Promise.all([page.waitForEvent('download', { timeout: 30_000 }), page.click('#ckpt-save')]);
      // Named after the run and its step: runs of one preset save to different names.
      const { name, step: at } = await page.evaluate(() => ({ name: window.kilnPage.summary().kept.runs.find((r) => r.current).name, step: window.kilnPage.summary().step }));
      const want = `${name.replace(' #', '-')}-step${at}.safetensors`;
      assert(download.suggestedFilename() === want, `${download.suggestedFilename()}, want ${want}`);
      const file = path.join(OUT, 'checkpoint.safetensors');
      await download.saveAs(file);
      const bytes = await fs.readFile(file);
      assert(bytes.length > 1000, `checkpoint has ${bytes.length} bytes`);
      const step = (await summary(page)).step;
      await page.click('#play');
      await until(page, (n) => window.kilnPage.summary().step > n + 2, step, 'training past the checkpoint', 60_000);
      await page.click('#pause');
      await page.setInputFiles('#ckpt-load', file);
      await until(page, (n) => /Checkpoint loaded at step/.test(document.getElementById('status').textContent) && window.kilnPage.summary().step === n, step, 'the checkpoint to load', 30_000);
      // F16: half the file, and it loads back at its step.
      await page.check('#ckpt-f16');
      const [half] = await Promise.all([page.waitForEvent('download', { timeout: 30_000 }), page.click('#ckpt-save')]);
      const halfFile = path.join(OUT, 'checkpoint-f16.safetensors');
      await half.saveAs(halfFile);
      const halfBytes = await fs.readFile(halfFile);
      // Two bytes saved per number (weights, AdamW m and v); a model this small is mostly header.
      const params = (await summary(page)).info.parameters;
      assert(bytes.length - halfBytes.length > 5 * params, `the f16 checkpoint has ${halfBytes.length} bytes against ${bytes.length}`);
      await page.uncheck('#ckpt-f16');
      const step16 = (await summary(page)).step;
      await page.click('#step');
      await until(page, (n) => window.kilnPage.summary().step === n + 1, step16, 'a step past the f16 checkpoint', 30_000);
      await page.setInputFiles('#ckpt-load', halfFile);
      await until(page, (n) => /Checkpoint loaded at step/.test(document.getElementById('status').textContent) && window.kilnPage.summary().step === n, step16, 'the f16 checkpoint to load', 30_000);
      await page.setInputFiles('#ckpt-load', { name: 'junk.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.from('not a checkpoint at all') });
      await until(page, () => /not a Kiln checkpoint/.test(window.kilnPage.summary().error ?? ''), null, 'the bad-checkpoint message', 10_000);
    });

    await test('Llama (small) trains and samples text', page, async () => {
      await page.selectOption('#preset', 'llama-tiny');
      await until(page, () => window.kilnPage.summary().info?.model === 'llama', null, 'the llama-tiny run', 60_000);
      // The first wasm trains MLPs only: the Llama is built in the second, loaded once (for the quantize above).
      assert(secondFetches() === 1, `second wasm fetches: ${fetched.filter((p) => p.includes('full'))}`);
      // Shrink it so SwiftShader keeps up: one edit burst, one rebuild.
      await page.fill('#ll-d_model', '32');
      await page.fill('#ll-heads', '2');
      await page.fill('#ll-layers', '1');
      await page.fill('#ll-context', '32');
      await page.fill('#ll-hidden', '64');
      await page.fill('#batch', '4');
      await until(page, () => window.kilnPage.summary().info?.config?.model?.llama?.d_model === 32 && window.kilnPage.summary().info.config.batch === 4, null, 'the small Llama', 60_000);
      const excerpt = await page.textContent('#text-excerpt');
      assert(/God/.test(excerpt), 'the text excerpt shows Genesis');
      await page.click('#play');
      await until(page, () => window.kilnPage.summary().lastSampleStep > 0 && window.kilnPage.summary().loss.points >= 5, null, 'a sample after training steps', 150_000);
      await page.screenshot({ path: path.join(OUT, 'llama-training.png'), fullPage: true });
      await page.click('#pause');
      await until(page, () => !window.kilnPage.summary().playing, null, 'pause', 20_000);
      await page.waitForTimeout(500); // the snapshot after the last chunk may still bring a sample
      const s = await summary(page);
      // The last sample and the text as drawn, read in one frame after the page drew what had arrived.
      const [sample, shown] = await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r([window.kilnPage.summary().lastSample, document.getElementById('sample-output').textContent])))));
      assert(sample.length > 0, 'the sample is not empty');
      assert(shown.includes(sample.slice(0, 20)), 'the sample is shown');
      assert(Number((await page.textContent('#stat-tps')).replace(/,/g, '')) > 0, 'tokens/s shows a rate');
      assert(s.heatmaps >= 9, `every Llama tensor has a heatmap (got ${s.heatmaps})`);
      // The next-token view: the prompt's characters, five guesses each, most likely first.
      const nt = await until(page, () => window.kilnPage.summary().nextTokens, null, 'the next-token view', 60_000);
      assert(nt.positions.map((p) => p.text).join('') === nt.prompt && nt.prompt === s.prompt, `positions spell the prompt: ${JSON.stringify(nt.prompt)}`);
      for (const p of nt.positions) {
        const probs = p.next.map((g) => g.probability);
        assert(probs.length === 5 && probs.every((q, i) => q > 0 && q <= 1 && (i === 0 || q <= probs[i - 1])), `guesses after ${JSON.stringify(p.text)}: ${probs}`);
        assert(probs.reduce((a, b) => a + b, 0) <= 1 + 1e-5, 'probabilities of distinct characters sum to at most 1');
      }
      await until(page, () => document.querySelectorAll('#nt-list li').length === 5 && !document.getElementById('next-tokens').hidden, null, 'the next-token bars', 10_000);
      // Attention maps of the prompt: one per layer and head, drawn, changing as training goes on.
      const a0 = await until(page, () => window.kilnPage.summary().inside.attention, null, 'the attention maps', 30_000);
      assert(a0.layers === 1 && a0.heads === 2 && a0.tiles === 2 && a0.tokens === s.prompt.slice(-32), `attention maps ${JSON.stringify(a0)}`);
      assert(await page.isVisible('#attention-card') && !(await page.isVisible('#network-card')), 'the Llama shows attention, not the network graph');
      assert((await canvasInk(page, '#attention-big')) > 200, 'the enlarged map is drawn');
      await page.click('#play');
      await until(page, (sig) => window.kilnPage.summary().inside.attention.signature !== sig, a0.signature, 'the attention maps to change with training', 90_000);
      await page.click('#pause');
      await until(page, () => !window.kilnPage.summary().playing, null, 'pause', 20_000);
      await page.locator('#attention-grid canvas').nth(1).click();
      await until(page, () => window.kilnPage.summary().inside.attention.selected.head === 1, null, 'head 1 enlarged', 10_000);
      const layers = (await summary(page)).inside.distributions;
      assert(layers.samples >= 2, "the Llama's distributions are sampled too");
      assert(/residual stream/.test(await page.textContent('#act-note')), 'the activation chart shows each block output');
      // A Llama quantizes too: its greedy text beside the f32 model's.
      await page.selectOption('#q-bits', '8');
      await page.selectOption('#q-group', '32');
      await page.click('#q-run');
      const q = await until(page, () => window.kilnPage.summary().quantized, null, 'the Llama quantize report', 60_000);
      assert(q.quantized === 7 && q.shown === 'samples', `every matrix of rows of 32 is quantized: ${JSON.stringify(q)}`);
      assert((await page.textContent('#q-sample-quant')).startsWith(s.prompt) && (await page.isVisible('#q-samples')), 'the quantized sample is shown');
      // An empty prompt samples from nothing, with no error and no next-character guesses.
      const before = (await summary(page)).samples;
      await page.fill('#sample-prompt', '');
      await page.click('#sample-now');
      await until(page, (n) => window.kilnPage.summary().samples > n && window.kilnPage.summary().nextTokens === null, before, 'a sample from an empty prompt', 60_000);
      const e = await summary(page);
      assert(e.sampleError === null && e.nextTokens === null && e.lastSample.length > 0, `empty prompt: ${JSON.stringify([e.sampleError, e.nextTokens, e.lastSample])}`);
      await page.fill('#sample-prompt', s.prompt);
      await page.click('#sample-now');
    });

    await test('bad config (heads not dividing d_model) shows the error and the page keeps working', page, async () => {
      await until(page, () => !window.kilnPage.summary().playing, null, 'pause', 20_000);
      // A value the form itself refuses (batch 0) shows above the form, and the status line says so.
      // The refused input is marked (aria-invalid, outlined) until it is fixed.
      // The page draws its state on the next animation frame, so the marks are waited for.
      const marked = (ids, what) => until(page, (want) => [...document.querySelectorAll('[aria-invalid="true"]')].map((e) => e.id).join() === want, ids, what, 5_000);
      await page.fill('#batch', '0');
      await until(page, () => /Batch/.test(window.kilnPage.summary().error ?? '') && /not applied/.test(document.getElementById('status').textContent), null, 'the form error and the status', 10_000);
      await marked('batch', 'Batch marked');
      await page.fill('#batch', '4');
      await until(page, () => window.kilnPage.summary().error === null, null, 'batch 4 again', 30_000);
      await page.fill('#ll-heads', '3');
      const msg = await until(page, () => window.kilnPage.summary().error, null, 'the error message', 30_000);
      // Rust's error names the config field (model.llama.heads); the page names the form's label.
      assert(/^Could not build this model: Heads: must divide d_model/.test(msg), `the message names Heads and says why: ${msg}`);
      await marked('ll-heads', 'Heads marked');
      await until(page, () => document.getElementById('config-error').className === 'error', null, 'the refusal shown as an error', 5_000);
      assert(await page.isVisible('#config-error'), 'the error is visible');
      // On screen beside the edited field, and the status line does not read as if it applied.
      const onScreen = await page.locator('#config-error').evaluate((e) => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; });
      assert(onScreen, 'the error shows in the viewport where Heads was edited');
      await until(page, () => /not applied|previous model is still loaded/.test(document.getElementById('status').textContent), null, 'the status to say the previous run stays', 5_000);
      await page.screenshot({ path: path.join(OUT, 'bad-config.png') });
      const s = await summary(page);
      assert(s.info.config.model.llama.heads === 2, 'the previous run stays loaded');
      await page.fill('#ll-heads', '4');
      await until(page, () => window.kilnPage.summary().error === null && window.kilnPage.summary().info.config.model.llama.heads === 4, null, 'the fixed config to build', 60_000);
      await marked('', 'no input marked once fixed');
      await page.click('#step');
      await until(page, () => window.kilnPage.summary().step >= 1, null, 'a step after the fix', 60_000);
    });

    await test('the share link restores the config; a damaged link is refused as text', page, async () => {
      const url = await page.inputValue('#share-url');
      assert(url.includes('#c=') && url.length < 13_000, `share link looks right (${url.length} chars)`);
      const p2 = await newPage(browser, { errors });
      await p2.goto(url);
      await until(p2, () => window.kilnPage?.summary().info?.model === 'llama', null, 'the shared Llama', 60_000);
      assert(await p2.inputValue('#ll-heads') === '4' && await p2.inputValue('#ll-d_model') === '32', 'form restored from the link');
      const evil = Buffer.from(JSON.stringify({ model: { mlp: { input_dim: 2, hidden: ['<img src=x onerror=alert(1)>'], output_dim: 2, activation: 'relu' } }, data: { points: { task: 'spiral', points: 100, noise: 0, validation_fraction: 0.2 } }, batch: 8 })).toString('base64url');
      await p2.goto(server.url + '#c=' + evil);
      await p2.reload();
      await until(p2, () => /Ignoring the link/.test(window.kilnPage?.summary().linkError ?? ''), null, 'the damaged-link message', 60_000);
      await until(p2, () => window.kilnPage.summary().info?.model === 'mlp', null, 'a preset instead', 60_000);
      assert((await p2.$$('img')).length === 0, 'nothing from the link became HTML');
      await p2.context().close();
    });

    await test('every preset builds, trains, and opens from its share link with the same config', page, async () => {
      const names = (await page.$$eval('#preset option', (os) => os.map((o) => o.value))).filter(Boolean);
      assert(names.length >= 10 && names.includes('llama-reverse') && names.includes('llama-addition'), `presets: ${names}`);
      for (const name of names) {
        const runs = (await summary(page)).runs;
        await page.selectOption('#preset', name);
        await until(page, (n) => window.kilnPage.summary().runs > n && !!window.kilnPage.summary().info, runs, `the ${name} run`, 120_000);
        let s = await summary(page);
        assert(s.error === null, `${name}: ${s.error}`);
        // A new run's attention view holds nothing of the previous run's until its own maps come.
        const stale = await page.evaluate(() => !window.kilnPage.summary().inside.attention && document.getElementById('attention-caption').textContent !== '');
        assert(!stale, `${name}: the previous run's enlarged attention map is still shown`);
        if (name !== 'llama-small') {
          // llama-small takes tens of seconds a step on SwiftShader: it is built, not stepped.
          await page.click('#step');
          await until(page, () => window.kilnPage.summary().step >= 1, null, `a ${name} step`, 120_000);
        }
        if (s.info.model === 'mlp') {
          // The network view of every MLP preset: a grid of 24² points, or a curve of 64 for regression.
          const points = s.info.regression ? 64 : 576;
          await until(page, (p) => window.kilnPage.summary().inside.network?.points === p, points, `${name}: the network view`, 30_000);
        }
        if (s.info.model === 'llama') {
          // SwiftShader is a CPU adapter: every Llama preset is too big for it, and the page says so.
          assert(s.info.adapter.cpu === true && /runs WebGPU on the CPU/.test(s.cpuNotice ?? ''), `${name}: ${s.info.adapter.cpu} ${s.cpuNotice}`);
          if (s.info.task !== 'text') assert(/[>=]$/.test(s.prompt), `${name}: the prompt fits the task (${s.prompt})`);
        }
        // The link field is drawn on the frame after the run is built.
        await drawn(page);
        const url = await page.inputValue('#share-url');
        const p2 = await newPage(browser, { errors });
        await p2.goto(url);
        await until(p2, () => !!window.kilnPage?.summary().info, null, `${name} from its link`, 120_000);
        s = await summary(page);
        const opened = await summary(p2);
        assert(JSON.stringify(opened.info.config) === JSON.stringify(s.info.config), `${name}: the link opens ${JSON.stringify(opened.info.config).slice(0, 200)}`);
        assert(opened.linkError === null, `${name}: ${opened.linkError}`);
        await p2.context().close();
      }
      // The CPU advice's button shrinks the Llama to sizes SwiftShader steps through quickly.
      await page.click('#cpu-shrink');
      // The rebuild waits for one part of llama-small's first snapshot at most (ui/pace.js
      // scores one window on a CPU adapter): seconds, where the whole batch once took minutes.
      await until(page, () => window.kilnPage.summary().info?.config?.batch === 4 && window.kilnPage.summary().info.config.model.llama?.context === 32, null, 'the CPU-sized Llama', 60_000);
      assert((await summary(page)).cpuNotice === null, 'no advice once the run is CPU-sized');
    });

    await test('log-scale axes label small values (not "0"); the data plot has round ticks', page, async () => {
      const labels = await page.evaluate(async () => {
        const { tickLabel } = await import('./ui/charts.js');
        return [1e-4, 2.5e-6, 0.001, 0.05, 1, 250].map(tickLabel);
      });
      assert(labels.join(' ') === '1e-4 2.5e-6 0.001 0.05 1 250', `tick labels: ${labels.join(' ')}`);
      // The data plot's coordinates: round steps of 1, 2 or 5 × 10^k.
      const ticks = await page.evaluate(async () => (await import('./ui/points.js')).niceTicks(-4.4, 4.4).join(' '));
      assert(ticks === '-4 -2 0 2 4', `data plot ticks: ${ticks}`);
    });

    const unexpected = errors.filter((e) => !/favicon/.test(e));
    await test('no uncaught page errors', null, async () => {
      assert(unexpected.length === 0, `page errors: ${unexpected.slice(0, 3).join(' | ')}`);
    });
  });
}

await run('playground', main);
