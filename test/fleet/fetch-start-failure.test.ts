import pino from "pino";
import { describe, expect, it } from "vitest";
import { createTaskQueue } from "../../src/common/index.js";
import { type Fleet, FleetDatabaseError, type OpenFleetRunOptions } from "../../src/fleet/index.js";
import type { Job } from "../../src/job/index.js";
import type { ResultRecord } from "../../src/output/index.js";
import type { FleetFeedParts } from "../../src/run/fleet/fleet-feed.js";
import { createFleetCoordination, type FleetCoordination } from "../../src/run/fleet/fleet-worker.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase } from "../helpers/postgres-cluster.js";

const cluster = useCluster();

/** How PostgreSQL going down answers a statement (a restart, a failover). */
const outage = () => new FleetDatabaseError("PostgreSQL: terminating connection due to administrator command", "57P01");

/**
 * One worker of a run of three targets on three hosts, on a connection that refuses the statement `name`
 * while `refusing` says so. Its runner writes each target's record; tasks that throw are kept in `failures`
 * (the run core ends a run with them as an internal error).
 */
async function workerRefusing(
	name: string,
	refusing: (refusals: number) => boolean,
	settings: {
		readonly open: Partial<OpenFleetRunOptions>;
		readonly job: Partial<Job>;
		/** What the runner does for a target before its record (a second fetch's reservation). */
		readonly beforeRecord?: (coordination: FleetCoordination, targetId: string) => Promise<void>;
	},
) {
	const { url, workers } = await runWithWorkers(await cluster(), targetsOn(3, 3), 1, {
		concurrencyLimit: 3,
		...settings.open,
	});
	const { fleet, run, worker } = workers[0]!;
	let refusals = 0;
	const failing: Fleet = Object.assign(Object.create(fleet) as Fleet, {
		query: ((text: string, values?: unknown[], statement?: string) => {
			if (statement === name && refusing(refusals)) {
				refusals += 1;
				return Promise.reject(outage());
			}
			return fleet.query(text, values, statement);
		}) as Fleet["query"],
	});
	const job = { name: "job", targets: [], sources: [], ...settings.job } as unknown as Job;
	const coordination = createFleetCoordination(
		{ fleet: failing, run, worker, maxCredits: settings.open.maxCredits ?? null, leaseMs: 30_000 },
		{
			job,
			clock: Date.now,
			sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
			log: pino({ level: "silent" }),
		},
	);
	const failures: unknown[] = [];
	const fetched: string[] = [];
	const stopped: string[] = [];
	let stopping = false;
	const listeners: Array<() => void> = [];
	const stop = (reason: string) => {
		stopped.push(reason);
		if (stopping) return;
		stopping = true;
		for (const listener of listeners) listener();
	};
	const parts = {
		queue: createTaskQueue({ concurrency: 3, onError: (error) => failures.push(error) }),
		concurrency: 3,
		runner: {
			run: async (target: { id: string; url: string }) => {
				await settings.beforeRecord?.(coordination, target.id);
				fetched.push(target.id);
				coordination.written({ id: target.id, url: target.url } as ResultRecord);
			},
		},
		stops: {
			get stopping() {
				return stopping;
			},
			onStop: (listener: () => void) => listeners.push(listener),
			stop,
		},
	} as unknown as FleetFeedParts;
	const feed = async () => {
		try {
			await coordination.feed(parts);
		} finally {
			await coordination.close();
		}
	};
	return { url, coordination, feed, failures, fetched, stopped, stop, refusals: () => refusals };
}

// The statements a claimed target's fetch waits for: the database can go down under them as under a claim.
describe.each([
	{
		statement: "its credits reserved (max_credits)",
		name: "fleet_reserve",
		settings: { open: { maxCredits: 1000 }, job: {} },
	},
	{
		statement: "its host's delay stamped (per_host_delay)",
		name: "fleet_fetch_starting",
		settings: { open: { hostDelayMs: 20 }, job: { perHostDelayMs: 20 } },
	},
])("a claimed target's fetch waiting for $statement", ({ name, settings }) => {
	it("refused once by the database going down: sent again, the run completes, each target fetched once (it ended in an internal error)", async () => {
		const worker = await workerRefusing(name, (refusals) => refusals === 0, settings);
		await worker.feed();
		expect(worker.refusals()).toBe(1);
		expect(worker.failures).toEqual([]);
		expect(worker.stopped).toEqual([]);
		expect(worker.coordination.complete).toBe(true);
		const urls = targetsOn(3, 3).map((target) => target.url);
		expect(worker.fetched.sort()).toEqual(urls.sort());
		const runs = await queryDatabase<{ state: string; reserved: string }>(
			worker.url,
			"SELECT state, reserved FROM scrapejob.runs",
		);
		expect(runs).toEqual([{ state: "complete", reserved: "0" }]);
		// Sent again, not given back: each target was claimed once.
		const attempts = await queryDatabase<{ attempts: number }>(worker.url, "SELECT attempts FROM scrapejob.targets");
		expect(attempts).toEqual(Array(3).fill({ attempts: 1 }));
	}, 15_000);

	it("refused until the worker stops: the target goes back unfetched and unpaid, not an internal error", async () => {
		const worker = await workerRefusing(
			name,
			(refusals) => {
				// The worker is stopped while the statement is refused (Ctrl-C during the outage).
				if (refusals === 1) worker.stop("interrupted");
				return true;
			},
			settings,
		);
		await worker.feed();
		expect(worker.refusals()).toBeGreaterThan(0);
		expect(worker.failures).toEqual([]);
		expect(worker.fetched).toEqual([]);
		const targets = await queryDatabase<{ state: string; credits: string; reserved: string }>(
			worker.url,
			"SELECT state, credits, reserved FROM scrapejob.targets",
		);
		expect(targets).toEqual(Array(3).fill({ state: "queued", credits: "0", reserved: "0" }));
		const records = await queryDatabase(worker.url, "SELECT 1 FROM scrapejob.records");
		expect(records).toEqual([]);
	}, 15_000);
});

describe("a second fetch's reservation (a stronger mode, a crawl's robots.txt) while the database goes down", () => {
	it("is sent again while the lease is the worker's: the fetch gets its credits, the run completes (it ended in an internal error)", async () => {
		// Armed just before the runner's own reservation: the statement refused is that one, not a first one.
		let armed = false;
		let once = true;
		const reserved: boolean[] = [];
		const worker = await workerRefusing(
			"fleet_reserve",
			() => {
				const refuse = armed;
				armed = false;
				return refuse;
			},
			{
				open: { maxCredits: 1000 },
				job: {},
				beforeRecord: async (coordination, targetId) => {
					armed = once;
					once = false;
					const booking = coordination.budget.reserve(5, () => false, targetId);
					armed = false;
					reserved.push(await booking);
					coordination.budget.commit(5, 5, targetId);
				},
			},
		);
		await worker.feed();
		expect(worker.refusals()).toBe(1);
		expect(worker.failures).toEqual([]);
		expect(reserved).toEqual([true, true, true]);
		expect(worker.coordination.complete).toBe(true);
		const runs = await queryDatabase<{ state: string; reserved: string }>(
			worker.url,
			"SELECT state, reserved FROM scrapejob.runs",
		);
		expect(runs).toEqual([{ state: "complete", reserved: "0" }]);
	}, 15_000);
});
