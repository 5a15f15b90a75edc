import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { queryDatabase as query, startCluster, type TestCluster } from "../helpers/postgres-cluster.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, endedWithin, type SpawnedCli, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";
import { until } from "../helpers/until.js";

/** A cluster of this file's own: its server is shut down and started again mid-run. */
let started: Promise<TestCluster> | null = null;
const cluster = () => {
	started ??= startCluster();
	return started;
};
afterAll(async () => (await started?.catch(() => null))?.stop());

/** The warnings a worker logged in its run folder's run.log (`<dir>/output/<job>/fleet/<run>/run.log`). */
function runLog(dir: string, job: string): string {
	const fleet = join(dir, "output", job, "fleet");
	if (!existsSync(fleet)) return "";
	return readdirSync(fleet)
		.map((run) => join(fleet, run, "run.log"))
		.filter(existsSync)
		.map((path) => readFileSync(path, "utf8"))
		.join("");
}

/**
 * Resolves once the worker logged a settlement the database refused (run.log is written in batches: the
 * outage's other warnings push it out). A worker that ends first fails the wait at once, with its stderr.
 */
async function settlementRefused(dir: string, worker: SpawnedCli): Promise<void> {
	const seen: { ended: Awaited<SpawnedCli["done"]> | null } = { ended: null };
	void worker.done.then((outcome) => {
		seen.ended = outcome;
	});
	const refused = () => runLog(dir, "outage").includes("fleet_settle_failed");
	await until(() => refused() || seen.ended !== null, "a settlement refused by the database");
	const { ended } = seen;
	if (ended !== null && !refused()) {
		throw new Error(`the worker ended (exit ${ended.code}) before a settlement was refused: ${ended.stderr.trim()}`);
	}
}

describe("a fleet worker whose database goes down for a moment", () => {
	/** A worker of a 6-target job whose first two fetches end once the database is down, its settlement refused. */
	async function workerThroughOutage(pg: TestCluster, leaseMs: number, flags: string[] = []) {
		const url = await pg.createDatabase();
		const service = await useTestService({ concurrency: 2 });
		let release: () => void = () => undefined;
		const gate = new Promise<void>((resolve) => {
			release = resolve;
		});
		const site = await startTargetSite((_req, res) => {
			void gate.then(() => html(res, "<p>page</p>"));
		});
		const dir = tempDir("scrapejob-fleet-outage-");
		const lines = Array.from({ length: 6 }, (_, i) => `  - ${site.origin}/p/${i}`).join("\n");
		const file = writeJob(dir, "outage", `name: outage\ndefaults:\n  mode: request\ntargets:\n${lines}\n`);
		const env = { ...service.env, SCRAPEJOB_LOCK_LEASE_MS: String(leaseMs) };
		const worker = spawnCli(["run", file, "--quiet", "--fleet", url, "--fleet-run", "nightly", ...flags], env, dir);
		await until(() => site.requests.length >= 2, "two fetches in flight");
		await pg.down();
		release();
		try {
			await settlementRefused(dir, worker);
		} catch (error) {
			await pg.up();
			throw error;
		}
		return { url, service, site, worker, dir };
	}

	it("records the fetches that ended during the outage once the database is back: the run completes, each target paid once", async () => {
		assertBuilt();
		const pg = await cluster();
		// A lease longer than the outage (and a loaded machine's shutdown of the server): the worker is not
		// cut off, its claims stay its own.
		const { url, service, site, worker } = await workerThroughOutage(pg, 15_000);
		await pg.up();
		// Not a hang: the worker ends well within the time a lease and the rest of the run take.
		const ended = await endedWithin(worker, 20_000);
		expect(ended, "the worker never ended: its unsettled targets stayed leased to it").not.toBeNull();
		expect(ended!.code, ended!.stderr).toBe(0);
		const records = await query<{ url: string; credits: number }>(
			url,
			"SELECT record->>'url' AS url, (record->>'credits_used')::int AS credits FROM scrapejob.records",
		);
		expect(records).toHaveLength(6);
		expect(new Set(records.map((row) => row.url)).size).toBe(6);
		// The fetches that ended during the outage were recorded, not paid again.
		expect(records.reduce((sum, row) => sum + row.credits, 0)).toBe(service.emulator.ledger.totalCharged());
		expect(site.requests).toHaveLength(6);
	}, 60_000);

	it("a crawled page whose links the database refused is fetched again, its links found again: the crawl loses no page", async () => {
		assertBuilt();
		const pg = await cluster();
		const url = await pg.createDatabase();
		const service = await useTestService({ concurrency: 2 });
		// The seed's answer waits until the database is down: its links and its record meet the outage.
		let release: () => void = () => undefined;
		const gate = new Promise<void>((resolve) => {
			release = resolve;
		});
		let seedAnswers = 0;
		const site = await startTargetSite((req, res) => {
			if (req.url !== "/") return html(res, "<p>leaf</p>");
			const answer = () => html(res, '<a href="/a">a</a> <a href="/b">b</a>');
			if (seedAnswers++ === 0) void gate.then(answer);
			else answer();
		});
		const dir = tempDir("scrapejob-fleet-outage-");
		const file = writeJob(
			dir,
			"outage",
			`name: outage\ndefaults: {mode: request}\ncrawl: {max_depth: 1, robots: ignore, sitemaps: false}\ntargets: [${site.origin}/]\n`,
		);
		// A lease longer than a loaded machine's shutdown of the server: the seed's answer meets the outage
		// while its lease is still the worker's. It lapses after the failure, and the seed is fetched again.
		const env = { ...service.env, SCRAPEJOB_LOCK_LEASE_MS: "12000" };
		const worker = spawnCli(["run", file, "--quiet", "--fleet", url, "--fleet-run", "nightly"], env, dir);
		await until(() => site.requests.length >= 1, "the seed's fetch in flight");
		await pg.down();
		try {
			release();
			await settlementRefused(dir, worker);
		} finally {
			await pg.up();
		}
		const ended = await endedWithin(worker, 40_000);
		expect(ended).not.toBeNull();
		expect(ended!.code, ended!.stderr).toBe(0);
		const pages = await query<{ url: string }>(url, "SELECT record->>'url' AS url FROM scrapejob.records");
		expect(pages.map((row) => new URL(row.url).pathname).sort()).toEqual(["/", "/a", "/b"]);
	}, 90_000);

	it("Ctrl-C during the outage: the worker sends its paid records again while the grace period lasts; the database back, they are the fleet's, none paid again", async () => {
		assertBuilt();
		const pg = await cluster();
		const { url, service, worker } = await workerThroughOutage(pg, 20_000);
		// A Kubernetes pod's SIGTERM during a failover: its grace period is for this. The database stays
		// down for four of the worker's retry intervals after the stop (time must pass: a worker that gave
		// its records up at the stop has ended by then, and another would pay for them again).
		worker.child.kill("SIGINT");
		await new Promise((resolve) => setTimeout(resolve, 1000));
		await pg.up();
		const ended = await endedWithin(worker, 20_000);
		expect(ended, "the worker never ended").not.toBeNull();
		expect(ended!.code, ended!.stderr).toBe(130);
		const records = await query<{ credits: number }>(
			url,
			"SELECT (record->>'credits_used')::int AS credits FROM scrapejob.records",
		);
		// The two fetches that ended during the outage are the fleet's records: what was paid is recorded.
		expect(records.length).toBeGreaterThanOrEqual(2);
		expect(records.reduce((sum, row) => sum + row.credits, 0)).toBe(service.emulator.ledger.totalCharged());
	}, 60_000);

	it("Ctrl-C during the outage with a short grace period ends the worker then (exit 130); its summary says the fleet's state is not known", async () => {
		assertBuilt();
		const pg = await cluster();
		const { worker, dir } = await workerThroughOutage(pg, 20_000, ["--grace-period", "500"]);
		try {
			worker.child.kill("SIGINT");
			const ended = await endedWithin(worker, 8000);
			expect(ended, "the stopped worker went on sending its settlements past its grace period").not.toBeNull();
			expect(ended!.code, ended!.stderr).toBe(130);
			// Where the fleet stands could not be read: the summary says so, not "0 done, 0 queued; 0 credits
			// spent", which reads as a run where nothing was done and nothing paid.
			expect(ended!.stdout).toContain("not known, its database did not answer when this worker ended");
			expect(ended!.stdout).not.toMatch(/0 done, 0 failed, 0 queued, 0 leased/);
			const fleetDir = join(dir, "output", "outage", "fleet");
			const [runDir] = readdirSync(fleetDir);
			const summary = JSON.parse(readFileSync(join(fleetDir, runDir!, "summary.json"), "utf8"));
			expect(summary.fleet.targets).toBeNull();
			expect(summary.fleet.credits_spent).toBeNull();
		} finally {
			await pg.up();
		}
	}, 60_000);
});
