import { describe, expect, it, onTestFinished } from "vitest";
import {
	claimTargets,
	completeTarget,
	type FleetTargetInput,
	finishFleetRun,
	isComplete,
	listFleetRuns,
	loadingTakeOver,
	openFleetRun,
} from "../../src/fleet/index.js";
import { loadJob } from "../../src/job/index.js";
import { type FleetJoin, joinFleetRun } from "../../src/run/fleet/fleet-open.js";
import { fleetFor, streamOf, targetsOn } from "../helpers/fleet.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { until } from "../helpers/until.js";

const cluster = useCluster();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A source that yields slowly and counts how often it is read; past its first ten targets it waits for
 * `rest` (the test's go-ahead), so another worker can join while it is surely still loading.
 */
function slowSource(targets: readonly FleetTargetInput[], everyMs: number, rest: Promise<void>) {
	const reads = { opened: 0, yielded: 0 };
	return {
		reads,
		source: async function* () {
			reads.opened++;
			for (const target of targets) {
				if (reads.yielded === 10) await rest;
				if (reads.yielded % 10 === 0) await sleep(everyMs);
				reads.yielded++;
				yield target;
			}
		},
	};
}

describe("opening and joining a fleet run", () => {
	it("two workers starting together: one loads, once; the other joins at once and helps while it loads", async () => {
		const url = await (await cluster()).createDatabase();
		const [first, second] = [await fleetFor(url), await fleetFor(url)];
		let goOn: () => void = () => undefined;
		const rest = new Promise<void>((resolve) => {
			goOn = resolve;
		});
		const { reads, source } = slowSource(targetsOn(60), 25, rest);
		const options = { jobName: "job", concurrencyLimit: 5, source, loaderLeaseMs: 10_000, loadBatchSize: 10 };
		const loading = openFleetRun(first, options);
		// The second worker starts once the first batch is in (a fixed wait lost that race on a busy machine).
		await until(async () => (await first.query<{ n: number }>("SELECT count(*)::int AS n FROM targets"))[0]?.n === 10);
		const joined = await openFleetRun(second, options);
		expect(joined).toMatchObject({ outcome: "joined", loaded: false, run: { state: "loading" } });
		if (joined.outcome === "complete" || joined.outcome === "changed") throw new Error("unreachable");
		// The joiner fetches what is loaded so far; the run is not complete while loading goes on.
		const [early] = await claimTargets(second, joined.worker, 1, 60_000);
		expect(early).toBeDefined();
		expect(await completeTarget(second, early!, {}, 1)).toBe(true);
		expect(await isComplete(second, joined.run.id)).toBe(false);
		goOn();
		const loaded = await loading;
		expect(loaded).toMatchObject({ outcome: "opened", loaded: true, run: { state: "running", id: joined.run.id } });
		expect(reads).toEqual({ opened: 1, yielded: 60 });
		const [count] = await first.query("SELECT count(*)::int AS n FROM targets WHERE run_id = $1", [joined.run.id]);
		expect(count).toEqual({ n: 60 });
	});

	it("a loader that died is replaced once its lease lapses, and the reload adds no duplicate", async () => {
		const url = await (await cluster()).createDatabase();
		const [first, second] = [await fleetFor(url), await fleetFor(url)];
		const targets = targetsOn(25);
		// The first loader stops after 10 targets and never renews its role.
		const stalled = async function* () {
			yield* targets.slice(0, 10);
			await new Promise(() => undefined);
		};
		void openFleetRun(first, {
			jobName: "job",
			concurrencyLimit: 5,
			source: stalled,
			loaderLeaseMs: 200,
			loadBatchSize: 5,
		}).catch(() => undefined);
		// Wait (on the database, not a timer: the machine may be busy) for the 10 to be in and the role to lapse.
		const state = async () =>
			(
				await second.query<{ id: string; loaded: number; lapsed: boolean }>(
					`SELECT r.id, (SELECT count(*)::int FROM targets t WHERE t.run_id = r.id) AS loaded,
						r.loader_until < now() AS lapsed
					FROM runs r WHERE r.job_name = 'job'`,
				)
			)[0];
		let seen = await state();
		for (let waited = 0; !(seen?.loaded === 10 && seen.lapsed) && waited < 10_000; waited += 20) {
			await sleep(20);
			seen = await state();
		}
		expect(seen).toMatchObject({ loaded: 10, lapsed: true });
		const run = seen!;
		const options = { jobName: "job", concurrencyLimit: 5, source: () => streamOf(targets), loaderLeaseMs: 10_000 };
		const taken = await openFleetRun(second, options);
		expect(taken).toMatchObject({ outcome: "joined", loaded: true, run: { state: "running" } });
		const [count] = await second.query("SELECT count(*)::int AS n FROM targets WHERE run_id = $1", [run!.id]);
		expect(count).toEqual({ n: 25 });
	});

	it("a worker asks whether to take over the loading while the run loads, and no more once it has seen it running", async () => {
		const url = await (await cluster()).createDatabase();
		const [first, second] = [await fleetFor(url), await fleetFor(url)];
		// The loader loads 10 targets, then holds the rest until the asks made while it loads are done.
		let release: () => void = () => undefined;
		const held = new Promise<void>((resolve) => {
			release = resolve;
		});
		const targets = targetsOn(20);
		const source = async function* () {
			yield* targets.slice(0, 10);
			await held;
			yield* targets.slice(10);
		};
		const loading = openFleetRun(first, {
			jobName: "job",
			concurrencyLimit: 5,
			source,
			loaderLeaseMs: 10_000,
			loadBatchSize: 10,
		});
		await sleep(50);
		const joined = await openFleetRun(second, { jobName: "job", concurrencyLimit: 5, source, loaderLeaseMs: 10_000 });
		if (joined.outcome === "complete" || joined.outcome === "changed") throw new Error("the new run is complete");
		// The database's statements of the take-over, counted as the worker sends them.
		let asked = 0;
		const counted = {
			...second,
			query: ((text, values, name) => {
				if (name === "fleet_take_over_loading") asked++;
				return second.query(text, values, name);
			}) as typeof second.query,
		};
		const takeOver = loadingTakeOver(counted, joined.worker, () => streamOf(targets), 10_000);
		// The loader is alive: not taken, asked each time.
		expect(await takeOver()).toBe(false);
		expect(await takeOver()).toBe(false);
		expect(asked).toBe(2);
		release();
		expect(await loading).toMatchObject({ run: { state: "running" } });
		// Running: the first ask after says so, and the worker never asks again.
		expect(await takeOver()).toBe(false);
		expect(await takeOver()).toBe(false);
		expect(await takeOver()).toBe(false);
		expect(asked).toBe(3);
	});

	it("a worker that saw the run running when it joined never asks to take over the loading: no statement on the run's row after an empty claim", async () => {
		const url = await (await cluster()).createDatabase();
		const dir = tempDir("scrapejob-fleet-open-");
		const file = writeJob(dir, "job", "name: job\ntargets:\n  - https://host0.test/p/0\n  - https://host0.test/p/1\n");
		const { job } = await loadJob(file, { cwd: dir, env: {} });
		const join = async () => {
			const joined: FleetJoin = await joinFleetRun(job, { url, concurrency: 2, runName: "nightly" });
			if (joined.outcome === "complete") throw new Error("the new run is complete");
			onTestFinished(() => joined.setup.fleet.close());
			return joined.setup;
		};
		// The opener loads the run and sees it running; a worker joining after sees it running too.
		const opener = await join();
		const joiner = await join();
		expect([opener.run.state, joiner.run.state]).toEqual(["running", "running"]);
		// Every statement that updates the run's row, matching rows or not, counted by the database.
		const fleet = await fleetFor(url);
		await fleet.query(`
			CREATE TABLE public.run_updates (n integer NOT NULL);
			INSERT INTO public.run_updates VALUES (0);
			CREATE FUNCTION public.count_run_updates() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				UPDATE public.run_updates SET n = n + 1;
				RETURN NULL;
			END $$;
			CREATE TRIGGER count_run_updates AFTER UPDATE ON runs FOR EACH STATEMENT EXECUTE FUNCTION public.count_run_updates();
		`);
		// As a worker asks after each empty claim (fleet-worker.ts: none given, nothing to take over).
		for (const setup of [opener, joiner]) {
			const takeOver = setup.takeOverLoading ?? (async () => false);
			for (let ask = 0; ask < 3; ask++) expect(await takeOver()).toBe(false);
		}
		const [counted] = await fleet.query("SELECT n FROM public.run_updates");
		expect(counted).toEqual({ n: 0 });
	});

	it("a named run that is complete is reported, never reopened; without a name the newest unfinished run is joined", async () => {
		const url = await (await cluster()).createDatabase();
		const fleet = await fleetFor(url);
		const open = (runName?: string) =>
			openFleetRun(fleet, { jobName: "job", concurrencyLimit: 2, source: () => streamOf(targetsOn(1)), runName });
		const named = await open("nightly-1");
		if (named.outcome === "complete" || named.outcome === "changed") throw new Error("unreachable");
		const [lease] = await claimTargets(fleet, named.worker, 1, 60_000);
		await completeTarget(fleet, lease!, {}, 1);
		expect(await finishFleetRun(fleet, named.run.id)).toBe(true);
		const again = await open("nightly-1");
		expect(again).toEqual({
			outcome: "complete",
			run: expect.objectContaining({ id: named.run.id, state: "complete" }),
		});
		const [workers] = await fleet.query("SELECT count(*)::int AS n FROM workers WHERE run_id = $1", [named.run.id]);
		expect(workers).toEqual({ n: 1 });
		// Unnamed: nothing unfinished, so a new run; then that one is joined.
		const fresh = await open();
		expect(fresh).toMatchObject({ outcome: "opened", loaded: true });
		const joined = await open();
		expect(joined).toMatchObject({ outcome: "joined", loaded: false, run: { id: fresh.run.id } });
		expect((await listFleetRuns(fleet, "job")).map((run) => run.id)).toEqual([fresh.run.id, named.run.id]);
		// Another job's runs are its own.
		const other = await openFleetRun(fleet, {
			jobName: "other",
			concurrencyLimit: 2,
			source: () => streamOf(targetsOn(1)),
		});
		expect(other.run.id).not.toBe(fresh.run.id);
	});

	it("loading streams in batches and skips URL keys it already has", async () => {
		const url = await (await cluster()).createDatabase();
		const fleet = await fleetFor(url);
		const targets = [...targetsOn(2500, 7), ...targetsOn(300, 7)];
		const opened = await openFleetRun(fleet, { jobName: "job", concurrencyLimit: 2, source: () => streamOf(targets) });
		const [counts] = await fleet.query(
			"SELECT count(*)::int AS targets, count(DISTINCT host)::int AS hosts FROM targets WHERE run_id = $1",
			[opened.run.id],
		);
		expect(counts).toEqual({ targets: 2500, hosts: 7 });
		const [hosts] = await fleet.query("SELECT count(*)::int AS n FROM hosts WHERE run_id = $1", [opened.run.id]);
		expect(hosts).toEqual({ n: 7 });
	});
});
