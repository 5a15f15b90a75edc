import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_BLOCK_SIGNATURES } from "../../src/extract/index.js";
import { loadJob } from "../../src/job/index.js";
import { loadYaml, makeTempDir, writeFiles } from "./helpers.js";

const U = "https://shop.example";

describe("the normalized Job", () => {
	it("fills every default", async () => {
		const dir = await makeTempDir();
		await writeFiles(dir, { "jobs/my shop.yaml": `targets: [${U}/a]\n` });
		const { job, warnings, counts } = await loadJob("jobs/my shop.yaml", { cwd: dir, env: {} });
		expect(warnings).toEqual([]);
		expect(counts?.targets).toBe(1);
		const { fingerprint, targets, ...rest } = job;
		expect(rest).toEqual({
			file: join(dir, "jobs", "my shop.yaml"),
			displayFile: "jobs/my shop.yaml",
			dir: join(dir, "jobs"),
			name: "my-shop",
			concurrency: "auto",
			maxCredits: null,
			defaults: {},
			browserSession: null,
			// No `block_signatures:`: the default set.
			blockSignatures: { text: DEFAULT_BLOCK_SIGNATURES.map((entry) => entry.text), css: [] },
			sources: [],
			output: { formats: ["jsonl", "csv"], content: "files" },
			retry: { attempts: 5, backoffMs: 1000, maxBackoffMs: 60_000 },
			onBadRow: "fail",
			taskTimeoutMs: 600_000,
			outageTimeoutMs: 600_000,
			pageTimeoutMs: 10_000,
			maxBodyBytes: 50 * 1024 * 1024,
			freshnessMs: 0,
			notify: null,
			// No `breaker:`: the default per-domain breaker.
			breaker: { window: 10, trip: 8, coolDownMs: 300_000, by: "domain" },
		});
		expect(fingerprint).toMatch(/^[0-9a-f]{64}$/);
		expect(targets).toEqual([
			{
				id: expect.stringMatching(/^[0-9a-f]{16}$/),
				url: `${U}/a`,
				params: { url: `${U}/a` },
				origin: { file: "jobs/my shop.yaml", line: 1, col: 11 },
			},
		]);
	});

	it("maps every key as written", async () => {
		const { loaded } = await loadYaml(
			[
				"name: shop.prices_2",
				"concurrency: 8",
				"max_credits: 5000",
				"defaults:",
				"  mode: browser",
				"  proxy_country: DE",
				"targets:",
				`  - url: ${U}/a`,
				"    id: a",
				"    wait_seconds: 2",
				"sources:",
				"  - file: lists/u.csv",
				"    column: link",
				"    delimiter: ';'",
				"    mode: request",
				"  - lists/more.txt",
				"output:",
				"  formats: [csv, csv]",
				"  content: none",
				"retry:",
				"  attempts: 2",
				"  backoff_ms: 10",
				"  max_backoff_ms: 20",
				"on_bad_row: skip",
				"task_timeout_ms: 30000",
			].join("\n"),
			{ files: { "lists/u.csv": `link\n${U}/b\n`, "lists/more.txt": `${U}/c\n` } },
		);
		const job = loaded!.job;
		expect(job.name).toBe("shop.prices_2");
		expect(job.concurrency).toBe(8);
		expect(job.maxCredits).toBe(5000);
		expect(job.defaults).toEqual({ mode: "browser", proxy_country: "DE" });
		expect(job.targets[0]).toMatchObject({
			id: "a",
			params: { url: `${U}/a`, mode: "browser", proxy_country: "DE", wait_seconds: 2 },
		});
		expect(job.sources).toEqual([
			{
				kind: "csv",
				column: "link",
				delimiter: ";",
				path: join(job.dir, "lists", "u.csv"),
				displayPath: "lists/u.csv",
				options: { mode: "request" },
				origin: { file: "job.yaml", line: 12, col: 11 },
			},
			{
				kind: "text",
				path: join(job.dir, "lists", "more.txt"),
				displayPath: "lists/more.txt",
				options: {},
				origin: { file: "job.yaml", line: 16, col: 5 },
			},
		]);
		expect(job.output).toEqual({ formats: ["csv"], content: "none" });
		expect(job.retry).toEqual({ attempts: 2, backoffMs: 10, maxBackoffMs: 20 });
		expect(job.onBadRow).toBe("skip");
		expect(job.taskTimeoutMs).toBe(30_000);
	});

	it("the fingerprint follows the targets and options, not run settings", async () => {
		const fingerprint = async (yaml: string) => (await loadYaml(yaml)).loaded!.job.fingerprint;
		const base = await fingerprint(`targets: [${U}/a]\n`);
		expect(await fingerprint(`targets: [${U}/a]\n`)).toBe(base);
		expect(await fingerprint(`concurrency: 3\nretry: {attempts: 2}\nname: other\ntargets: [${U}/a]\n`)).toBe(base);
		expect(await fingerprint(`targets: [${U}/b]\n`)).not.toBe(base);
		expect(await fingerprint(`defaults: {mode: browser}\ntargets: [${U}/a]\n`)).not.toBe(base);
	});
});
