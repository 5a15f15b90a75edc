#!/usr/bin/env node
// The CLI's start-up: `npm run build` runs this after tsc. It bundles src/cli/bin.ts with esbuild into
// dist/cli/bundle/ (an entry, cli.js, and chunks) and replaces tsc's dist/cli/bin.js, the one file of
// tsc's build the package's `bin` names, by a launcher of that entry: a command then loads a few files
// instead of ~300 (bench/README.md, "start-up"). The rest of dist/ stays tsc's: the library
// (`dist/index.js`) and the tests use it. Each command is still a chunk of its own, loaded when named
// (src/cli/commands/index.ts); the packages a command's start needs are inlined (INLINE), every other
// dependency stays external and is loaded from node_modules when the code that needs it runs: native
// addons (better-sqlite3), packages with files or workers of their own (playwright-core, piscina,
// pino's thread-stream, uplot's assets), and everything only a run loads. A tsc build alone (without
// this step) leaves tsc's own bin.js, which works unbundled.
import { writeFileSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { join, relative } from "node:path";
import { build } from "esbuild";

const ROOT = join(import.meta.dirname, "..");
const OUT = join(ROOT, "dist", "cli");
const CHUNKS = "bundle";

/**
 * Dependencies bundled into the CLI: what `validate` and the commands' registration load, and
 * css-select (with domutils and domhandler, which it requires), which `lazyModule` takes from the
 * bundle (scripts/bundled-modules.js).
 */
const INLINE = new Set(["commander", "yaml", "zod", "csv-parse", "css-select", "domutils", "domhandler"]);

const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8"));
const external = Object.keys(pkg.dependencies).filter((name) => !INLINE.has(name));

await rm(join(OUT, CHUNKS), { recursive: true, force: true });
const result = await build({
	absWorkingDir: ROOT,
	entryPoints: {
		[`${CHUNKS}/cli`]: "src/cli/bin.ts",
		// `main()` of the same bundle, for a process that runs the CLI in-process as users run it (the
		// bench's runner client: its memory and CPU are then those of the bundle, not of tsc's modules).
		[`${CHUNKS}/main`]: "src/cli/main.ts",
		// The page pool starts `./page-worker.js` beside its own module (src/extract/page-pool.ts), which in
		// the bundle is a chunk of dist/cli/bundle/.
		[`${CHUNKS}/page-worker`]: "src/extract/page-worker.ts",
		// The same for the job store's writer thread (src/history/store-writer.ts starts ./store-worker.js).
		[`${CHUNKS}/store-worker`]: "src/history/store-worker.ts",
	},
	outdir: OUT,
	chunkNames: `${CHUNKS}/[name]-[hash]`,
	bundle: true,
	splitting: true,
	format: "esm",
	platform: "node",
	target: "node22",
	external,
	inject: [join(ROOT, "scripts", "bundled-modules.js")],
	// Error and class names stay as written (a log's `type`, a stack): the bundle renames a top-level
	// name that two modules share.
	keepNames: true,
	// The inlined CommonJS packages (commander, yaml, csv-parse) require Node's built-in modules.
	banner: {
		js: 'import { createRequire as __scrapejobRequire } from "node:module";\nconst require = __scrapejobRequire(import.meta.url);',
	},
	metafile: true,
	logLevel: "warning",
});

// bin.js starts Node's compile cache before it loads any file of the bundle (the bundle's entry imports
// the chunks it shares with others before its own first line runs), then the bundle's entry.
writeFileSync(
	join(OUT, "bin.js"),
	`#!/usr/bin/env node
// Built by scripts/bundle-cli.mjs: the CLI is src/cli/bin.ts, bundled in ./${CHUNKS}/.
import nodeModule from "node:module";

nodeModule.enableCompileCache?.();
await import("./${CHUNKS}/cli.js");
`,
);

// Which source modules each file of the bundle holds: test/cli/start-up.test.ts reads it to tell which
// modules a command loaded, as it does for tsc's files.
const modules = {};
for (const [output, { inputs }] of Object.entries(result.metafile.outputs)) {
	modules[relative(OUT, join(ROOT, output))] = Object.keys(inputs).sort();
}
writeFileSync(join(OUT, CHUNKS, "modules.json"), `${JSON.stringify(modules, null, "\t")}\n`);
