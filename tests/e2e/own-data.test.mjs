// own-data.test.mjs — the playground with the user's own data, in headless Chromium with
// SwiftShader's WebGPU against the Trunk release build: pasted text, points clicked onto the
// plot, uploaded and pasted CSVs, and the errors each gets.
//   node tests/e2e/own-data.test.mjs [dist-dir]

import path from 'node:path';
import { OUT, assert, test, until, drawn, summary, run, withPlayground } from './helpers.mjs';

const DIST = process.argv[2] ?? 'dist';

async function main() {
  await withPlayground(DIST, async ({ page, errors }) => {
    await until(page, () => window.kilnPage?.summary().info, null, 'the first run', 60_000);
    await page.check('input[name="model-kind"][value="llama"]');
    await until(page, () => window.kilnPage.summary().info?.model === 'llama', null, 'a Llama', 60_000);

    await test('your own data: pasted text, clicked points, an uploaded CSV', page, async () => {
      // With markup in it: it must show as text and never run.
      const text = 'the quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. <img src=x onerror="window.pwned=1"><script>window.pwned=2</script>\n'.repeat(8);
      const vocab = new Set(text).size;
      await page.selectOption('#tx-source', 'custom');
      // Too short a text is refused by Rust's check, which names the field and the minimum.
      await page.fill('#tx-text', 'hello there');
      await until(page, () => /Your text: has 11 characters; at least 64 needed/.test(window.kilnPage.summary().error ?? ''), null, 'the short-text error', 60_000);
      await page.fill('#tx-text', text);
      await until(page, (v) => window.kilnPage.summary().info?.config?.data?.text?.text?.startsWith('the quick') && window.kilnPage.summary().info.config.model.llama.vocab === v, vocab, 'a Llama on the pasted text', 60_000);
      assert((await page.textContent('#text-excerpt')).startsWith('the quick brown fox'), 'the excerpt shows the pasted text');
      assert((await page.textContent('#text-excerpt')).includes('<img src=x onerror='), 'the markup shows as text');
      assert((await page.$$('img')).length === 0 && (await page.evaluate(() => window.pwned)) === undefined, 'pasted markup never became HTML');
      // The next-token view names a character that draws nothing alone (inside an emoji) by its code point.
      const labels = await page.evaluate(async () => { const { tokenLabel } = await import('./ui/samples.js'); return ['\u200d', '\ufe0f', '\u0301', 'a', '\n', '👩'].map(tokenLabel); });
      assert(JSON.stringify(labels) === JSON.stringify(['U+200D zero-width joiner', 'U+FE0F emoji style', 'U+0301', '"a"', '"\\n"', '"👩"']), `token labels: ${labels}`);
      // "And God said" has characters this text lacks: the prompt becomes the text's start.
      const prompt = (await summary(page)).prompt;
      assert(prompt === 'the quick brown ', `the prompt is the start of the text: ${JSON.stringify(prompt)}`);
      await page.check('input[name="model-kind"][value="mlp"]');
      await until(page, () => window.kilnPage.summary().info?.model === 'mlp', null, 'back to an MLP', 60_000);
      await page.selectOption('#pt-task', 'custom');
      const box = await page.locator('#data-canvas').boundingBox();
      for (let i = 0; i < 12; i++) {
        await page.selectOption('#draw-class', String(i % 2));
        const [fx, fy] = i % 2 ? [0.25, 0.3] : [0.7, 0.75];
        await page.mouse.click(box.x + box.width * (fx + 0.02 * (i % 5)), box.y + box.height * (fy + 0.015 * (i % 3)));
      }
      await until(page, () => window.kilnPage.summary().info?.config?.data?.points?.csv?.split('\n').length === 12, null, 'a run on 12 clicked points', 60_000);
      // Another kind starts its own points: the choice sticks, and until there are 10 the
      // page says how many there are and that the run shown is the previous one.
      await page.selectOption('#custom-kind', 'regression');
      await drawn(page);
      assert((await page.inputValue('#custom-kind')) === 'regression' && !(await page.isVisible('#draw-class')), 'x,target stays chosen, with no class to draw');
      for (let i = 0; i < 3; i++) await page.mouse.click(box.x + box.width * (0.2 + 0.2 * i), box.y + box.height * 0.5);
      let s = await summary(page);
      assert(/3 so far.*from 10/.test(s.error ?? ''), `three clicked points: ${s.error}`);
      assert(s.info.config.data.points.csv.split('\n').length === 12, 'the 12-point run stays until there are 10');
      await page.click('#clear-points');
      s = await summary(page);
      assert(/0 so far/.test(s.error ?? ''), `after Clear: ${s.error}`);
      // Waiting for points is a notice, not an error.
      await until(page, () => document.getElementById('config-error').className === 'notice', null, 'after Clear: shown as a notice', 5_000);
      await page.selectOption('#custom-kind', 'classes');
      // A bad upload is refused naming the file, the line and the column (Rust's parser).
      await page.setInputFiles('#csv-file', { name: 'bad.csv', mimeType: 'text/csv', buffer: Buffer.from('x,y,label\n0.1,0.2,0\n0.3,abc,1\n') });
      await until(page, () => /^bad\.csv: line 3, column y: `abc` is not a number$/.test(window.kilnPage.summary().error ?? ''), null, 'the bad CSV named', 30_000);
      const rows = Array.from({ length: 30 }, (_, i) => `${Math.cos(i) * 0.8},${Math.sin(i) * 0.8},${i % 3}`);
      await page.setInputFiles('#csv-file', { name: 'points.csv', mimeType: 'text/csv', buffer: Buffer.from('x,y,label\n' + rows.join('\n')) });
      await until(page, () => window.kilnPage.summary().info?.config?.model?.mlp?.output_dim === 3, null, 'a 3-class run on the CSV', 60_000);
      await until(page, () => /most likely of 3 classes/.test(document.getElementById('data-hint').textContent), null, 'the 3-class hint', 5_000);
      assert(!/no points/.test(await page.textContent('#data-hint')), 'every class has points');
      await page.screenshot({ path: path.join(OUT, 'own-points.png') });
      // Labels {0, 7} build 8 classes; the hint says which have no points.
      const gap = rows.map((r, i) => r.replace(/,\d$/, i % 2 ? ',7' : ',0'));
      await page.setInputFiles('#csv-file', { name: 'gap.csv', mimeType: 'text/csv', buffer: Buffer.from(gap.join('\n')) });
      await until(page, () => window.kilnPage.summary().info?.config?.model?.mlp?.output_dim === 8, null, 'an 8-class run on labels 0 and 7', 60_000);
      await until(page, () => document.getElementById('data-hint').textContent.includes('classes 1, 2, 3, 4, 5, 6 have no points'), null, 'the hint naming the empty classes', 5_000);
      // The paste box opens with the points so far; what is pasted goes through the same parser.
      await page.click('#csv-paste summary');
      // (The details element's toggle event, which fills the box, comes as a task of its own.)
      await until(page, (csv) => document.getElementById('csv-text').value === csv, gap.join('\n'), 'the paste box holding the uploaded points', 5_000);
      await page.fill('#csv-text', '0.1,0.2\n0.3,zz\n');
      await page.click('#csv-use');
      await until(page, () => /^pasted CSV: line 2, .*`zz` is not a number$/.test(window.kilnPage.summary().error ?? ''), null, 'the pasted CSV refused', 30_000);
      // The refusal stays: typing in the paste box does not rebuild the run (a rebuild, 400 ms
      // after an edit, would clear it); 1.5 s is past that debounce even on a loaded machine.
      const runs = (await summary(page)).runs;
      await page.waitForTimeout(1_500);
      s = await summary(page);
      assert(/`zz` is not a number$/.test(s.error ?? '') && s.runs === runs, `after the refused paste: ${s.error}, runs ${runs} -> ${s.runs}`);
      await page.fill('#csv-text', Array.from({ length: 12 }, (_, i) => `${i / 6 - 1},${Math.sin(i)}`).join('\n'));
      await page.click('#csv-use');
      await until(page, () => window.kilnPage.summary().info?.regression === true && window.kilnPage.summary().error === null, null, 'a regression run on the pasted points', 60_000);
    });

    await test('points away from the origin: a view fitted to them, the boundary over it, standardized inputs', page, async () => {
      // x in [2, 4], y in [10, 16]: a view centred on the origin would be [-17.6, 17.6]², with
      // the points in one small corner of it.
      const far = Array.from({ length: 40 }, (_, i) => `${2 + (i % 10) / 4.5},${10 + Math.floor(i / 10) * 2},${i % 10 < 5 ? 0 : 1}`);
      await page.fill('#csv-text', far.join('\n'));
      await page.click('#csv-use');
      await until(page, () => window.kilnPage.summary().info?.config?.data?.points?.csv?.startsWith('2,10,0'), null, 'a run on the far points', 60_000);
      // The view pads the points' range by a tenth each side: x [1.8, 4.2], y [9.4, 16.6].
      const [x0, x1, y0, y1] = (await summary(page)).view;
      const near = (a, b) => Math.abs(a - b) < 1e-9;
      assert(near(x0, 1.8) && near(x1, 4.2) && near(y0, 9.4) && near(y1, 16.6), `view ${[x0, x1, y0, y1]}`);
      // The worker's next grid covers that view (predictGrid over the box, from Rust).
      await until(page, () => { const s = window.kilnPage.summary(); return s.grid?.extent?.join() === s.view.join(); }, null, 'a boundary over the fitted view', 60_000);
      // Own points standardize by default: the run says what its network sees, and trains.
      const info = (await summary(page)).info;
      assert(info.config.data.points.standardize === true && info.inputScaling?.mean.length === 2, `standardize ${info.config.data.points.standardize}`);
      await until(page, () => /standardized inputs: the network sees x′ = \(x − [23](\.\d+)?\) \/ 0\.\d+, y′ = \(y − 1[23](\.\d+)?\) \/ 2\.\d+/.test(document.getElementById('data-hint').textContent), null, 'the data card naming the scaling', 5_000);
      await page.click('#play');
      await until(page, () => window.kilnPage.summary().step >= 150, null, '150 steps on the far points', 60_000);
      await page.click('#pause');
      await page.screenshot({ path: path.join(OUT, 'own-points-far.png') });
    });

    const unexpected = errors.filter((e) => !/favicon/.test(e));
    await test('no uncaught page errors', null, async () => {
      assert(unexpected.length === 0, `page errors: ${unexpected.slice(0, 3).join(' | ')}`);
    });
  });
}

await run('own data', main);
