import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

const pools = vi.hoisted(() => ({ created: 0, pages: 0 }));

vi.mock("../../src/extract/page-pool.js", async (importOriginal) => {
	const original = await importOriginal<typeof import("../../src/extract/page-pool.js")>();
	return {
		...original,
		createPagePool: async (...args: Parameters<typeof original.createPagePool>) => {
			pools.created += 1;
			const pool = await original.createPagePool(...args);
			return {
				...pool,
				run: (...page: Parameters<typeof pool.run>) => {
					pools.pages += 1;
					return pool.run(...page);
				},
			};
		},
	};
});

async function run(yaml: string, env: NodeJS.ProcessEnv) {
	pools.created = 0;
	pools.pages = 0;
	const dir = tempDir();
	const job = writeJob(dir, "parse", `name: parse\n${yaml}`);
	const result = await runCli(["run", job, "--out", join(dir, "out"), "--quiet"], { env });
	expect(result.code, result.stderr).toBe(0);
	const jobDir = join(dir, "out", "parse");
	return readRecords(join(jobDir, readdirSync(jobDir).find((name) => /^\d/.test(name))!));
}

/** Where pages are parsed for block signatures (docs/behaviour.md, "Useful records"). */
describe("block signatures and the cost of a record", () => {
	it("a job without extraction and with text signatures only never hands a page to the parser", async () => {
		const service = await useTestService();
		const targets = [1, 2, 3].map((n) => `  - ${service.site.url}/product/${n}\n`).join("");
		const defaults = await run(`defaults: {mode: request}\ntargets:\n${targets}`, service.env);
		expect(defaults.map((record) => record.useful)).toEqual([true, true, true]);
		expect(pools).toEqual({ created: 0, pages: 0 });
		const texts = await run(
			`defaults: {mode: request}\nblock_signatures: ["Product 2"]\ntargets:\n${targets}`,
			service.env,
		);
		expect(texts.map((record) => record.useless_reason)).toEqual([null, "block_signature: Product 2", null]);
		expect(pools).toEqual({ created: 0, pages: 0 });
	});

	it("CSS signatures parse each page once, in the page pool, beside no extraction", async () => {
		const service = await useTestService();
		const targets = [1, 2].map((n) => `  - ${service.site.url}/product/${n}\n`).join("");
		const records = await run(
			`defaults: {mode: request}\nblock_signatures: [{css: "h1"}]\ntargets:\n${targets}`,
			service.env,
		);
		expect(records.map((record) => record.useless_reason)).toEqual([
			"block_signature: css h1",
			"block_signature: css h1",
		]);
		expect(pools).toEqual({ created: 1, pages: 2 });
	});
});
