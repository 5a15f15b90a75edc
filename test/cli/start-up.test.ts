import { spawn } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { assertBuilt, BIN } from "../helpers/spawn-cli.js";

/** What a command that sends nothing has no use for: the fetch client, the job store, the run, the report, the emulator. */
const NOT_FOR_VALIDATE =
	/node_modules\/(undici|better-sqlite3|pg|pino|piscina|playwright-core|prom-client|@opentelemetry\/[^/]+|parquetjs[^/]*|hyparquet[^/]*)\/|\/dist\/(run|history|report|emulator|fleet|crawl|browser|api)\//;

beforeAll(() => assertBuilt());

/** Run the built CLI with `args` in a fresh process and list every file module it loaded. */
async function modulesLoadedBy(args: readonly string[]): Promise<{ code: number; loaded: string[]; output: string }> {
	const dir = tempDir();
	const log = join(dir, "modules.json");
	// A hook registered before the CLI is imported sees every module it loads, ESM and CommonJS alike.
	const hook = `
		import { registerHooks } from "node:module";
		import { writeFileSync } from "node:fs";
		const loaded = [];
		registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
		process.on("exit", () => writeFileSync(${JSON.stringify(log)}, JSON.stringify(loaded)));
	`;
	const child = spawn(
		process.execPath,
		["--import", `data:text/javascript,${encodeURIComponent(hook)}`, BIN, ...args],
		{ env: { PATH: process.env.PATH, TMPDIR: process.env.TMPDIR }, stdio: ["ignore", "pipe", "pipe"] },
	);
	let output = "";
	child.stdout.on("data", (chunk: Buffer) => {
		output += chunk.toString();
	});
	child.stderr.on("data", (chunk: Buffer) => {
		output += chunk.toString();
	});
	const code = await new Promise<number>((resolve) => child.on("close", (exit) => resolve(exit ?? -1)));
	const { readFileSync } = await import("node:fs");
	const loaded = (JSON.parse(readFileSync(log, "utf8")) as string[]).filter((url) => url.startsWith("file:"));
	return { code, loaded, output };
}

describe("start-up: a command loads what it uses", () => {
	it("`validate` loads neither the fetch client, the job store, the run nor the emulator", async () => {
		const dir = tempDir();
		const job = writeJob(
			dir,
			"job",
			"name: plain\ndefaults:\n  mode: request\ntargets:\n  - https://example.com/a\n  - https://example.com/b\n",
		);
		const { code, loaded, output } = await modulesLoadedBy(["validate", job]);
		expect(code, output).toBe(0);
		expect(output).toContain("valid");
		// The hook saw the CLI itself load: an empty list would pass for the wrong reason.
		expect(loaded).toContain(pathToFileURL(join(BIN, "..", "commands", "validate.js")).href);
		expect(loaded.filter((url) => NOT_FOR_VALIDATE.test(url))).toEqual([]);
	});

	it("`--help` still lists every command", async () => {
		const { code, output } = await modulesLoadedBy(["--help"]);
		expect(code).toBe(0);
		for (const name of ["run", "validate", "export", "emulator", "schema"]) expect(output).toContain(`  ${name}`);
	});
});
