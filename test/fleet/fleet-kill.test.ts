import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { connectFleet, openFleetRun } from "../../src/fleet/index.js";
import { loadJob, streamTargetBatches } from "../../src/job/index.js";
import { plansOf, toFleetInput } from "../../src/run/fleet/fleet-targets.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { startAnswerLosingProxy } from "../helpers/pg-proxy.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase as query } from "../helpers/postgres-cluster.js";
import { type TestService, useTestService } from "../helpers/service.js";
import { assertBuilt, endedWithin, type SpawnedCli, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";
import { until } from "../helpers/until.js";

const cluster = useCluster();
/** Short leases, so a dead or stopped worker's targets pass to the others within a test. */
const LEASE_MS = 2000;

function listJob(origin: string, count: number): { dir: string; file: string } {
	const dir = tempDir("scrapejob-fleet-kill-");
	const lines = Array.from({ length: count }, (_, i) => `  - ${origin}/p/${i}`).join("\n");
	return { dir, file: writeJob(dir, "killjob", `name: killjob\ndefaults:\n  mode: request\ntargets:\n${lines}\n`) };
}

/** A fleet database, and a one-target job whose first fetch the service refuses (429, reset in 3 s, not charged). */
async function oneTargetRefusedFirst() {
	assertBuilt();
	const url = await (await cluster()).createDatabase();
	const service = await useTestService({
		concurrency: 2,
		reset_seconds: 3,
		faults: [{ kind: "rate_limit", times: 1 }],
	});
	const site = await startTargetSite((_req, res) => html(res, "<p>page</p>"));
	const { dir, file } = listJob(site.origin, 1);
	return { url, service, site, dir, file, env: { ...service.env, SCRAPEJOB_LOCK_LEASE_MS: String(LEASE_MS) } };
}

/**
 * A one-target fleet run whose first worker lost the target: one request reached the site, its charge is
 * the one record's, written under the second lease (epoch 2), and only one worker folder holds it.
 */
async function expectPaidOnceBySuccessor(url: string, siteRequests: number, service: TestService, dir: string) {
	expect(siteRequests).toBe(1);
	const records = await query<{ epoch: string; credits: number }>(
		url,
		"SELECT epoch, (record->>'credits_used')::int AS credits FROM scrapejob.records",
	);
	expect(records.map((row) => Number(row.epoch))).toEqual([2]);
	expect(service.emulator.ledger.totalCharged()).toBe(records[0]!.credits);
	const folders = readdirSync(join(dir, "output", "killjob", "fleet"));
	const written = folders.map((folder) => {
		const path = join(dir, "output", "killjob", "fleet", folder, "results.jsonl");
		return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean).length : 0;
	});
	expect(written.sort()).toEqual([0, 1]);
}

const doneCount = async (url: string) =>
	Number(
		(await query<{ n: string }>(url, "SELECT count(*) AS n FROM scrapejob.targets WHERE state = 'done'"))[0]?.n ?? 0,
	);

describe("fleet workers killed and stopped", () => {
	it("SIGKILL at random moments with replacements started (5 trials): every target one record, every credit on a record except fetches in flight at a kill", async () => {
		assertBuilt();
		const service = await useTestService({ concurrency: 6 });
		const site = await startTargetSite((_req, res) =>
			setTimeout(() => html(res, "<p>page</p>"), 20 + Math.random() * 60),
		);
		for (let trial = 0; trial < 5; trial++) {
			const url = await (await cluster()).createDatabase();
			service.emulator.ledger.clear();
			const { dir, file } = listJob(site.origin, 40);
			const env = { ...service.env, SCRAPEJOB_LOCK_LEASE_MS: String(LEASE_MS) };
			// Named, as a Kubernetes Job names it: a replacement that starts after the end finds it complete.
			const start = () => spawnCli(["run", file, "--quiet", "--fleet", url, "--fleet-run", "trial"], env, dir);
			const workers: SpawnedCli[] = Array.from({ length: 4 }, start);
			/** URLs leased by anyone at each kill: a superset of the fetches in flight in the killed worker. */
			const leasedAtKills = new Set<string>();
			for (let kill = 0; kill < 2; kill++) {
				const target = 5 + Math.floor(Math.random() * 25);
				await until(async () => (await doneCount(url)) >= target || workers.every((w) => w.child.exitCode !== null));
				const victim = workers.find((w) => w.child.exitCode === null && w.child.signalCode === null);
				if (!victim) break;
				victim.child.kill("SIGKILL");
				await victim.done;
				// Read at once: the dead worker's leases stay until they lapse (a lease, 2 s, after its last beat).
				for (const row of await query<{ url: string }>(url, "SELECT url FROM scrapejob.targets WHERE state = 'leased'"))
					leasedAtKills.add(row.url);
				workers.push(start());
			}
			const outcomes = await Promise.all(workers.map((w) => w.done));
			expect(outcomes.filter((o) => o.signal === null).every((o) => o.code === 0)).toBe(true);
			const records = await query<{ url: string; credits: number }>(
				url,
				"SELECT record->>'url' AS url, (record->>'credits_used')::int AS credits FROM scrapejob.records",
			);
			expect(records).toHaveLength(40);
			expect(new Set(records.map((row) => row.url)).size).toBe(40);
			// Charged more than recorded: only a target some worker held when one was killed.
			const charged = new Map<string, number>();
			for (const entry of service.emulator.ledger.entries) {
				if (entry.url && entry.creditsCharged > 0)
					charged.set(entry.url, (charged.get(entry.url) ?? 0) + entry.creditsCharged);
			}
			for (const { url: page, credits } of records) {
				const paid = charged.get(page) ?? 0;
				if (paid !== credits) expect(leasedAtKills.has(page), `${page}: paid ${paid}, recorded ${credits}`).toBe(true);
			}
			expect(service.emulator.ledger.maxInFlight()).toBeLessThanOrEqual(6);
		}
	}, 240_000);

	it("a loader killed mid-load: a worker that joined while it was alive loads the rest once its role lapses, and the run completes", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const site = await startTargetSite((_req, res) => html(res, "<p>page</p>"));
		const { dir, file } = listJob(site.origin, 6);
		// The first worker opens the run and dies after loading 2 of the 6 targets (as the CLI's loader
		// would: the same target ids), its loader role renewed for 4 s from its last batch.
		const { job } = await loadJob(file, { cwd: dir, env: {} });
		const plans = plansOf(job);
		const loader = await connectFleet({ url, maxConnections: 2 });
		try {
			async function* diesAfterTwo() {
				let sent = 0;
				for await (const batch of streamTargetBatches(job)) {
					for (const target of batch) {
						if (sent++ === 2) throw new Error("killed mid-load");
						yield toFleetInput(target, plans, target.id);
					}
				}
			}
			await expect(
				openFleetRun(loader, {
					jobName: job.name,
					runName: "loading",
					concurrencyLimit: 4,
					source: diesAfterTwo,
					loaderLeaseMs: 4000,
					loadBatchSize: 1,
				}),
			).rejects.toThrow("killed mid-load");
		} finally {
			await loader.close();
		}
		// Joins while the loader's role still runs: it works on what is loaded, then finds nothing to claim.
		const env = { ...service.env, SCRAPEJOB_LOCK_LEASE_MS: String(LEASE_MS) };
		const worker = spawnCli(["run", file, "--quiet", "--fleet", url, "--fleet-run", "loading"], env, dir);
		await until(async () => (await doneCount(url)) >= 2, "the loaded targets done");
		const [run] = await query<{ state: string; lapsed: boolean }>(
			url,
			"SELECT state, loader_until < now() AS lapsed FROM scrapejob.runs",
		);
		expect(run).toEqual({ state: "loading", lapsed: false });
		let timer: NodeJS.Timeout | undefined;
		const ended = await Promise.race([
			worker.done,
			new Promise<null>((resolve) => {
				timer = setTimeout(() => resolve(null), 15_000);
			}),
		]);
		clearTimeout(timer);
		if (ended === null) worker.child.kill("SIGKILL");
		expect(ended, "the worker waited for ever on a run whose loader is dead").not.toBeNull();
		expect(ended!.code, ended!.stderr).toBe(0);
		expect(await doneCount(url)).toBe(6);
		expect(service.emulator.ledger.totalCharged()).toBe(12);
	}, 60_000);

	it("a worker stopped past its lease (SIGSTOP, then SIGCONT) writes nothing for the targets another worker took over", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		// The first worker's two fetches are slow (it is stopped meanwhile); the successor's are quick.
		let slow = 2;
		const site = await startTargetSite((_req, res) => {
			const delay = slow > 0 ? 4000 : 10;
			slow -= 1;
			setTimeout(() => html(res, "<p>page</p>"), delay);
		});
		const { dir, file } = listJob(site.origin, 2);
		const env = { ...service.env, SCRAPEJOB_LOCK_LEASE_MS: String(LEASE_MS) };
		const first = spawnCli(["run", file, "--quiet", "--fleet", url, "--grace-period", "20000"], env, dir);
		await until(() => site.requests.length >= 2);
		first.child.kill("SIGSTOP");
		// Past its lease: the successor claims both targets, fetches and records them.
		await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 1500));
		const second = spawnCli(["run", file, "--quiet", "--fleet", url], env, dir);
		const secondDone = await second.done;
		expect(secondDone.code, secondDone.stderr).toBe(0);
		first.child.kill("SIGCONT");
		const firstDone = await first.done;
		expect(firstDone.code, firstDone.stderr).toBe(0);
		const records = await query<{ epoch: string }>(url, "SELECT epoch FROM scrapejob.records");
		expect(records.map((row) => Number(row.epoch))).toEqual([2, 2]);
		// The stopped worker's own results.jsonl holds none of them: its fence refused both records.
		const folders = readdirSync(join(dir, "output", "killjob", "fleet"));
		const written = folders.map((folder) => {
			const path = join(dir, "output", "killjob", "fleet", folder, "results.jsonl");
			return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean).length : 0;
		});
		expect(written.sort()).toEqual([0, 2]);
	}, 60_000);

	it("a worker stopped past its lease while it waits to send a retry sends nothing when it wakes: the target is paid once, by the worker that took it over", async () => {
		// The first fetch is refused (429, reset in 3 s, not charged): the worker waits to send it again.
		const { url, service, site, dir, file, env } = await oneTargetRefusedFirst();
		const start = () => spawnCli(["run", file, "--quiet", "--fleet", url, "--fleet-run", "lapse"], env, dir);
		const first = start();
		await until(() => service.emulator.ledger.rateLimits.length >= 1, "the first fetch refused");
		first.child.kill("SIGSTOP");
		try {
			// Stopped while it waits for the reset, until its lease has lapsed in the database.
			await until(
				async () =>
					(await query<{ lapsed: boolean }>(url, "SELECT lease_until < now() AS lapsed FROM scrapejob.targets"))[0]
						?.lapsed === true,
				"the stopped worker's lease lapsed",
			);
			const second = await start().done;
			expect(second.code, second.stderr).toBe(0);
		} finally {
			first.child.kill("SIGCONT");
		}
		const firstDone = await first.done;
		expect(firstDone.code, firstDone.stderr).toBe(0);
		// One fetch reached the site and one was charged: the woken worker did not send its retry.
		await expectPaidOnceBySuccessor(url, site.requests.length, service, dir);
	}, 60_000);

	it("a worker cut off from the database past its lease gives its target up and stops (exit 3): the target retaken and paid once", async () => {
		// The first fetch is refused (429, reset in 3 s, not charged): the worker is waiting to send it again
		// when it loses the database.
		const { url, service, site, dir, file, env } = await oneTargetRefusedFirst();
		const relay = await startAnswerLosingProxy(url);
		const start = (fleet: string) =>
			spawnCli(["run", file, "--quiet", "--fleet", fleet, "--fleet-run", "cut"], env, dir);
		const first = start(relay.url);
		await until(() => service.emulator.ledger.rateLimits.length >= 1, "the first fetch refused");
		// Its renewals fail from now on; the other worker's database answers.
		relay.cut();
		// Well within the lease (2 s) plus the reset: not a worker that goes on without its database.
		const firstDone = await endedWithin(first, 20_000);
		expect(firstDone, "the cut-off worker never stopped").not.toBeNull();
		expect(firstDone!.code, firstDone!.stderr).toBe(3);
		expect(firstDone!.stderr).toContain("the fleet's database stopped answering");
		expect(firstDone!.stderr).not.toContain("fleet-test-pw");
		const second = await start(url).done;
		expect(second.code, second.stderr).toBe(0);
		// One fetch reached the site, paid once, recorded by the second worker under the next epoch.
		await expectPaidOnceBySuccessor(url, site.requests.length, service, dir);
	}, 60_000);
});
