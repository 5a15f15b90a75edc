import pino from "pino";
import { describe, expect, it, vi } from "vitest";
import { keepFleetDomainModes, readFleetDomainModes } from "../../src/fleet/index.js";
import { createAdaptiveModes } from "../../src/run/economics/adaptive-mode.js";
import { FleetAdaptive } from "../../src/run/fleet/fleet-adaptive.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase } from "../helpers/postgres-cluster.js";
import { type TestService, useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

const cluster = useCluster();

/**
 * `mode: adaptive` in a fleet (docs/behaviour.md, "Adaptive mode"): what a domain's rung is, is the fleet's
 * (table `domain_modes`), not each worker's. The demo site reached as `localhost` blocks datacenter
 * addresses (rung 1, 1 credit: a block page), so it needs a residential request (rung 2, 2 credits); as
 * `127.0.0.1` the cheapest rung is useful.
 */
const BLOCKED = 8;
const PLAIN = 4;

function adaptiveJob(service: TestService): { dir: string; file: string } {
	const port = new URL(service.site.url).port;
	const lines: string[] = [];
	for (let index = 1; index <= BLOCKED; index++) {
		lines.push(`  - http://localhost:${port}/product/${index}`);
		if (index <= PLAIN) lines.push(`  - http://127.0.0.1:${port}/product/${index}`);
	}
	const dir = tempDir("scrapejob-fleet-adaptive-");
	const file = writeJob(
		dir,
		"fleetadaptive",
		`name: fleetadaptive\nconcurrency: 1\nbreaker: false\ndefaults: {mode: adaptive}\nretry: {attempts: 1, backoff_ms: 5, max_backoff_ms: 10}\nextract:\n  price: {css: .price, required: true}\ntargets:\n${lines.join("\n")}\n`,
	);
	return { dir, file };
}

/** Fetches the emulator was sent and credits it charged for one host's targets, from ledger entry `from` on. */
function spentOn(service: TestService, host: string, from = 0) {
	const entries = service.emulator.ledger
		.byEndpoint("realtime")
		.slice(from)
		.filter((entry) => entry.url?.includes(`//${host}:`));
	return { credits: entries.reduce((sum, entry) => sum + entry.creditsCharged, 0), fetches: entries.length };
}

const lastJson = (stdout: string) => JSON.parse(stdout.trim().split("\n").at(-1)!);

describe("run --fleet with mode: adaptive", () => {
	it("the fleet keeps each domain's rung: the job's next fleet run, on fresh workers, sends each target once on it", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ block_datacenter: ["//localhost:"], concurrency: 4 });
		const { file } = adaptiveJob(service);
		// Each worker in a folder of its own: nothing is learned through a shared disk.
		const worker = (runName: string) =>
			spawnCli(
				["run", file, "--quiet", "--json", "--fleet", url, "--fleet-run", runName],
				service.env,
				tempDir("scrapejob-fleet-adaptive-worker-"),
			).done;

		const first = await Promise.all([worker("first"), worker("first")]);
		for (const outcome of first) expect(outcome.code, outcome.stderr).toBe(0);
		expect(
			await queryDatabase(
				url,
				"SELECT domain, rung, mode, proxy_type, useful FROM scrapejob.domain_modes WHERE job_name = 'fleetadaptive' ORDER BY domain",
			),
		).toEqual([
			{ domain: "127.0.0.1", rung: 0, mode: "request", proxy_type: "datacenter", useful: true },
			{ domain: "localhost", rung: 1, mode: "request", proxy_type: "residential", useful: true },
		]);

		const before = service.emulator.ledger.byEndpoint("realtime").length;
		const second = await Promise.all([worker("second"), worker("second")]);
		for (const outcome of second) expect(outcome.code, outcome.stderr).toBe(0);
		// Every target once, on its domain's learned rung: no climb paid again.
		expect(spentOn(service, "localhost", before)).toEqual({ fetches: BLOCKED, credits: 2 * BLOCKED });
		expect(spentOn(service, "127.0.0.1", before)).toEqual({ fetches: PLAIN, credits: PLAIN });
		const modes = second.map((outcome) => lastJson(outcome.stdout).modes ?? {});
		expect(modes.some((worked) => worked.localhost?.mode === "request")).toBe(true);
		for (const worked of modes) {
			if (worked.localhost) expect(worked.localhost).toMatchObject({ mode: "request", proxy_type: "residential" });
		}
	});

	it("a rung one worker found reaches the others' next targets while the run goes on", async () => {
		const { workers } = await runWithWorkers(await cluster(), targetsOn(1), 2);
		const log = pino({ level: "silent" });
		const [one, two] = await Promise.all(
			workers.map(
				async ({ fleet, run }) =>
					new FleetAdaptive({ fleet, run, known: await readFleetDomainModes(fleet, run.jobName), log }),
			),
		);
		const learner = createAdaptiveModes(one!.remembered, (learned) => one!.learned(learned));
		const follower = createAdaptiveModes(two!.remembered, (learned) => two!.learned(learned));
		two!.follow(follower);
		try {
			// A useless record on the cheapest rung, then a useful one a rung up: the domain starts there now.
			learner.settle("shop.test", 0, { status: "ok", error: null, credits_used: 1, useful: false }, false);
			learner.settle("shop.test", 1, { status: "ok", error: null, credits_used: 2, useful: true }, false);
			expect(learner.startOf("shop.test")).toBe(1);
			await vi.waitFor(() => expect(follower.startOf("shop.test")).toBe(1), { timeout: 10_000, interval: 50 });
			// Found useful by one worker, the domain is not given up by another whose target climbed in vain.
			follower.settle("shop.test", 3, { status: "ok", error: null, credits_used: 5, useful: false }, true);
			expect(follower.isHopeless("shop.test")).toBe(false);
		} finally {
			await Promise.all([one!.stop(), two!.stop()]);
		}
	});

	it("learning only climbs; within a run a domain found useful stays so, a later run's finding replaces it", async () => {
		const { workers } = await runWithWorkers(await cluster(), targetsOn(1), 1);
		const { fleet, run } = workers[0]!;
		const keep = (runId: number, rung: number, useful: boolean) =>
			keepFleetDomainModes(fleet, "job", runId, [
				{
					domain: "shop.test",
					rung,
					mode: rung === 3 ? "browser" : "request",
					proxyType: rung === 0 ? "datacenter" : "residential",
					useful,
				},
			]);
		const row = async () => (await readFleetDomainModes(fleet, "job")).rows;
		await keep(run.id, 1, true);
		await keep(run.id, 0, false);
		expect(await row()).toEqual([
			{ domain: "shop.test", rung: 1, mode: "request", proxyType: "residential", useful: true },
		]);
		await keep(run.id + 1, 3, false);
		expect(await row()).toEqual([
			{ domain: "shop.test", rung: 3, mode: "browser", proxyType: "residential", useful: false },
		]);
		// A poll reads only the rows changed since the last one (less a margin for a late commit).
		await fleet.query("UPDATE domain_modes SET updated_at = now() - interval '1 hour'");
		const { readAt } = await readFleetDomainModes(fleet, "job");
		expect((await readFleetDomainModes(fleet, "job", readAt)).rows).toEqual([]);
		await keep(run.id + 1, 3, true);
		expect((await readFleetDomainModes(fleet, "job", readAt)).rows).toMatchObject([
			{ domain: "shop.test", useful: true },
		]);
	});
});
