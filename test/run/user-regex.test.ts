// biome-ignore-all lint/suspicious/noTemplateCurlyInString: job files spell variables as ${NAME}
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isRunFolderName, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";

/** Forty `a`s and a `!`: a backtracking engine takes ~2^40 steps to fail `^(\w+\s?)+$` on it. */
const EVIL_VALUE = `${"a".repeat(40)}!`;

/** Run `extract` (YAML lines) over two targets whose h1 is the hostile value; killed if it outlives `limitMs`. */
async function runOverHostileValue(extract: string[], limitMs: number) {
	assertBuilt();
	const service = await useTestService();
	const site = await startTargetSite((_req, res) => html(res, `<h1>${EVIL_VALUE}</h1>`));
	const dir = tempDir();
	const out = join(dir, "out");
	const job = writeJob(
		dir,
		"evil",
		[
			"name: evil",
			"defaults:",
			"  mode: request",
			"extract:",
			...extract.map((line) => `  ${line}`),
			"targets:",
			`  - ${site.origin}/one`,
			`  - ${site.origin}/two`,
			"",
		].join("\n"),
	);
	const { child, done } = spawnCli(["run", job, "--out", out], service.env, dir);
	// Reverted to V8's RegExp, the run never returns to its loop: end it here rather than at vitest's timeout.
	const killer = setTimeout(() => child.kill("SIGKILL"), limitMs);
	const result = await done.finally(() => clearTimeout(killer));
	expect(result.signal, "killed: the run outlived its bound").toBeNull();
	const runs = readdirSync(join(out, "evil")).filter(isRunFolderName);
	return {
		result,
		records: readRecords(join(out, "evil", runs[0]!)),
		paid: service.emulator.ledger.byEndpoint("realtime"),
	};
}

describe("job-file regexes run in linear time (docs/guides/extraction.md, Regular expressions)", () => {
	it("a catastrophic data-contract pattern meets a hostile value: the run ends promptly, a record per paid target", async () => {
		const { result, records, paid } = await runOverHostileValue(["name: {css: h1, pattern: '^(\\w+\\s?)+$'}"], 20_000);
		expect(paid).toHaveLength(2);
		expect(records.map((record) => [record.status, record.data?.name])).toEqual([
			["ok", EVIL_VALUE],
			["ok", EVIL_VALUE],
		]);
		// The value ends in `!`: it breaks the pattern, and the contract says so.
		expect(result.stderr).toMatch(/name.*pattern/);
	}, 60_000);

	it("a catastrophic extract regex over the page: read at once, not cut by page_timeout", async () => {
		const { records, paid } = await runOverHostileValue(["again: {regex: '<h1>((\\w+\\s?)+)</h1>'}"], 40_000);
		expect(paid).toHaveLength(2);
		expect(records.map((record) => [record.status, record.data?.again])).toEqual([
			["ok", null],
			["ok", null],
		]);
		for (const record of records) expect(record.duration_ms).toBeLessThan(5_000);
	}, 60_000);

	it("in the sandbox, the service's regexes (map url_pattern, extract_scheme regex) are linear too: a catastrophic one cannot hang the run", async () => {
		assertBuilt();
		// Nested quantifiers a backtracking engine tries ~2^n ways over any URL or page of n characters.
		const jobs = {
			mapped: [
				"sources:",
				"  - map: {domain: '${SCRAPEJOB_DEMO_SITE}', max_urls: 5, url_pattern: '^(([a-z0-9:/._-]+)+)+#$'}",
			],
			schemed: [
				"defaults:",
				"  delivery: json",
				"  extract_scheme: [{label: title, type: content, regex: '^(([\\s\\S]+)+)+#$'}]",
				"targets:",
				"  - ${SCRAPEJOB_DEMO_SITE}/",
			],
		};
		for (const [name, lines] of Object.entries(jobs)) {
			const dir = tempDir();
			writeJob(dir, name, [`name: ${name}`, ...lines, ""].join("\n"));
			const { child, done } = spawnCli(["run", `${name}.yaml`, "--sandbox", "--out", "out", "--quiet"], {}, dir);
			// With V8's RegExp in the in-process emulator the loop never returns: even SIGTERM goes unheard.
			const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
			const result = await done.finally(() => clearTimeout(killer));
			expect(result.signal, `${name}: killed, the run outlived its bound`).toBeNull();
			expect(result.code, `${name}: ${result.stderr}`).toBe(0);
		}
	}, 90_000);

	it("validate refuses lookbehind and backreferences at file:line:col, exit 2", async () => {
		const dir = tempDir();
		writeJob(
			dir,
			"refused",
			[
				"name: refused",
				"extract:",
				"  price: {regex: '(?<=\\$)\\d+'}",
				"  twice: {css: h1, pattern: '^(\\w)\\1$'}",
				"crawl:",
				"  exclude: ['(?!/docs/)']",
				"targets:",
				"  - https://shop.example/a",
				"",
			].join("\n"),
		);
		const result = await runCli(["validate", "refused.yaml"], { cwd: dir });
		expect(result.code).toBe(2);
		expect(result.stderr).toMatch(
			/refused\.yaml:3:18 extract\.price\.regex: regex .* does not compile: lookbehind `\(\?<=…\)` is not supported: job-file regexes use RE2 syntax/,
		);
		expect(result.stderr).toMatch(
			/refused\.yaml:4:29 extract\.twice\.pattern: .* backreference `\\1` is not supported/,
		);
		expect(result.stderr).toMatch(/refused\.yaml:6:13 crawl\.exclude\[0\]: .* negative lookahead/);
	});
});
