import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readPriorProgress } from "../../src/run/records/resume-state.js";
import { buildSummary, carriedFrom, createRunStatistics } from "../../src/run/records/run-statistics.js";
import { isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { record } from "../helpers/records.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

const run = {
	job: "shop",
	runId: "r",
	resumed: false,
	stopReason: null,
	survey: { total: 6, duplicates: 0, skippedRows: 0 },
	maxCredits: null,
	rateLimitPauses: 0,
	concurrency: 2,
	startedMs: 0,
	finishedMs: 1000,
};

describe("one statistics path: a resumed run counts its earlier records as a fresh run counts them live", () => {
	it("replaying results.jsonl gives the same totals as writing the records live", async () => {
		const records = [
			record("a", { duration_ms: 120 }),
			record("b", { attempts: 3, duration_ms: 900, mode_requested: "browser", credits_used: 10 }),
			record("c", { status: "failed", error: "http_503", attempts: 4, credits_used: 0, duration_ms: 40 }),
			record("d", { task_id: "t-1", duration_ms: 3000 }),
			record("e", { status: "failed", error: "task_timeout", task_id: "t-2", credits_used: 0 }),
		];
		const live = createRunStatistics();
		for (const each of records) live.recordFinished(each);
		const path = join(tempDir(), "results.jsonl");
		writeFileSync(path, records.map((each) => `${JSON.stringify(each)}\n`).join(""));
		const prior = await readPriorProgress(path);

		const { session: _live, ...fresh } = buildSummary(live, run);
		const { session, ...replayed } = buildSummary(prior.statistics, run);
		// Retries, credits by mode, errors, tasks and latency percentiles: all equal.
		expect(replayed).toEqual({ ...fresh, tasks: { ...fresh.tasks, created: 2 } });
		expect(replayed.retries).toBe(2 + 3);
		expect(replayed.latency_ms.p95).toBeGreaterThan(2000);
		// None of it is this session's.
		expect(session).toMatchObject({ done: 0, credits_used: 0, retries: 0 });
	});
});

/** A job of six request targets, one at a time, so the budget cuts it after the third. */
function jobYaml(site: string): string {
	return [
		"name: shop",
		"concurrency: 1",
		"max_credits: 6",
		"defaults:",
		"  mode: request",
		"retry:",
		"  attempts: 3",
		"  backoff_ms: 5",
		"  max_backoff_ms: 10",
		"targets:",
		...Array.from({ length: 6 }, (_, index) => `  - ${site}/product/${index + 1}`),
		"",
	].join("\n");
}

describe("a resumed run's summary: the run's figures at the top, this session's under `session`", () => {
	it("pauses, retries, credits and wall time add up over sessions; `session` holds the last one's share", async () => {
		service = await startTestService({
			concurrency: 2,
			reset_seconds: 1,
			faults: [
				// Session 1: a 429 pause and a retried 5xx; session 2: one more 429 pause.
				{ kind: "rate_limit", match: "/\\/product\\/2$/", times: 1 },
				{ kind: "bad_gateway", match: "/\\/product\\/3$/", times: 1 },
				{ kind: "rate_limit", match: "/\\/product\\/5$/", times: 1 },
			],
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", jobYaml(service.site.url));

		const first = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(first.code).toBe(1);
		const runDir = join(out, "shop", readdirSync(join(out, "shop")).find(isRunFolderName)!);
		const one = readSummary(runDir);
		expect(one).toMatchObject({
			stopped_reason: "budget_exhausted",
			targets: { done: 3 },
			credits: { used: 6 },
			retries: 1,
			rate_limit_pauses: 1,
			session: { done: 3, credits_used: 6, retries: 1, rate_limit_pauses: 1 },
		});
		expect(one.wall_ms).toBe(one.session?.wall_ms);

		const second = await runCli(["run", job, "--out", out, "--quiet", "--resume", "--max-credits", "12"], {
			env: service.env,
		});
		expect(second.code).toBe(0);
		const two = readSummary(runDir);
		expect(readRecords(runDir)).toHaveLength(6);
		expect(two).toMatchObject({
			complete: true,
			targets: { done: 6 },
			credits: { used: 12 },
			retries: 1,
			rate_limit_pauses: 2,
			started_at: one.started_at,
			session: { done: 3, credits_used: 6, retries: 0, rate_limit_pauses: 1 },
		});
		expect(two.session?.started_at).not.toBe(one.started_at);
		expect(two.wall_ms).toBe(one.wall_ms + two.session!.wall_ms);
		expect(two.throughput_per_s).toBeCloseTo((6 * 1000) / two.wall_ms, 5);
		expect(two.session?.throughput_per_s).toBeCloseTo((3 * 1000) / two.session!.wall_ms, 5);
	}, 20_000);
});

describe("what a resume carries: the last summary.json, or the journal's figures line when it is newer", () => {
	const summary = {
		finished_at: "2026-01-01T00:10:00.000Z",
		wall_ms: 60_000,
		rate_limit_pauses: 1,
		abandoned: 2,
		credits: { remaining: 500 },
	};
	const line = (at: string) => ({
		atMs: Date.parse(at),
		figures: { wallMs: 75_000, rateLimitPauses: 3, abandoned: 2, creditsRemaining: 480 },
	});
	const fromSummary = { wallMs: 60_000, rateLimitPauses: 1, abandoned: 2, creditsRemaining: 500 };

	it("a line of a later, killed session wins over the summary of the one before", () => {
		expect(carriedFrom(summary, 0, line("2026-01-01T00:12:00.000Z"))).toMatchObject(line("x").figures);
		// No summary at all (the run's first process was killed): the line.
		expect(carriedFrom(null, 0, line("2026-01-01T00:12:00.000Z"))).toMatchObject(line("x").figures);
	});

	it("the summary its own session wrote after its last line wins; a folder of an older version has no line", () => {
		expect(carriedFrom(summary, 0, line("2026-01-01T00:09:58.000Z"))).toMatchObject(fromSummary);
		expect(carriedFrom(summary, 0, null)).toMatchObject(fromSummary);
		expect(carriedFrom(null, 0, null)).toMatchObject({ wallMs: 0, rateLimitPauses: 0, creditsRemaining: null });
	});
});
