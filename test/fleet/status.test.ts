// biome-ignore-all lint/suspicious/noTemplateCurlyInString: job files spell variables as ${NAME}
import { describe, expect, it } from "vitest";
import {
	acquireSlot,
	acquireSlots,
	claimTargets,
	completeTarget,
	finishFleetRun,
	fleetStatus,
	pauseFleet,
	releaseTarget,
	renewLeases,
	reserveCredits,
} from "../../src/fleet/index.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";

const cluster = useCluster();

describe("fleet status", () => {
	it("counts targets by state, lists workers with their last beat, in flight against the limit, credits, pause", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(6, 2), 2, {
			maxCredits: 50,
			concurrencyLimit: 3,
		});
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		const leases = await claimTargets(a.fleet, a.worker, 3, 60_000);
		expect(leases).toHaveLength(3);
		await completeTarget(a.fleet, leases[0]!, {}, 4);
		await releaseTarget(a.fleet, leases[1]!, { retry: false, error: "404", credits: 1 });
		await reserveCredits(a.fleet, leases[2]!, 7);
		await acquireSlot(a.fleet, a.worker, 60_000);
		const before = await fleetStatus(b.fleet, runId);
		await renewLeases(b.fleet, b.worker, 60_000);
		const [now] = await b.fleet.query<{ now: Date }>("SELECT now()");
		await pauseFleet(b.fleet, runId, new Date(now!.now.getTime() + 60_000));
		const status = await fleetStatus(b.fleet, runId);
		expect(status).toMatchObject({
			run: { id: runId, jobName: "job", state: "running" },
			targets: { queued: 3, leased: 1, done: 1, failed: 1, parked: 0 },
			inFlight: 1,
			concurrencyLimit: 3,
			credits: { spent: 5, reserved: 7, max: 50 },
		});
		expect(status!.pausedUntil?.getTime()).toBe(now!.now.getTime() + 60_000);
		expect(status!.workers.map((worker) => worker.id)).toEqual([a.worker.id, b.worker.id]);
		expect(status!.workers[0]).toMatchObject({ pid: process.pid });
		// B's renewal is its heartbeat.
		expect(status!.workers[1]!.lastBeat.getTime()).toBeGreaterThan(before!.workers[1]!.lastBeat.getTime());
		expect(await fleetStatus(b.fleet, runId + 1000)).toBeNull();
	});

	it("a complete run has nothing in flight, though a killed worker's slots are held until they lapse (text and --json)", async () => {
		assertBuilt();
		const { url, workers, runId } = await runWithWorkers(await cluster(), targetsOn(2), 2, { concurrencyLimit: 3 });
		const [killed, survivor] = workers as [(typeof workers)[0], (typeof workers)[0]];
		// The killed worker took two slots for a minute, and never gave them back.
		expect(await acquireSlots(killed.fleet, killed.worker, 2, 60_000)).toHaveLength(2);
		for (const lease of await claimTargets(survivor.fleet, survivor.worker, 2, 60_000))
			expect(await completeTarget(survivor.fleet, lease, {}, 1)).toBe(true);
		expect(await finishFleetRun(survivor.fleet, runId)).toBe(true);
		expect(await fleetStatus(survivor.fleet, runId)).toMatchObject({
			run: { state: "complete" },
			targets: { queued: 0, leased: 0, done: 2 },
			inFlight: 0,
		});
		const dir = tempDir("scrapejob-fleet-status-");
		const file = writeJob(dir, "job", "name: job\ntargets:\n  - https://host0.test/p/0\n");
		const json = await spawnCli(["fleet", "status", file, "--fleet", url, "--json"], {}, dir).done;
		expect(json.code, json.stderr).toBe(0);
		expect(JSON.parse(json.stdout)[0]).toMatchObject({ state: "complete", in_flight: 0, concurrency_limit: 3 });
		const text = await spawnCli(["fleet", "status", file, "--fleet", url], {}, dir).done;
		expect(text.stdout).toContain("in flight  0 of 3");
		// The job file as the workers ran it, with variables this shell does not set: status reads only its name.
		const withVariables = writeJob(
			dir,
			"job-with-variables",
			"name: job\nnotify: {url: '${HOOK_URL}'}\ntargets:\n  - https://${SHOP_HOST}/p/0\n",
		);
		const unset = await spawnCli(["fleet", "status", withVariables, "--fleet", url, "--json"], {}, dir).done;
		expect(unset.code, unset.stderr).toBe(0);
		expect(JSON.parse(unset.stdout)[0]).toMatchObject({ state: "complete" });
	}, 30_000);

	it("a run whose every target was fresh says so: its targets counted as fresh, not a run of nothing (text and --json)", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 2 });
		const site = await startTargetSite((req, res) => html(res, "<p>page</p>", req.url === "/missing" ? 404 : 200));
		const dir = tempDir("scrapejob-fleet-status-");
		const lines = Array.from({ length: 3 }, (_, i) => `  - ${site.origin}/p/${i}`).join("\n");
		const file = writeJob(dir, "freshjob", `name: freshjob\ndefaults:\n  mode: request\ntargets:\n${lines}\n`);
		const run = (name: string, extra: string[] = []) =>
			spawnCli(["run", file, "--quiet", "--fleet", url, "--fleet-run", name, ...extra], service.env, dir).done;
		const first = await run("first");
		expect(first.code, first.stderr).toBe(0);
		// A worker's own records, then the whole fleet run's figures, so a share does not read as a run unfinished.
		expect(first.stdout).toContain("3 of 3 done by this worker: 3 ok");
		expect(first.stdout).toMatch(
			/\nfleet +run first: 3 done, 0 failed, 0 queued, 0 leased; 6 credits spent by every worker\n/,
		);
		const again = await run("again", ["--freshness", "1h"]);
		expect(again.code, again.stderr).toBe(0);
		expect(again.stdout).toContain(
			"0 of 0 done by this worker: 0 ok, 0 failed, 0 skipped; 3 fresh (not fetched: freshness)",
		);
		expect(site.requests).toHaveLength(3);
		const json = await spawnCli(["fleet", "status", file, "--fleet", url, "--json"], {}, dir).done;
		expect(json.code, json.stderr).toBe(0);
		const runs = JSON.parse(json.stdout) as Array<{ run: string; state: string; targets: Record<string, number> }>;
		expect(runs.map(({ run, state, targets }) => ({ run, state, targets }))).toEqual([
			{ run: "again", state: "complete", targets: { queued: 0, leased: 0, done: 0, failed: 0, fresh: 3 } },
			{ run: "first", state: "complete", targets: { queued: 0, leased: 0, done: 3, failed: 0 } },
		]);
		const text = await spawnCli(["fleet", "status", file, "--fleet", url], {}, dir).done;
		expect(text.stdout).toContain("0 queued, 0 leased, 0 done, 0 failed; 3 fresh (skipped: freshness)");
		// --fleet-run, as the workers were started with: that run alone; a name the job has no run of is exit 2.
		const named = await spawnCli(["fleet", "status", file, "--fleet", url, "--fleet-run", "first"], {}, dir).done;
		expect(named.code, named.stderr).toBe(0);
		expect(named.stdout).toContain("freshjob · fleet run first · complete");
		expect(named.stdout).not.toContain("fleet run again");
		const typo = await spawnCli(["fleet", "status", file, "--fleet", url, "--fleet-run", "frist", "--json"], {}, dir)
			.done;
		expect(typo.code).toBe(2);
		expect(typo.stderr).toContain("no fleet run frist of job freshjob in postgres://");
		expect(typo.stderr).toContain("its newest: again, first");
		expect(typo.stderr).not.toContain("fleet-test-pw");
		// A failed record counts as failed fleet-wide, as it does in the worker's own line.
		const broken = writeJob(
			dir,
			"broken",
			`name: broken\ndefaults:\n  mode: request\ntargets:\n${lines}\n  - ${site.origin}/missing\n`,
		);
		const withFailure = await spawnCli(
			["run", broken, "--quiet", "--fleet", url, "--fleet-run", "broken"],
			service.env,
			dir,
		).done;
		expect(withFailure.code, withFailure.stderr).toBe(1);
		expect(withFailure.stdout).toContain("4 of 4 done by this worker: 3 ok, 1 failed");
		expect(withFailure.stdout).toMatch(/\nfleet +run broken: 3 done, 1 failed, 0 queued, 0 leased;/);
		const brokenStatus = await spawnCli(["fleet", "status", broken, "--fleet", url], {}, dir).done;
		expect(brokenStatus.stdout).toContain("0 queued, 0 leased, 3 done, 1 failed");
	}, 60_000);
});
