// uplot.js — uPlot as a module. uPlot ships its minified build only as a classic script
// (uPlot.iife.min.js, 22 KB gzipped against the ESM build's 42 KB unminified), which
// index.html loads before the modules; this re-exports the global it defines.
export default globalThis.uPlot;
