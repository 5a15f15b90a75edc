import { describe, expect, it } from "vitest";
import { startDemoSite } from "../../src/emulator/index.js";
import { BREAKER_CLIMB_SCENARIO, breakerClimbJob } from "../helpers/breaker-climb.js";
import { expectFleetRunDone } from "../helpers/fleet.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase } from "../helpers/postgres-cluster.js";
import type { TestService } from "../helpers/service.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

const cluster = useCluster();

/**
 * The fleet's breaker (docs/behaviour.md, "Breakers"): one row per domain shared by every worker. The demo
 * site reached as `localhost` serves datacenter requests a block page (charged, useless); as `127.0.0.1` it
 * is a good domain.
 */
const BLOCKED = 24;
const GOOD = 6;

function breakerJob(service: TestService): { dir: string; file: string } {
	const port = new URL(service.site.url).port;
	const lines: string[] = [];
	for (let index = 1; index <= BLOCKED; index++) {
		lines.push(`  - http://localhost:${port}/product/${index}`);
		if (index <= GOOD) lines.push(`  - http://127.0.0.1:${port}/product/${index}`);
	}
	const dir = tempDir("scrapejob-fleet-breaker-");
	const file = writeJob(
		dir,
		"fleetbreaker",
		`name: fleetbreaker\nconcurrency: 1\ndefaults: {mode: request, proxy_type: datacenter}\nretry: {attempts: 1, backoff_ms: 5, max_backoff_ms: 10}\nbreaker: {window: 10, trip: 8, cool_down: 1h}\ntargets:\n${lines.join("\n")}\n`,
	);
	return { dir, file };
}

/** Fetches the emulator was sent, and credits it charged, for one host's targets. */
function spentOn(service: TestService, host: string) {
	const entries = service.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.url?.includes(`//${host}:`));
	return { credits: entries.reduce((sum, entry) => sum + entry.creditsCharged, 0), fetches: entries.length };
}

function states(url: string) {
	return queryDatabase<{ state: string; n: number }>(
		url,
		"SELECT state, count(*)::int AS n FROM scrapejob.targets GROUP BY state ORDER BY state",
	);
}

function lastJson(stdout: string) {
	return JSON.parse(stdout.trim().split("\n").at(-1)!);
}

describe("run --fleet with a breaker", () => {
	it("a domain going wrong on one worker parks its targets on every worker; a probe after the cool-down re-opens it or closes it, and the parked targets are then fetched once each", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const blocking = await useTestService({ block_datacenter: ["//localhost:"], concurrency: 2 });
		const { dir, file } = breakerJob(blocking);
		const worker = (service: TestService) =>
			spawnCli(["run", file, "--quiet", "--json", "--fleet", url, "--fleet-run", "nightly"], service.env, dir);

		const first = await Promise.all([worker(blocking).done, worker(blocking).done]);
		for (const outcome of first) expect(outcome.code, outcome.stderr).toBe(6);
		// At most one fetch more than `trip` (the other worker's, admitted just before the breaker opened).
		const blocked = spentOn(blocking, "localhost");
		expect(blocked.fetches).toBeGreaterThanOrEqual(8);
		expect(blocked.fetches).toBeLessThanOrEqual(9);
		expect(spentOn(blocking, "127.0.0.1").fetches).toBe(GOOD);
		const parked = BLOCKED - blocked.fetches;
		expect(await states(url)).toEqual([
			{ state: "done", n: GOOD + blocked.fetches },
			{ state: "parked", n: parked },
		]);
		// Each worker's summary names the fleet's breaker: what it parked and what that saved.
		for (const outcome of first) {
			const summary = lastJson(outcome.stdout);
			expect(summary.complete).toBe(false);
			expect(summary.fleet.targets.parked).toBe(parked);
			expect(summary.breakers).toEqual([
				{
					domain: "localhost",
					reason: expect.stringMatching(
						/^8 of the last \d+ charged fetches were useless or failed \(last: block_signature/,
					),
					opened_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
					parked,
					credits_saved: parked,
				},
			]);
		}
		const status = await spawnCli(["fleet", "status", file, "--json", "--fleet", url], {}, dir).done;
		expect(status.code, status.stderr).toBe(0);
		const [run] = JSON.parse(status.stdout);
		expect(run.targets.parked).toBe(parked);
		expect(run.breakers).toMatchObject([{ domain: "localhost", state: "open", parked }]);

		// Within the cool-down a worker that joins has nothing to do: it sends nothing and says so (exit 6),
		// with when the next worker may send the probe.
		const early = await spawnCli(["run", file, "--quiet", "--fleet", url, "--fleet-run", "nightly"], blocking.env, dir)
			.done;
		expect(early.code, early.stderr).toBe(6);
		expect(spentOn(blocking, "localhost").fetches).toBe(blocked.fetches);
		const openedAt = Date.parse(run.breakers[0].opened_at);
		expect(early.stdout).toContain(
			`the next worker sends one target as its probe from ${new Date(openedAt + 3_600_000).toISOString()}, nothing before`,
		);

		// The cool-down passes (the database's clock is the fleet's): one parked target goes as the probe.
		const coolDownPassed = () =>
			queryDatabase(url, "UPDATE scrapejob.breakers SET opened_at = now() - interval '2 hours'");
		await coolDownPassed();
		const stillBlocked = await worker(blocking).done;
		expect(stillBlocked.code, stillBlocked.stderr).toBe(6);
		expect(spentOn(blocking, "localhost").fetches).toBe(blocked.fetches + 1);
		// The probe was a parked target: fetched, so its worst case is no longer among the credits saved (as a
		// local run's breaker saves only what its parked targets would have cost: one credit each here).
		expect(lastJson(stillBlocked.stdout).breakers).toMatchObject([
			{
				domain: "localhost",
				reason: expect.stringMatching(/^the probe after cool_down was useless/),
				parked: parked - 1,
				credits_saved: parked - 1,
			},
		]);

		// The block lifted: the probe is useful, the breaker closes and every parked target is fetched once.
		const lifted = await useTestService({ concurrency: 2 });
		await coolDownPassed();
		const finished = await Promise.all([worker(lifted).done, worker(lifted).done]);
		for (const outcome of finished) {
			expect(outcome.code, outcome.stderr).toBe(0);
			// A worker that joins after the other finished the last targets says the run is complete (skipped).
			expectFleetRunDone(outcome.stdout);
			expect(lastJson(outcome.stdout).breakers).toEqual([]);
		}
		expect(spentOn(lifted, "localhost")).toEqual({ credits: parked - 1, fetches: parked - 1 });
		expect(spentOn(lifted, "127.0.0.1").fetches).toBe(0);
		expect(await states(url)).toEqual([{ state: "done", n: BLOCKED + GOOD }]);
		const records = await queryDatabase<{ n: number; distinct: number }>(
			url,
			"SELECT count(*)::int AS n, count(DISTINCT target_id)::int AS distinct FROM scrapejob.records",
		);
		expect(records).toEqual([{ n: BLOCKED + GOOD, distinct: BLOCKED + GOOD }]);
	});

	it("counts each charged attempt that failed, retries included: the breaker opens after `trip` charged fetches, not `trip` targets' retries", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const failing = await useTestService({
			faults: [{ kind: "scraping_error", match: "/\\/product\\//", message: "Page crashed", credits: 3 }],
		});
		const targets = Array.from({ length: 20 }, (_, i) => `  - ${failing.site.url}/product/${i + 1}`).join("\n");
		const dir = tempDir("scrapejob-fleet-breaker-");
		const file = writeJob(
			dir,
			"retried",
			`name: retried\nconcurrency: 1\ndefaults: {mode: request}\nretry: {attempts: 5, backoff_ms: 5, max_backoff_ms: 10}\nbreaker: {window: 10, trip: 8, cool_down: 1h}\ntargets:\n${targets}\n`,
		);
		const run = await spawnCli(["run", file, "--quiet", "--json", "--fleet", url, "--fleet-run", "r"], failing.env, dir)
			.done;
		expect(run.code, run.stderr).toBe(6);
		const charged = failing.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.creditsCharged > 0);
		expect(charged).toHaveLength(8);
		expect(lastJson(run.stdout).breakers).toMatchObject([
			{ reason: expect.stringMatching(/^8 of the last 8 charged fetches were useless or failed/) },
		]);
	});
});

describe("run --fleet: the breaker and adaptive climbs", () => {
	it("a target whose domain's breaker opened while its first rung was in flight does not climb, as in a local run", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService(BREAKER_CLIMB_SCENARIO);
		const site = await startDemoSite({ host: "127.0.0.2" });
		try {
			const dir = tempDir("scrapejob-fleet-breaker-");
			const file = writeJob(dir, "climb", breakerClimbJob(site.url));
			const run = await spawnCli(["run", file, "--quiet", "--json", "--fleet", url], service.env, dir).done;
			expect(lastJson(run.stdout).breakers, run.stderr).toMatchObject([{ domain: "127.0.0.2" }]);
			// The adaptive target's first rung only.
			const sent = service.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.url?.endsWith("/product/1"));
			expect(sent).toHaveLength(1);
		} finally {
			await site.close();
		}
	}, 60_000);
});
