// Trunk's post_build hook (Trunk.toml): in a release build (`make build-page`), minifies every
// JavaScript file of the page in Trunk's staging folder with esbuild, in place, each file on its
// own, so the page's modules keep their names and imports (the wasm-bindgen glue included;
// files already minified, *.min.js, are left as they are). `trunk serve` builds for debugging
// and keeps the sources readable. The page's JS is a fifth of what it downloads and half of
// that is comments and indentation (bench/RESULTS.md, session 13).

import fs from 'node:fs';
import path from 'node:path';
import { transform } from 'esbuild';

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

let before = 0;
let after = 0;
for (const file of scripts(staging)) {
  const source = fs.readFileSync(file, 'utf8');
  // ES modules stay ES modules (no format given): only whitespace, comments and local names go.
  const { code } = await transform(source, { minify: true, loader: 'js', sourcefile: file });
  fs.writeFileSync(file, code);
  before += source.length;
  after += code.length;
}
console.log(`minify-page: JavaScript ${before} -> ${after} bytes`);
