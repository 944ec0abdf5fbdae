// A consumer of the packed kiln-gpu tarball, built by `vite build`: trains a smaller copy of the
// mlp-spiral preset and shows the loss of every chunk. tests/npm/run.mjs reads the page.
import { init, Kiln, preset } from 'kiln-gpu';

const status = document.getElementById('status');
const list = document.getElementById('losses');

async function main() {
  await init();
  const cfg = preset('mlp-spiral');
  cfg.batch = 128;
  const run = await Kiln.create(cfg);
  document.getElementById('adapter').textContent = `${run.info.adapter.name} (${run.info.parameters} parameters)`;
  run.on('metrics', (batch) => {
    const li = document.createElement('li');
    li.textContent = (batch.reduce((s, m) => s + m.loss, 0) / batch.length).toFixed(5);
    li.dataset.steps = `${batch[0].step}-${batch[batch.length - 1].step}`;
    list.append(li);
    status.textContent = `training… step ${batch[batch.length - 1].step}, ${batch.stepsPerSecond.toFixed(1)} steps/s`;
  });
  await run.train({ steps: 200, readEvery: 20 });
  const grid = await run.predictGrid({ size: 8 });
  const evaluation = await run.evaluate();
  await run.dispose();
  window.kilnResult = { evaluation, gridValues: grid.values.length };
  status.textContent = 'done';
}

main().catch((e) => {
  status.textContent = `error: ${e?.message ?? e}`;
  console.error(e);
});
