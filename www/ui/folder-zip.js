// folder-zip.js — an export folder (file name → bytes) as one .zip and back, with fflate. The
// library loads on first use, so a page that never exports or imports never downloads it.

const fflate = () => import('../fflate/browser.js');

/** The folder's files zipped under `dir/` (what unzipping it recreates). */
export async function zipFolder(files, dir) {
  const { zipSync } = await fflate();
  const entries = Object.fromEntries(Object.entries(files).map(([name, bytes]) => [`${dir}/${name}`, bytes]));
  return zipSync(entries, { level: 6 });
}

/**
 * The files of a zipped export folder, wherever in the zip it lies: the entries beside its
 * config.json (a Hugging Face folder) or kiln_config.json (Kiln's MLP export), named without
 * their folder. Without either, every top-level file (Kiln then says which file is missing).
 */
export async function unzipFolder(bytes) {
  const { unzipSync } = await fflate();
  let entries;
  try {
    entries = unzipSync(bytes);
  } catch (e) {
    throw Object.assign(new Error(`the file is not a zip archive (${e.message})`), { code: 'invalid-input', field: 'zip' });
  }
  const names = Object.keys(entries).filter((n) => !n.endsWith('/') && !n.startsWith('__MACOSX/'));
  const marker = names.filter((n) => /(^|\/)(kiln_)?config\.json$/.test(n)).sort((a, b) => a.length - b.length)[0];
  const dir = marker ? marker.slice(0, marker.lastIndexOf('/') + 1) : '';
  const files = {};
  for (const name of names) {
    const rest = name.slice(dir.length);
    if (name.startsWith(dir) && !rest.includes('/')) files[rest] = entries[name];
  }
  return files;
}
