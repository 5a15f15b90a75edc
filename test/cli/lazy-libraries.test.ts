import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, BIN } from "../helpers/spawn-cli.js";

const MAIN = join(BIN, "..", "main.js");
/** The libraries only extraction, crawling and job-file regexes need (`src/common/lazy-module.ts`). */
const LAZY = /node_modules\/(htmlparser2|css-select|domutils|tldts|re2js)\//;

let service: TestService;
beforeAll(async () => {
	assertBuilt();
	service = await startTestService();
});
afterAll(async () => service?.close());

/** Run `scrapejob run JOB` in a fresh process and list the lazy libraries it loaded by its end. */
async function librariesLoadedBy(yaml: string): Promise<string[]> {
	const dir = tempDir();
	const job = writeJob(dir, "job", yaml);
	const script = `
		import { createRequire } from "node:module";
		const { main } = await import(${JSON.stringify(MAIN)});
		const code = await main(["run", ${JSON.stringify(job)}, "--out", ${JSON.stringify(join(dir, "out"))}, ], {
			stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd(), exitCode: 0,
			signal: new AbortController().signal,
		});
		const names = Object.keys(createRequire(import.meta.url).cache)
			.map((path) => ${LAZY.toString()}.exec(path)?.[1]).filter(Boolean);
		console.log(JSON.stringify({ code, loaded: [...new Set(names)].sort() }));
		process.exit(0);
	`;
	const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
		env: { PATH: process.env.PATH, ...service.env },
		stdio: ["ignore", "pipe", "pipe"],
	});
	let stdout = "";
	child.stdout.on("data", (chunk: Buffer) => {
		stdout += chunk.toString();
	});
	await new Promise((resolve) => child.on("close", resolve));
	const last = stdout.trim().split("\n").at(-1) ?? "";
	const printed = JSON.parse(last) as { code: number; loaded: string[] };
	expect(printed.code, stdout).toBe(0);
	return printed.loaded;
}

describe("libraries a run loads only when it uses them", () => {
	it("a run that neither extracts nor crawls loads no HTML parser, selector engine or public-suffix list", async () => {
		const loaded = await librariesLoadedBy(
			`name: plain\ndefaults:\n  mode: request\ntargets:\n  - ${service.site.url}/product/1\n  - ${service.site.url}/product/2\n`,
		);
		expect(loaded).toEqual([]);
	});

	it("text block signatures (the default set or the job's own) are searched without an HTML parser", async () => {
		const loaded = await librariesLoadedBy(
			`name: texts\ndefaults:\n  mode: request\nblock_signatures: [Access Denied, {text: captcha}]\ntargets:\n  - ${service.site.url}/product/1\n`,
		);
		expect(loaded).toEqual([]);
	});

	it("a crawl with css fields loads them when it first needs them", async () => {
		const loaded = await librariesLoadedBy(
			[
				"name: crawl",
				"defaults:",
				"  mode: request",
				"targets:",
				`  - ${service.site.url}/product/1`,
				"crawl:",
				"  max_depth: 1",
				"  scope: domain",
				"extract:",
				"  title: { css: h1 }",
				"",
			].join("\n"),
		);
		// Selectors are compiled here (the job is checked before anything is sent); the HTML parser runs
		// in the page workers (src/extract/page-pool.ts), never on the fetch loop's thread.
		expect(loaded).toEqual(["css-select", "domutils", "tldts"]);
	});
});
