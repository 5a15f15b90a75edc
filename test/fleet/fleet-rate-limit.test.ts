import { describe, expect, it } from "vitest";
import type { LedgerEntry } from "../../src/emulator/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase as query } from "../helpers/postgres-cluster.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";
import { until } from "../helpers/until.js";

const cluster = useCluster();

/** Most of `entries` on the wire at once. */
function mostAtOnce(entries: readonly LedgerEntry[]): number {
	const edges = entries.flatMap((entry) => [
		{ at: entry.at, step: 1 },
		{ at: entry.finishedAt ?? Number.POSITIVE_INFINITY, step: -1 },
	]);
	edges.sort((a, b) => a.at - b.at || a.step - b.step);
	let now = 0;
	let most = 0;
	for (const edge of edges) {
		now += edge.step;
		most = Math.max(most, now);
	}
	return most;
}

describe("run --fleet: the fleet's limit follows X-RateLimit-Limit", () => {
	it("the service's limit going from 2 to 5 and then to 2 mid-run: the fleet's limit follows it both ways, and in flight with it", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		// A 429 while the workers catch up with a lowered limit pauses the fleet until its reset: a short one.
		const service = await useTestService({ concurrency: 2, latency_ms: 40, reset_seconds: 1 });
		const dir = tempDir("scrapejob-fleet-limit-");
		const site = await startTargetSite((_req, res) => html(res, "a page"));
		const targets = Array.from({ length: 240 }, (_, index) => `  - ${site.origin}/p/${index + 1}`);
		const job = writeJob(
			dir,
			"limitjob",
			["name: limitjob", "defaults: {mode: request}", "targets:", ...targets, ""].join("\n"),
		);
		const workers = Array.from({ length: 4 }, () =>
			spawnCli(["run", job, "--quiet", "--json", "--fleet", url, "--fleet-run", "limit-1"], service.env, dir),
		);
		const records = async () =>
			Number((await query<{ n: string }>(url, "SELECT count(*) AS n FROM scrapejob.records"))[0]?.n ?? 0);
		const limit = async () =>
			(await query<{ limit: number }>(url, "SELECT concurrency_limit AS limit FROM scrapejob.runs"))[0]?.limit;
		await until(async () => (await records()) >= 10);
		expect(await limit()).toBe(2);
		service.emulator.setConcurrency(5);
		await until(async () => (await limit()) === 5);
		// Fetches sent once every worker could have seen the new limit: more than 2 at once.
		const raisedFrom = service.emulator.ledger.requestCount + 8;
		await until(async () => (await records()) >= 120);
		service.emulator.setConcurrency(2);
		await until(async () => (await limit()) === 2);
		const loweredFrom = service.emulator.ledger.requestCount;
		const loweredAt = Date.now();
		for (const outcome of await Promise.all(workers.map((worker) => worker.done)))
			expect(outcome.code, outcome.stderr).toBe(0);
		const realtime = service.emulator.ledger.byEndpoint("realtime");
		const raised = realtime.filter((entry) => entry.seq > raisedFrom && entry.seq <= loweredFrom);
		expect(mostAtOnce(raised)).toBeGreaterThan(2);
		// The fetches sent before every worker read the new limit (a poll, 250 ms; under a loaded machine's
		// CPU, up to a second) hold their slots above it to their end (docs/fleet.md). After them: at most 2
		// at once, and none refused by the service.
		const readBy = loweredAt + 1000;
		const stragglersEnd = Math.max(
			...realtime.filter((entry) => entry.at <= readBy).map((entry) => entry.finishedAt ?? entry.at),
		);
		const settled = Math.max(readBy, stragglersEnd);
		const lowered = realtime.filter((entry) => entry.at > settled);
		expect(lowered.length).toBeGreaterThan(20);
		expect(mostAtOnce(lowered)).toBeLessThanOrEqual(2);
		const refused = service.emulator.ledger.rateLimits.filter(
			(window) => window.cause === "concurrency" && window.at > settled,
		);
		expect(refused).toEqual([]);
	}, 120_000);
});
