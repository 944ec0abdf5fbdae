// Trunk's post_build hook (Trunk.toml): in a release build (`make build-page`), bundles the page
// thread's modules (app.js and the ui/ modules it imports) into app.js, then minifies every
// other JavaScript file of the page in Trunk's staging folder with esbuild, in place, each file
// on its own, so the worker's modules keep their names and imports (the wasm-bindgen glue
// included, which finds its wasm beside itself; files already minified, *.min.js, are left as
// they are). `trunk serve` builds for debugging and keeps the sources readable. The page's JS
// is a fifth of what it downloads and half of that is comments and indentation; bundled, the
// page thread's 20 files share one gzip dictionary (bench/RESULTS.md, sessions 13 and 24).

import fs from 'node:fs';
import path from 'node:path';
import { build, transform } from 'esbuild';

const staging = process.env.TRUNK_STAGING_DIR;
if (!staging) {
  console.error('minify-page: TRUNK_STAGING_DIR is not set; Trunk runs this script as a post_build hook');
  process.exit(1);
}
if (process.env.TRUNK_PROFILE !== 'release') process.exit(0);

/** Every .js file under `dir` but the ones shipped minified. */
function scripts(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return scripts(file);
    return entry.name.endsWith('.js') && !entry.name.endsWith('.min.js') ? [file] : [];
  });
}

const app = path.join(staging, 'app.js');
const appSource = fs.readFileSync(app, 'utf8').length;
// The worker is its own entry (new Worker(new URL('./worker.js', import.meta.url))), left as is.
await build({ entryPoints: [app], outfile: app, allowOverwrite: true, bundle: true, format: 'esm', minify: true, logLevel: 'warning' });
console.log(`minify-page: app.js and its modules bundled into ${fs.statSync(app).size} bytes (app.js alone was ${appSource})`);

let before = 0;
let after = 0;
for (const file of scripts(staging).filter((f) => f !== app)) {
  const source = fs.readFileSync(file, 'utf8');
  // ES modules stay ES modules (no format given): only whitespace, comments and local names go.
  const { code } = await transform(source, { minify: true, loader: 'js', sourcefile: file });
  fs.writeFileSync(file, code);
  before += source.length;
  after += code.length;
}
console.log(`minify-page: JavaScript ${before} -> ${after} bytes`);
