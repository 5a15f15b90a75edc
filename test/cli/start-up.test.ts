import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { createProgram } from "../../src/cli/index.js";
import { isRunFolderName, readCsv, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, BIN } from "../helpers/spawn-cli.js";
import { createTestContext } from "../job/helpers.js";

const ROOT = join(BIN, "..", "..", "..");
const CLI_DIR = join(BIN, "..");
/** Written by scripts/bundle-cli.mjs: the source modules each file of the CLI's bundle holds. */
const BUNDLE_MODULES = join(CLI_DIR, "bundle", "modules.json");

/**
 * What a command that sends nothing has no use for: the fetch client, the job store, the run, the
 * report, the emulator, the fleet, the browser, Parquet, OpenTelemetry, metrics, the page workers and
 * logging — a package under node_modules/, or one of the product's folders as a tsc-built file
 * (dist/run/…) or as a source module of the bundle (src/run/…).
 */
const NOT_FOR_VALIDATE =
	/node_modules\/(undici|better-sqlite3|pg|pg-[^/]+|pino|piscina|playwright-core|prom-client|@opentelemetry\/[^/]+|parquetjs[^/]*|hyparquet[^/]*|node-html-markdown|cli-progress|uplot|csv-stringify|htmlparser2)\/|^(dist|src)\/(run|history|report|emulator|fleet|crawl|browser|api|library|output)\/|^(dist|src)\/extract\/page-worker\./;

/**
 * What a list run without `crawl:` or CSV output has no use for, loaded from disk: the HTML parser
 * (htmlparser2, which brings domhandler, domutils, dom-serializer and entities), the CSV writer and the
 * CSV header reader. css-select's domutils and domhandler are left out: the bundle carries them unrun.
 */
const NOT_FOR_PLAIN_RUN =
	/node_modules\/(htmlparser2|csv-stringify)\/|node_modules\/csv-parse\/(lib\/sync\.js|dist\/cjs\/sync\.cjs)$/;

beforeAll(() => assertBuilt());

/**
 * Every module that loading `url` brought in, as a path below the repository: a file of the bundle
 * stands for the modules it holds (`src/job/schema.ts`, `node_modules/zod/…`), any other file for itself
 * (`dist/job/schema.js` when bin.js is tsc's own, unbundled; `node_modules/css-select/…`).
 */
function modulesOf(url: string, bundle: Readonly<Record<string, readonly string[]>>): readonly string[] {
	const path = fileURLToPath(url);
	const inBundle = bundle[relative(CLI_DIR, path)];
	return path.startsWith(join(CLI_DIR, "bundle")) && inBundle ? inBundle : [relative(ROOT, path)];
}

/**
 * Run the built CLI with `args` (and `env`, in `cwd`, after the code `prelude`) in a fresh process and
 * list every module it loaded.
 */
async function modulesLoadedBy(
	args: readonly string[],
	env: NodeJS.ProcessEnv = {},
	cwd?: string,
	prelude = "",
): Promise<{ code: number; loaded: string[]; output: string }> {
	const dir = tempDir();
	const log = join(dir, "modules.json");
	// A hook registered before the CLI is imported sees every module it loads, ESM and CommonJS alike.
	const hook = `${prelude}
		import { registerHooks } from "node:module";
		import { writeFileSync } from "node:fs";
		const loaded = [];
		registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
		process.on("exit", () => writeFileSync(${JSON.stringify(log)}, JSON.stringify(loaded)));
	`;
	const child = spawn(
		process.execPath,
		["--import", `data:text/javascript,${encodeURIComponent(hook)}`, BIN, ...args],
		{ env: { PATH: process.env.PATH, TMPDIR: process.env.TMPDIR, ...env }, cwd, stdio: ["ignore", "pipe", "pipe"] },
	);
	let output = "";
	child.stdout.on("data", (chunk: Buffer) => {
		output += chunk.toString();
	});
	child.stderr.on("data", (chunk: Buffer) => {
		output += chunk.toString();
	});
	const code = await new Promise<number>((resolve) => child.on("close", (exit) => resolve(exit ?? -1)));
	const bundle = existsSync(BUNDLE_MODULES)
		? (JSON.parse(readFileSync(BUNDLE_MODULES, "utf8")) as Record<string, string[]>)
		: {};
	const urls = (JSON.parse(readFileSync(log, "utf8")) as string[]).filter((url) => url.startsWith("file:"));
	return { code, loaded: [...new Set(urls.flatMap((url) => modulesOf(url, bundle)))], output };
}

/** The one run folder of job `name` run in `dir`. */
function runFolder(dir: string, name: string): string {
	const jobDir = join(dir, "output", name);
	const runs = readdirSync(jobDir).filter(isRunFolderName);
	expect(runs).toHaveLength(1);
	return join(jobDir, runs[0]!);
}

describe("start-up: a command loads what it uses", () => {
	it("`validate` loads neither the fetch client, the job store, the run, the report, the emulator nor a page worker", async () => {
		const dir = tempDir();
		// CSS fields: validating them compiles their selectors (css-select), as a run does before its first request.
		const job = writeJob(
			dir,
			"job",
			"name: plain\ndefaults:\n  mode: request\ntargets:\n  - https://example.com/a\n  - https://example.com/b\nextract:\n  title: h1\n",
		);
		const { code, loaded, output } = await modulesLoadedBy(["validate", job]);
		expect(code, output).toBe(0);
		expect(output).toContain("valid");
		// The hook saw the CLI itself load: an empty list would pass for the wrong reason.
		expect(loaded.filter((path) => /^(dist|src)\/cli\/commands\/validate\.[jt]s$/.test(path))).toHaveLength(1);
		expect(loaded.filter((path) => /^(dist|src)\/job\/schema\.[jt]s$/.test(path))).toHaveLength(1);
		expect(loaded.filter((path) => NOT_FOR_VALIDATE.test(path))).toEqual([]);
	});

	it("the list of what `validate` must not load names real modules, in both of their built forms", () => {
		// A path that no longer matches the layout would make the check above pass for nothing.
		for (const module of [
			"run/core/run-job",
			"history/open-store",
			"report/render-report",
			"emulator/server",
			"extract/page-worker",
		]) {
			expect(existsSync(join(ROOT, "src", `${module}.ts`)), module).toBe(true);
			for (const path of [`dist/${module}.js`, `src/${module}.ts`])
				expect(NOT_FOR_VALIDATE.test(path), path).toBe(true);
		}
		for (const name of [
			"undici",
			"pg",
			"better-sqlite3",
			"playwright-core",
			"@opentelemetry/sdk-metrics",
			"hyparquet-writer",
		]) {
			expect(existsSync(join(ROOT, "node_modules", name, "package.json")), name).toBe(true);
			expect(NOT_FOR_VALIDATE.test(`node_modules/${name}/index.js`), name).toBe(true);
		}
	});

	it("the bundle's page pool has its worker beside it: without it, pages would be parsed on the run's thread", () => {
		// src/extract/page-pool.ts starts `./page-worker.js` next to its own module, and falls back to parsing
		// inline when there is none.
		expect(existsSync(BUNDLE_MODULES), "npm run build writes the bundle").toBe(true);
		const bundle = JSON.parse(readFileSync(BUNDLE_MODULES, "utf8")) as Record<string, string[]>;
		const pools = Object.keys(bundle).filter((file) => bundle[file]!.includes("src/extract/page-pool.ts"));
		expect(pools).toHaveLength(1);
		const worker = join(dirname(pools[0]!), "page-worker.js");
		expect(bundle[worker]).toContain("src/extract/page-worker.ts");
		expect(existsSync(join(CLI_DIR, worker))).toBe(true);
	});

	/** A JSONL-only list run of two pages against the test service, or with `--sandbox`: what it loaded. */
	async function plainListRun(sandbox: boolean) {
		const service = await useTestService();
		const dir = tempDir();
		const site = service.site.url;
		const job = writeJob(
			dir,
			"plain",
			`name: plain\ndefaults: {mode: request}\noutput: {formats: [jsonl]}\ntargets: [${site}/product/1, ${site}/product/2]\n`,
		);
		const { code, loaded, output } = await modulesLoadedBy(
			["run", job, ...(sandbox ? ["--sandbox"] : [])],
			sandbox ? {} : service.env,
			dir,
		);
		expect(code, output).toBe(0);
		expect(readRecords(runFolder(dir, "plain")).map((record) => record.status)).toEqual(["ok", "ok"]);
		expect(loaded.filter((path) => NOT_FOR_PLAIN_RUN.test(path))).toEqual([]);
		return loaded;
	}

	it("a list run without `crawl:` or CSV output loads neither the HTML parser nor the CSV libraries", async () => {
		const loaded = await plainListRun(false);
		// The hook saw the run itself load and fetch: an empty list would pass for the wrong reason.
		expect(loaded.filter((path) => /^(dist|src)\/run\/core\/run-job\.[jt]s$/.test(path))).toHaveLength(1);
		expect(loaded.some((path) => path.startsWith("node_modules/undici/"))).toBe(true);
	});

	it("the same run against `--sandbox` (the emulator in the process) loads no HTML parser either", async () => {
		const loaded = await plainListRun(true);
		expect(loaded.filter((path) => /^(dist|src)\/emulator\/server\.[jt]s$/.test(path))).toHaveLength(1);
	});

	it("a crawl that reads sitemaps and writes CSV loads both when it needs them, and writes both", async () => {
		// The other side of the test above: the list names what such a run really loads.
		const service = await useTestService();
		const dir = tempDir();
		const job = writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"defaults: {mode: request}",
				"output: {formats: [jsonl, csv]}",
				// A few of the sitemaps' pages: the crawl ends complete.
				'crawl: {sitemaps: true, max_depth: 1, include: ["/product/[12]$"]}',
				`targets: [${service.site.url}/]`,
				"",
			].join("\n"),
		);
		const { code, loaded, output } = await modulesLoadedBy(["run", job], service.env, dir);
		expect(code, output).toBe(0);
		const runDir = runFolder(dir, "crawl");
		const records = readRecords(runDir);
		expect(records.length).toBeGreaterThan(1);
		expect(readCsv(runDir).map((row) => row.url)).toEqual(records.map((record) => record.url));
		// The sitemap index was parsed: the product sitemap it names and a page that sitemap lists are journalled.
		const frontier = readFileSync(join(runDir, "frontier.jsonl"), "utf8")
			.split("\n")
			.filter((line) => line !== "")
			.map((line) => JSON.parse(line) as { u: string; d: number; p: string | null });
		expect(frontier.some((entry) => entry.u.endsWith("/sitemap-products.xml") && entry.d === -1)).toBe(true);
		expect(frontier.some((entry) => entry.u.endsWith("/product/1") && entry.d === 0 && entry.p === null)).toBe(true);
		const loadedHere = loaded.filter((path) => NOT_FOR_PLAIN_RUN.test(path));
		expect(loadedHere.some((path) => path.startsWith("node_modules/htmlparser2/"))).toBe(true);
		expect(loadedHere.some((path) => path.startsWith("node_modules/csv-stringify/"))).toBe(true);
	});

	it("`--version` prints the version without loading any command", async () => {
		const { code, loaded, output } = await modulesLoadedBy(["--version"]);
		expect(code, output).toBe(0);
		// The package's own version: the one npm installed, the one a bug report should name.
		const { version } = JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "package.json"), "utf8"));
		expect(output.trim()).toBe(version);
		expect(loaded.filter((path) => /^(dist|src)\/cli\/main\.[jt]s$/.test(path))).toHaveLength(1);
		expect(loaded.filter((path) => /^(dist|src)\/(cli\/commands\/(?!index\.)|job\/)/.test(path))).toEqual([]);
	});

	it("under a Node older than scrapejob supports, `run` says so and how to get Node 24, exit 2, before it loads a command or writes anything", async () => {
		const dir = tempDir();
		const job = writeJob(
			dir,
			"job",
			"name: old-node\ndefaults:\n  mode: request\ntargets:\n  - https://example.com/a\n",
		);
		const asNode20 = `Object.defineProperty(process, "version", { value: "v20.20.2" });`;
		const { code, loaded, output } = await modulesLoadedBy(["run", job, "--sandbox"], {}, dir, asNode20);
		expect(output.trim()).toBe(
			"scrapejob needs Node 22.12.0 or later (Node 24 recommended); this is Node v20.20.2. Without root or a version manager: `npm install --prefix ~/.local/node24 node@24`, then `export PATH=~/.local/node24/node_modules/node/bin:$PATH` (docs/guides/deploying.md)",
		);
		expect(code).toBe(2);
		expect(loaded.filter((path) => /^(dist|src)\/cli\/(main|commands\/)/.test(path))).toEqual([]);
		expect(existsSync(join(dir, "output"))).toBe(false);
	});

	it("`--help` lists every command from the commands' summaries, without loading a command's file", async () => {
		const { code, loaded, output } = await modulesLoadedBy(["--help"]);
		expect(code, output).toBe(0);
		for (const name of ["run", "validate", "export", "emulator", "schema"]) expect(output).toContain(`  ${name}`);
		expect(loaded.filter((path) => /^(dist|src)\/cli\/commands\/index\.[jt]s$/.test(path))).toHaveLength(1);
		expect(loaded.filter((path) => /^(dist|src)\/(cli\/commands\/(?!index\.)|job\/|run\/)/.test(path))).toEqual([]);
	});

	it("the program's help from the summaries is the help every command's own registration gives, at any width", async () => {
		const help = async (argv: readonly string[] | undefined, width: number) => {
			const program = await createProgram(createTestContext(ROOT).ctx, argv);
			return program.configureHelp({ helpWidth: width }).helpInformation();
		};
		for (const width of [40, 80, 200]) {
			const full = await help(undefined, width);
			expect(full).toContain("  validate [options] <jobs...>");
			// A difference: update COMMANDS in src/cli/commands/index.ts (arguments, options, description).
			for (const argv of [["--help"], ["help"], [], ["vallidate"]]) expect(await help(argv, width)).toBe(full);
		}
		// A command named, also as `help NAME`, is its own registration.
		const run = await createProgram(createTestContext(ROOT).ctx, ["help", "run"]);
		expect(run.commands.map((command) => command.name())).toEqual(["run"]);
		expect(run.commands[0]!.options.map((option) => option.long)).toContain("--max-credits");
	});
});
