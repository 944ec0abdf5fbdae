// kiln_wasm.js — what js/kiln.js imports as its wasm-bindgen module. The npm package ships that
// module under this name; Trunk emits it as pkg/kiln.js (+ pkg/kiln_bg.wasm, found relative to
// the module itself), so the page re-exports it from there.
export * from './pkg/kiln.js';
export { default } from './pkg/kiln.js';
