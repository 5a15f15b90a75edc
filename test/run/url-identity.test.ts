import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createTargetKey, identityOptionsJson } from "../../src/job/index.js";
import { isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

const realtime = (service: Awaited<ReturnType<typeof useTestService>>) =>
	service.emulator.ledger.entries.filter((entry) => entry.endpoint === "realtime");

function onlyRunDir(jobDir: string): string {
	const runs = readdirSync(jobDir).filter(isRunFolderName);
	expect(runs).toHaveLength(1);
	return join(jobDir, runs[0]!);
}

describe("a URL list dedupes by the page, not the spelling", () => {
	it("one page written five ways: one fetch, one record, a warning naming each repeated row and the first", async () => {
		const service = await useTestService({ concurrency: 4 });
		const { hostname, port } = new URL(service.site.url);
		const spellings = [
			`http://${hostname}:${port}/product/1?b=1&a=2#reviews`,
			`HTTP://${hostname.toUpperCase()}:${port}/product/1?b=1&a=2`,
			`http://${hostname}:${port}/shop/../product/./1?b=1&a=2`,
			`http://${hostname}:${port}/product/%31?a=2&b=1`,
			`http://${hostname}:${port}/product/1?a=2&b=1`,
		];
		const dir = tempDir();
		writeFileSync(join(dir, "urls.txt"), `${spellings.join("\n")}\n`);
		const job = writeJob(dir, "shop", "name: shop\ndefaults:\n  mode: request\nsources:\n  - urls.txt\n");
		const out = join(dir, "out");
		const result = await runCli(["run", job, "--out", out], { env: service.env, cwd: dir });
		expect(result.code, result.stderr).toBe(0);
		expect(realtime(service)).toHaveLength(1);
		const records = readRecords(onlyRunDir(join(out, "shop")));
		expect(records.map((record) => record.url)).toEqual([spellings[0]]);
		for (const line of [2, 3, 4, 5]) {
			expect(result.stderr).toMatch(
				new RegExp(
					`urls\\.txt:${line}:1 warning: duplicate target .*: the same page and options as target ${records[0]!.id} at urls\\.txt:1 `,
				),
			);
		}
	});
});

describe("freshness knows a page by its identity", () => {
	it("a page fetched as written one way is fresh when listed the next time another way", async () => {
		const service = await useTestService({ concurrency: 2 });
		const { hostname, port } = new URL(service.site.url);
		const dir = tempDir();
		const job = writeJob(dir, "shop", "name: shop\ndefaults:\n  mode: request\nsources:\n  - urls.txt\n");
		const out = join(dir, "out");
		writeFileSync(join(dir, "urls.txt"), `${service.site.url}/product/1?a=1&b=2\n${service.site.url}/product/2\n`);
		const first = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env, cwd: dir });
		expect(first.code, first.stderr).toBe(0);
		expect(realtime(service)).toHaveLength(2);
		writeFileSync(
			join(dir, "urls.txt"),
			`HTTP://${hostname.toUpperCase()}:${port}/product/1?b=2&a=1#top\n${service.site.url}/product/3\n`,
		);
		const second = await runCli(["run", job, "--out", out, "--quiet", "--freshness", "1h"], {
			env: service.env,
			cwd: dir,
		});
		expect(second.code, second.stderr).toBe(0);
		expect(
			realtime(service)
				.map((entry) => new URL(entry.url ?? "").pathname)
				.sort(),
		).toEqual(["/product/1", "/product/2", "/product/3"]);
	});
});

describe("--resume of a run whose ids were derived from URLs as written", () => {
	it("keeps that run's ids: what it fetched is not fetched again, and every page gets one record", async () => {
		const service = await useTestService({ concurrency: 1 });
		// Spellings whose identity differs from the text: their ids changed when ids came from the identity.
		const urls = Array.from({ length: 6 }, (_, index) => `${service.site.url}/product/${index + 1}#top`);
		const dir = tempDir();
		writeFileSync(join(dir, "urls.txt"), `${urls.join("\n")}\n`);
		const yaml =
			"name: shop\nconcurrency: 1\ndefaults:\n  mode: request\n  proxy_type: datacenter\noutput:\n  formats: [jsonl]\nsources:\n  - urls.txt\n";
		const job = writeJob(dir, "shop", yaml);
		const out = join(dir, "out");
		const first = await runCli(["run", job, "--out", out, "--quiet", "--max-credits", "3"], {
			env: service.env,
			cwd: dir,
		});
		expect(first.code, first.stderr).toBe(1);
		const runDir = onlyRunDir(join(out, "shop"));
		const before = readRecords(runDir);
		expect(before).toHaveLength(3);

		// The folder as the older version left it: ids from the URLs as written, no `target_ids` in run.json.
		const optionsJson = identityOptionsJson({ mode: "request", proxy_type: "datacenter" });
		const literal = new Map(before.map((record) => [record.id, createTargetKey(record.url, optionsJson).id]));
		for (const [now, old] of literal) expect(old).not.toBe(now);
		for (const file of ["results.jsonl", "journal.jsonl"]) {
			let text = readFileSync(join(runDir, file), "utf8");
			for (const [now, old] of literal) text = text.replaceAll(now, old);
			writeFileSync(join(runDir, file), text);
		}
		const meta = JSON.parse(readFileSync(join(runDir, "run.json"), "utf8")) as Record<string, unknown>;
		expect(meta.target_ids).toBe("url_identity");
		delete meta.target_ids;
		writeFileSync(join(runDir, "run.json"), JSON.stringify(meta));
		rmSync(join(out, "shop", "history.sqlite"), { force: true });
		const fetchedBefore = realtime(service).length;

		const resumed = await runCli(["run", job, "--out", out, "--quiet", "--resume", "--max-credits", "100"], {
			env: service.env,
			cwd: dir,
		});
		expect(resumed.code, resumed.stderr).toBe(0);
		expect(realtime(service).length - fetchedBefore).toBe(3);
		const records = readRecords(runDir);
		expect(records.map((record) => record.url).sort()).toEqual([...urls].sort());
		expect(new Set(records.map((record) => record.id)).size).toBe(6);
		for (const old of literal.values()) expect(records.map((record) => record.id)).toContain(old);
		expect(readSummary(runDir).complete).toBe(true);
	});
});
