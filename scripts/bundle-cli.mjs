#!/usr/bin/env node
// The CLI's start-up: `npm run build` runs this after tsc. It bundles src/cli/bin.ts with esbuild into
// dist/cli/bin.js (replacing tsc's copy of that one file) and chunks in dist/cli/bundle/, so that a
// command loads a few files instead of ~300 (bench/README.md, "start-up": `validate` 0.31 → 0.16 s of CPU).
// The rest of dist/ stays tsc's: the library (`dist/index.js`) and the tests use it. Each command is
// still a chunk of its own, loaded when named (src/cli/commands/index.ts); the packages a command's start
// needs are inlined (INLINE), every other dependency stays external and is loaded from node_modules when
// the code that needs it runs: native addons (better-sqlite3), packages with files or workers of their
// own (playwright-core, piscina, pino's thread-stream, uplot's assets), and everything only a run loads.
// A tsc build alone (the tests' global set-up before it bundled too) leaves a working unbundled bin.js.
import { writeFileSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { join, relative } from "node:path";
import { build } from "esbuild";

const ROOT = join(import.meta.dirname, "..");
const OUT = join(ROOT, "dist", "cli");
const CHUNKS = "bundle";

/** Dependencies bundled into the CLI: what `validate` and the commands' registration load. */
const INLINE = new Set(["commander", "yaml", "zod", "csv-parse"]);

const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8"));
const external = Object.keys(pkg.dependencies).filter((name) => !INLINE.has(name));

await rm(join(OUT, CHUNKS), { recursive: true, force: true });
const result = await build({
	absWorkingDir: ROOT,
	entryPoints: {
		bin: "src/cli/bin.ts",
		// The page pool starts `./page-worker.js` beside its own module (src/extract/page-pool.ts), which in
		// the bundle is a chunk of dist/cli/bundle/.
		[`${CHUNKS}/page-worker`]: "src/extract/page-worker.ts",
	},
	outdir: OUT,
	chunkNames: `${CHUNKS}/[name]-[hash]`,
	bundle: true,
	splitting: true,
	format: "esm",
	platform: "node",
	target: "node22",
	external,
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

// Which source modules each file of the bundle holds: test/cli/start-up.test.ts reads it to tell which
// modules a command loaded, as it does for tsc's files.
const modules = {};
for (const [output, { inputs }] of Object.entries(result.metafile.outputs)) {
	modules[relative(OUT, join(ROOT, output))] = Object.keys(inputs).sort();
}
writeFileSync(join(OUT, CHUNKS, "modules.json"), `${JSON.stringify(modules, null, "\t")}\n`);
