// Injected into the CLI's bundle by scripts/bundle-cli.mjs: the packages that `lazyModule` (src/common/
// lazy-module.ts) loads from the bundle instead of node_modules. Each is still evaluated on first use
// only (esbuild wraps a required CommonJS package in a function). css-select: `validate` and a run
// compile a job's CSS selectors before the first request; from node_modules that is ~35 files to
// resolve and load (bench/README.md, "start-up").
export const SCRAPEJOB_BUNDLED_MODULES = {
	"css-select": () => require("css-select"),
};
