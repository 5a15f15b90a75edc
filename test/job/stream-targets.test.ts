import { appendFileSync } from "node:fs";
import { appendFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
	countTargets,
	createEmptyCounts,
	type JobProblem,
	JobValidationError,
	loadJob,
	streamTargets,
	type Target,
} from "../../src/job/index.js";
import { createTargetKey, identityOptionsJson } from "../../src/job/target-id.js";
import { makeTempDir, writeFiles } from "./helpers.js";

const U = "https://shop.example";

async function setup(yaml: string, files: Record<string, string> = {}, checkSources = true) {
	const dir = await makeTempDir();
	await writeFiles(dir, { "job.yaml": yaml, ...files });
	const loaded = await loadJob("job.yaml", { cwd: dir, env: {}, checkSources });
	return { dir, ...loaded };
}

async function collect(iterable: AsyncIterable<Target>): Promise<Target[]> {
	const targets: Target[] = [];
	for await (const target of iterable) targets.push(target);
	return targets;
}

describe("streamTargets", () => {
	it("yields inline targets then each source's rows, in order, with merged params and origins", async () => {
		const { job } = await setup(
			[
				"defaults:",
				"  mode: request",
				"  proxy_country: US",
				"targets:",
				`  - ${U}/1`,
				`  - url: ${U}/2`,
				"    id: second",
				"    mode: browser",
				"sources:",
				"  - file: a.csv",
				"    column: url",
				"    proxy_country: DE",
				"  - b.txt",
			].join("\n"),
			{ "a.csv": `url\n${U}/3\n${U}/4\n`, "b.txt": `# list\n${U}/5\n` },
		);
		const targets = await collect(streamTargets(job));
		expect(
			targets.map((t) => [t.url, t.params.mode, t.params.proxy_country, `${t.origin.file}:${t.origin.line}`]),
		).toEqual([
			[`${U}/1`, "request", "US", "job.yaml:5"],
			[`${U}/2`, "browser", "US", "job.yaml:6"],
			[`${U}/3`, "request", "DE", "a.csv:2"],
			[`${U}/4`, "request", "DE", "a.csv:3"],
			[`${U}/5`, "request", "US", "b.txt:2"],
		]);
		expect(targets[1]?.id).toBe("second");
		expect(targets[0]?.params).toEqual({ mode: "request", proxy_country: "US", url: `${U}/1` });
	});

	it("ids: given, or the first 16 hex of sha256(url + newline + canonical effective options)", async () => {
		const { job } = await setup(`defaults:\n  mode: request\ntargets:\n  - ${U}/1\n`);
		const [target] = await collect(streamTargets(job));
		expect(target?.id).toMatch(/^[0-9a-f]{16}$/);
		expect(target?.id).toBe(createTargetKey(`${U}/1`, '{"mode":"request"}').id);
		// Stable across runs and machines: a known value (printf 'https://a.example/\n{"mode":"auto"}' | sha256sum).
		expect(createTargetKey("https://a.example/", identityOptionsJson({})).id).toBe("c4c18c2e8404b663");
	});

	it("drops duplicates (same page and effective options) with a warning naming both rows", async () => {
		const problems: JobProblem[] = [];
		const { job } = await setup(
			[
				"defaults:",
				"  mode: auto",
				"targets:",
				`  - ${U}/1`,
				`  - url: ${U}/1`,
				"    mode: auto",
				`  - url: ${U}/1`,
				"    mode: browser",
				"sources:",
				"  - a.txt",
			].join("\n"),
			{ "a.txt": `${U}/1\n${U}/2\n${U}/2\n` },
		);
		const targets = await collect(streamTargets(job, { onProblem: (p) => problems.push(p) }));
		expect(targets.map((t) => `${t.url} ${t.params.mode}`)).toEqual([`${U}/1 auto`, `${U}/1 browser`, `${U}/2 auto`]);
		const first = targets[0]?.id;
		const second = targets[2]?.id;
		expect(problems.map((p) => `${p.severity} ${p.file}:${p.line}:${p.col} ${p.message}`)).toEqual([
			`warning job.yaml:5:5 duplicate target ${U}/1: the same page and options as target ${first} at job.yaml:4; it runs once`,
			`warning a.txt:1:1 duplicate target ${U}/1: the same page and options as target ${first} at job.yaml:4; it runs once`,
			`warning a.txt:3:1 duplicate target ${U}/2: the same page and options as target ${second} at a.txt:2; it runs once`,
		]);
	});

	it("one page spelled four ways is one target: the first spelling is fetched, the others named as its duplicates", async () => {
		const problems: JobProblem[] = [];
		const spellings = [
			"https://x.example/p#frag",
			"HTTPS://X.EXAMPLE/p",
			"https://x.example:443/p",
			"https://x.example/p",
		];
		// http is another scheme, so another page (RFC 3986 §6.2.2 folds a scheme's case only).
		const { job } = await setup("sources:\n  - a.txt\n", {
			"a.txt": `${[...spellings, "http://x.example/p"].join("\n")}\n`,
		});
		const targets = await collect(streamTargets(job, { onProblem: (p) => problems.push(p) }));
		expect(targets.map((t) => t.url)).toEqual(["https://x.example/p#frag", "http://x.example/p"]);
		// Its id is the identity's: the same as the plain spelling would get.
		expect(targets[0]?.id).toBe(createTargetKey("https://x.example/p", identityOptionsJson({})).id);
		expect(problems.map((p) => `${p.file}:${p.line} ${p.message}`)).toEqual(
			spellings
				.slice(1)
				.map(
					(url, index) =>
						`a.txt:${index + 2} duplicate target ${url}: the same page and options as target ${targets[0]?.id} at a.txt:1 (https://x.example/p#frag); it runs once`,
				),
		);
	});

	it("is lazy: the first target arrives before a big source is read", async () => {
		const lines = Array.from({ length: 200_000 }, (_, i) => `${U}/p/${i}`).join("\n");
		const { job } = await setup("sources:\n  - big.txt\n", { "big.txt": `${lines}\n` }, false);
		const counts = createEmptyCounts();
		const iterator = streamTargets(job, { counts })[Symbol.asyncIterator]();
		const first = await iterator.next();
		expect(first.value?.url).toBe(`${U}/p/0`);
		// One read chunk (64 KiB) holds about 2,500 of these lines: far fewer than the file's 200,000.
		expect(counts.targets).toBeLessThan(5000);
		await iterator.return?.(undefined);
	});

	it("fills in counts as it goes when given them", async () => {
		const { job } = await setup(`targets:\n  - ${U}/1\n  - url: ${U}/2\n    mode: browser\n  - ${U}/1\n`);
		const counts = createEmptyCounts();
		await collect(streamTargets(job, { counts }));
		expect(counts).toEqual({
			targets: 2,
			duplicates: 1,
			skippedRows: 0,
			deselected: 0,
			creditRange: { min: 7, max: 11 },
			// auto's worst case, 6: the dearest single target
			dearest: 6,
			byMode: { request: 0, browser: 1, auto: 1, adaptive: 0, browser_session: 0 },
			creditRangeByMode: {
				request: { min: 0, max: 0 },
				browser: { min: 5, max: 5 },
				auto: { min: 2, max: 6 },
				adaptive: { min: 0, max: 0 },
				browser_session: { min: 0, max: 0 },
			},
		});
	});

	it("throws JobValidationError when a source changed since validation (fail policy)", async () => {
		const { job, dir } = await setup("sources:\n  - a.txt\n", { "a.txt": `${U}/1\n` });
		await appendFile(join(dir, "a.txt"), "nope\n");
		const problems: JobProblem[] = [];
		const seen: string[] = [];
		const error = await (async () => {
			for await (const target of streamTargets(job, { onProblem: (p) => problems.push(p) })) seen.push(target.url);
		})().catch((e: unknown) => e);
		expect(seen).toEqual([`${U}/1`]);
		expect(error).toBeInstanceOf(JobValidationError);
		expect(problems.map((p) => `${p.file}:${p.line}:${p.col} ${p.severity}`)).toEqual(["a.txt:2:1 error"]);
	});

	it("skips and reports bad rows under on_bad_row: skip", async () => {
		const { job, dir } = await setup("on_bad_row: skip\nsources:\n  - a.txt\n", { "a.txt": `${U}/1\n` });
		await writeFile(join(dir, "a.txt"), `${U}/1\nnope\n${U}/2\n`);
		const problems: JobProblem[] = [];
		const targets = await collect(streamTargets(job, { onProblem: (p) => problems.push(p) }));
		expect(targets.map((t) => t.url)).toEqual([`${U}/1`, `${U}/2`]);
		expect(problems.map((p) => `${p.file}:${p.line} ${p.severity}`)).toEqual(["a.txt:2 warning"]);
	});
});

describe("countTargets", () => {
	it("counts targets, duplicates, skipped rows, modes and the credit range", async () => {
		const { job } = await setup(
			[
				"on_bad_row: skip",
				"targets:",
				`  - url: ${U}/r`,
				"    mode: request",
				`  - url: ${U}/dc`,
				"    mode: request",
				"    proxy_type: datacenter",
				`  - url: ${U}/b`,
				"    mode: browser",
				"sources:",
				"  - file: a.txt",
				"    mode: auto",
			].join("\n"),
			{ "a.txt": `${U}/a1\n${U}/a2\n${U}/a1\nbad\n` },
		);
		const { witness, ...counts } = await countTargets(job);
		expect(witness?.repeated.size).toBe(1);
		expect(counts).toEqual({
			targets: 5,
			duplicates: 1,
			skippedRows: 1,
			deselected: 0,
			// request 2 + datacenter 1 + browser 5 + auto 2×(2…6)
			creditRange: { min: 12, max: 20 },
			dearest: 6,
			byMode: { request: 2, browser: 1, auto: 2, adaptive: 0, browser_session: 0 },
			creditRangeByMode: {
				request: { min: 3, max: 3 },
				browser: { min: 5, max: 5 },
				auto: { min: 4, max: 12 },
				adaptive: { min: 0, max: 0 },
				browser_session: { min: 0, max: 0 },
			},
		});
	});

	it("a selection (freshness, --retry-failed) is asked by id alone: counting builds no target per row, and the run's stream the same targets", async () => {
		const rows = Array.from({ length: 1000 }, (_, n) => `${U}/p/${n}`);
		const { job } = await setup("sources:\n  - a.txt\n", { "a.txt": `${rows.join("\n")}\n` });
		const asked: object[] = [];
		const select = (target: { id: string }) => {
			asked.push(target);
			return Number.parseInt(target.id.slice(-1), 16) % 2 === 0;
		};
		const counts = await countTargets({ ...job, select });
		// What the selection is handed while counting is the id, nothing built around it (params, origin).
		expect(asked).toHaveLength(1000);
		expect(asked.every((target) => Object.keys(target).join() === "id")).toBe(true);
		const kept = await collect(streamTargets({ ...job, select }));
		expect(kept.length).toBeGreaterThan(300);
		expect(counts.targets).toBe(kept.length);
		expect(counts.deselected).toBe(1000 - kept.length);
		expect(kept.every((target) => Number.parseInt(target.id.slice(-1), 16) % 2 === 0)).toBe(true);
		expect(kept[0]?.params.url).toBe(kept[0]?.url);
	});

	it("throws with every problem when a source has errors", async () => {
		const { job, dir } = await setup("sources:\n  - a.txt\n", { "a.txt": `${U}/1\n` });
		await writeFile(join(dir, "a.txt"), "bad1\nbad2\n");
		const error = await countTargets(job).catch((e: unknown) => e);
		expect(error).toBeInstanceOf(JobValidationError);
		expect((error as JobValidationError).problems.map((p) => `${p.file}:${p.line}`)).toEqual(["a.txt:1", "a.txt:2"]);
	});
});

describe("a run's feed under the validation pass's witness", () => {
	const rows = (from: number, to: number) => Array.from({ length: to - from }, (_, n) => `${U}/p/${from + n}`);

	it("drops the repeated rows the validation pass found, and no other, without a key set of every row", async () => {
		const list = [...rows(0, 300), `${U}/p/7`, `https://SHOP.EXAMPLE:443/p/8#top`, `${U}/p/7`, ...rows(300, 400)];
		const { job, counts } = await setup("sources:\n  - a.txt\n", { "a.txt": `${list.join("\n")}\n` });
		const witness = counts?.witness;
		expect(witness?.repeated.size).toBe(2);
		const viaWitness = await collect(streamTargets(job, { witness: witness! }));
		const viaKeys = await collect(streamTargets(job));
		expect(viaWitness.map((target) => target.url)).toEqual(viaKeys.map((target) => target.url));
		expect(viaWitness).toHaveLength(400);
		expect(new Set(viaWitness.map((target) => target.id)).size).toBe(400);
	});

	it("a source written after validation ends the stream before the rows it was not validated with", async () => {
		// Rows read in chunks: the change lands while the feed is part-way through the file.
		const list = rows(0, 20_000);
		const { job, dir, counts } = await setup("sources:\n  - a.txt\n", { "a.txt": `${list.join("\n")}\n` });
		const witness = counts!.witness!;
		const seen: string[] = [];
		const problems: JobProblem[] = [];
		const error = await (async () => {
			for await (const target of streamTargets(job, { witness, onProblem: (p) => problems.push(p) })) {
				seen.push(target.url);
				// The first row again at the end: without the witness's check it would be a second target of one id.
				if (seen.length === 1) await appendFile(join(dir, "a.txt"), `${U}/p/0\n`);
			}
		})().catch((e: unknown) => e);
		expect(error).toBeInstanceOf(JobValidationError);
		expect(seen.length).toBeLessThan(20_000);
		expect(new Set(seen).size).toBe(seen.length);
		expect(problems).toHaveLength(1);
		expect(problems[0]?.message).toContain('source "a.txt" changed after the run validated it');
		expect(problems[0]?.file).toBe("a.txt");
		expect(problems[0]?.line).toBeGreaterThan(1);
	});

	it("a source replaced between the passes (renamed over, same bytes) is not the one validated", async () => {
		const { job, dir, counts } = await setup("sources:\n  - a.txt\n", { "a.txt": `${rows(0, 10).join("\n")}\n` });
		await writeFile(join(dir, "b.txt"), `${rows(0, 10).join("\n")}\n`);
		await rename(join(dir, "b.txt"), join(dir, "a.txt"));
		const error = await collect(streamTargets(job, { witness: counts!.witness! })).catch((e: unknown) => e);
		expect(error).toBeInstanceOf(JobValidationError);
	});

	it("no witness when a source changed while the validation pass read it, or repeats too many rows to list", async () => {
		const { job, dir } = await setup("sources:\n  - a.txt\n", { "a.txt": `${rows(0, 20_000).join("\n")}\n` });
		let appended = false;
		const changing = {
			...job,
			select: () => {
				if (!appended) {
					appended = true;
					appendFileSync(join(dir, "a.txt"), `${U}/p/0\n`);
				}
				return true;
			},
		};
		expect((await countTargets(changing)).witness).toBeNull();
		await writeFile(join(dir, "a.txt"), `${[...rows(0, 70_000), ...rows(0, 70_000)].join("\n")}\n`);
		const repeats = await countTargets(job);
		expect(repeats.duplicates).toBe(70_000);
		expect(repeats.witness).toBeNull();
		expect((await countTargets({ ...job, sources: job.sources })).targets).toBe(70_000);
	});
});
