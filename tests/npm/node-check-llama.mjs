// The Llama checks of node-check.mjs (which imports this file in its place among the checks):
// a tiny Llama trains, scores, generates and shows its views; the export folder, for a Llama and
// an MLP; mixed precision. Same helpers, same counting (checks.mjs).
import { Kiln, readCheckpoint } from 'kiln-gpu';
import { check, assert, rejects, failsWith, preset_free, PANGRAM, tinyLlama } from './checks.mjs';

await check('a tiny Llama trains and generates', async () => {
  const llama = tinyLlama({}, { optimizer: { lr: 0.01 }, seed: 3 });
  const r = await Kiln.create(llama);
  assert(r.info.model === 'llama' && r.info.task === 'text' && r.info.tokensPerStep === 64, JSON.stringify(r.info));
  await r.train({ steps: 10, readEvery: 5 });
  // Validation is the last 90 characters: 5 whole windows of 16 tokens, every one scored.
  const ev = await r.evaluate();
  assert(ev.scored === 80 && ev.available === 89 && ev.accuracy >= 0, JSON.stringify(ev));
  const some = await r.evaluate({ maxTokens: 40 });
  assert(some.scored === 32 && some.available === 89, `maxTokens 40: two windows of 16 (${JSON.stringify(some)})`);
  await failsWith(() => r.evaluate({ maxTokens: 0 }), 'invalid-input', 'maxTokens', 'maxTokens 0');
  await failsWith(() => r.evaluate({ maxTokens: r.info.maxEvalTokens + 1 }), 'invalid-input', 'maxTokens', 'maxTokens past info.maxEvalTokens');
  // A context the validation split cannot hold is refused, naming the shortest text that works.
  const long = await failsWith(() => Kiln.create({ ...llama, model: { llama: { ...llama.model.llama, context: 128 } } }), 'invalid-input', 'model.llama.context', 'context 128');
  assert(/at least \d+ characters/.test(long.message), long.message);
  const out = await r.generate('the ', { maxTokens: 12, temperature: 0.8, topK: 5, seed: 7 });
  assert(typeof out === 'string' && [...out].length === 12, `generated ${JSON.stringify(out)}`);
  assert(out === (await r.generate('the ', { maxTokens: 12, temperature: 0.8, topK: 5, seed: 7 })), 'same seed, same text');
  await rejects(r.generate('the ', { maxTokens: 0 }), '`maxTokens`', 'maxTokens 0');
  await rejects(r.generate('Z'), '`prompt`', 'prompt outside the vocabulary');
  await rejects(r.generate('the ', [12, 0.8]), '`options`', 'options as an array');
  await rejects(r.generate('the ', { quantized: 'yes' }), '`quantized`', 'quantized not a boolean');
  const guesses = await r.nextTokens('the q', { k: 3 });
  assert(guesses.length === 5 && guesses.map((g) => g.text).join('') === 'the q', `nextTokens positions ${JSON.stringify(guesses.map((g) => g.text))}`);
  assert(guesses.every((g) => g.next.length === 3 && g.next[0].probability >= g.next[2].probability), 'three guesses each, most likely first');
  await failsWith(() => r.nextTokens('the q', { k: 0 }), 'invalid-input', 'k', 'k 0');
  const maps = await r.attentionMaps('the q');
  assert(maps.tokens.join('') === 'the q' && maps.layers === 1 && maps.heads === 2 && maps.probs.length === 2 * 25, `attention maps ${maps.probs.length}`);
  const rowSums = Array.from({ length: 10 }, (_, i) => maps.probs.slice(i * 5, i * 5 + 5).reduce((a, b) => a + b, 0));
  assert(rowSums.every((x) => Math.abs(x - 1) < 1e-5), `rows sum to 1: ${rowSums}`);
  const inside = await r.inspect();
  assert(inside.layers.find((l) => l.name === 'blocks.0')?.activation?.counts.length === 32, 'the block keeps its activations');
  const d = r.dataset();
  assert(d.kind === 'text' && d.vocab.length === new Set(PANGRAM).size && d.excerpt.startsWith('the quick'), 'text preview');
  await rejects(r.predictGrid(), 'MLP', 'predictGrid on a Llama');
  await r.dispose();
});

await check('exportFiles: a Llama and an MLP leave as folders and fromExport brings them back exactly', async () => {
  const llama = await Kiln.create(tinyLlama({}, { seed: 5 }));
  const mlp = await Kiln.create(preset_free());
  for (const [r, names] of [[llama, ['config.json', 'model.safetensors', 'tokenizer.json', 'train.txt', 'train.py', 'kiln_reference.json']], [mlp, ['model.safetensors', 'model.py', 'data.csv', 'kiln_config.json', 'train.py']]]) {
    await r.train({ steps: 4 });
    const files = await r.exportFiles();
    assert(names.every((n) => files[n] instanceof Uint8Array && files[n].length > 0), `files: ${Object.keys(files)}`);
    const back = await Kiln.fromExport(files);
    assert((await readCheckpoint(await back.save())).step === 4, 'the step comes back');
    assert((await back.evaluate()).loss === (await r.evaluate()).loss, 'the imported run scores exactly the same');
    await back.dispose();
  }
  const files = await llama.exportFiles();
  const config = JSON.parse(new TextDecoder().decode(files['config.json']));
  config.num_key_value_heads = 1;
  await failsWith(() => Kiln.fromExport({ ...files, 'config.json': new TextEncoder().encode(JSON.stringify(config)) }), 'invalid-input', 'config.json: num_key_value_heads', 'grouped-query attention');
  const { 'train.txt': _, 'config.json': c, ...rest } = files;
  const foreign = JSON.parse(new TextDecoder().decode(c));
  delete foreign.kiln_config;
  await failsWith(() => Kiln.fromExport({ ...rest, 'config.json': new TextEncoder().encode(JSON.stringify(foreign)) }), 'invalid-input', 'train.txt', 'a foreign folder without its text');
  await failsWith(() => Kiln.fromExport({ 'config.json': 'not bytes' }), 'invalid-input', 'config.json', 'a file that is not bytes');
  await failsWith(() => Kiln.fromExport([]), 'invalid-input', 'files', 'an array');
  await llama.dispose();
  await mlp.dispose();
});

await check('mixed precision: the loss scale in the metrics, less GPU memory, the views work', async () => {
  const llama = (precision) => tinyLlama({ layers: 2, precision }, { optimizer: { lr: 0.01 }, seed: 3 });
  const [fp32, mixed] = [await Kiln.create(llama('fp32')), await Kiln.create(llama('mixed'))];
  assert(mixed.info.config.model.llama.precision === 'mixed' && !('precision' in fp32.info.config.model.llama), 'fp32 is the default, left out');
  assert(mixed.info.gpuBytes < fp32.info.gpuBytes, `GPU memory ${fp32.info.gpuBytes} -> ${mixed.info.gpuBytes}`);
  const seen = [];
  mixed.on('metrics', (batch) => seen.push(...batch));
  await mixed.train({ steps: 10, readEvery: 5 });
  const plain = await fp32.train({ steps: 10 });
  assert(seen.length === 10 && seen.every((m) => m.lossScale === 65536), `loss scale ${seen.map((m) => m.lossScale)}`);
  assert(plain.lossScale === undefined, 'no loss scale in fp32');
  const [a, b] = [await fp32.evaluate(), await mixed.evaluate()];
  assert(Math.abs(a.loss - b.loss) / a.loss < 0.01, `validation loss fp32 ${a.loss} vs mixed ${b.loss}`);
  const maps = await mixed.attentionMaps('the q');
  const rows = Array.from({ length: 10 }, (_, i) => maps.probs.slice(i * 5, i * 5 + 5).reduce((x, y) => x + y, 0));
  assert(maps.layers === 2 && rows.every((x) => Math.abs(x - 1) < 1e-5), `attention rows from the f16 stash sum to 1: ${rows}`);
  // Each block's output over the batch's 4 × 16 tokens of width 16, every one in a histogram bin.
  const act = (await mixed.inspect()).layers.find((l) => l.name === 'blocks.1')?.activation;
  assert(act?.counts.reduce((x, y) => x + y, 0) === 4 * 16 * 16 && act.nonFinite === 0, `activations from the f16 stash: ${JSON.stringify(act?.counts)}`);
  await failsWith(() => Kiln.create(llama('half')), 'invalid-input', 'model.llama.precision', 'precision half');
  await Promise.all([fp32.dispose(), mixed.dispose()]);
});
