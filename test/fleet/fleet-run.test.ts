import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { expectFleetRunDone, fleetFor } from "../helpers/fleet.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase } from "../helpers/postgres-cluster.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, runPrintedCommand, type SpawnedCli, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";
import { until } from "../helpers/until.js";

const cluster = useCluster();

/** A job of `count` targets on `origin` (`/p/0` …), written in a fresh folder. */
function listJob(origin: string, count: number, extra = ""): { dir: string; file: string } {
	const dir = tempDir("scrapejob-fleet-");
	const lines = Array.from({ length: count }, (_, i) => `  - ${origin}/p/${i}`).join("\n");
	const file = writeJob(dir, "fleetjob", `name: fleetjob\ndefaults:\n  mode: request\n${extra}targets:\n${lines}\n`);
	return { dir, file };
}

/** The fleet's records of the job (every run), read straight from PostgreSQL. */
function fleetRecords(url: string) {
	return queryDatabase<{ target_id: string; record: { credits_used: number; status: string; url: string } }>(
		url,
		"SELECT r.target_id, r.record FROM scrapejob.records r JOIN scrapejob.runs u ON u.id = r.run_id WHERE u.job_name = 'fleetjob'",
	);
}

/**
 * Note, on the database's clock, each claim of a target (the row turning `leased`: its worker and the
 * claim's `now()`) and each moment a host's politeness clock was moved on by a claimed fetch starting
 * (`next_allowed_at` moved while no claim is waiting to start). The fleet's tables are made first, so the
 * triggers are in place before any worker claims; what they write lives outside the fleet's schema.
 */
async function recordHostTurns(url: string): Promise<void> {
	const fleet = await fleetFor(url);
	await fleet.query(`
		CREATE TABLE public.turns (kind text NOT NULL, target_id text, worker text, host text NOT NULL, at timestamptz NOT NULL);
		CREATE FUNCTION public.note_claim() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.turns VALUES ('claim', NEW.target_id, NEW.lease_owner, NEW.host, now());
			RETURN NULL;
		END $$;
		CREATE TRIGGER note_claim AFTER UPDATE ON targets FOR EACH ROW
			WHEN (NEW.state = 'leased' AND OLD.state IS DISTINCT FROM 'leased') EXECUTE FUNCTION public.note_claim();
		CREATE FUNCTION public.note_start() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.turns VALUES ('start', NULL, NULL, NEW.host, now());
			RETURN NULL;
		END $$;
		CREATE TRIGGER note_start AFTER UPDATE ON hosts FOR EACH ROW
			WHEN (NEW.next_allowed_at IS DISTINCT FROM OLD.next_allowed_at AND NEW.starting_until IS NULL)
			EXECUTE FUNCTION public.note_start();
	`);
}

/**
 * Note, on the database's clock, each write of the fleet's pause (`runs.paused_until`, a 429's reset): when
 * the writer held the row (clock_timestamp() in the trigger, after any wait for a write before it), until
 * when, and whether the row it replaced already held a pause in force. A worker that learns of another's
 * 429 from the database pauses its own sends and writes the pause back: those writes are the `seen` ones,
 * made after the first pause was committed, so any claim that starts later reads it.
 */
async function recordPauses(url: string): Promise<void> {
	const fleet = await fleetFor(url);
	await fleet.query(`
		CREATE TABLE public.pauses (at timestamptz NOT NULL, until timestamptz NOT NULL, seen boolean NOT NULL);
		CREATE FUNCTION public.note_pause() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.pauses
			VALUES (clock_timestamp(), NEW.paused_until, coalesce(OLD.paused_until > clock_timestamp(), false));
			RETURN NULL;
		END $$;
		CREATE TRIGGER note_pause AFTER UPDATE OF paused_until ON runs FOR EACH ROW
			WHEN (NEW.paused_until IS NOT NULL) EXECUTE FUNCTION public.note_pause();
	`);
}

/** What `recordPauses` noted, in time order (µs since the epoch, the database's clock). */
async function pauseWrites(url: string): Promise<Array<{ at: number; until: number; seen: boolean }>> {
	const rows = await queryDatabase<{ at: string; until: string; seen: boolean }>(
		url,
		`SELECT (extract(epoch FROM at) * 1000000)::bigint AS at, (extract(epoch FROM until) * 1000000)::bigint AS until, seen
		FROM public.pauses ORDER BY at`,
	);
	return rows.map((row) => ({ at: Number(row.at), until: Number(row.until), seen: row.seen }));
}

interface Turn {
	readonly url: string;
	readonly worker: string;
	/** µs since the epoch, the database's clock. */
	readonly at: number;
}

/** What `recordHostTurns` noted, each kind in time order. */
async function hostTurns(url: string): Promise<{ claims: Turn[]; starts: number[] }> {
	const rows = await queryDatabase<{ kind: string; url: string; worker: string; at: string }>(
		url,
		`SELECT t.kind, coalesce(g.url, '') AS url, coalesce(t.worker, '') AS worker,
			(extract(epoch FROM t.at) * 1000000)::bigint AS at
		FROM public.turns t LEFT JOIN scrapejob.targets g ON g.target_id = t.target_id
		ORDER BY t.at`,
	);
	return {
		claims: rows.filter((row) => row.kind === "claim").map((row) => ({ ...row, at: Number(row.at) })),
		starts: rows.filter((row) => row.kind === "start").map((row) => Number(row.at)),
	};
}

function worker(
	file: string,
	dir: string,
	env: NodeJS.ProcessEnv,
	url: string,
	extra: string[] = [],
	runName = "nightly",
): SpawnedCli {
	return spawnCli(["run", file, "--quiet", "--json", "--fleet", url, "--fleet-run", runName, ...extra], env, dir);
}

describe("run --fleet: workers of one fleet run", () => {
	it("4 workers pay each target once, every target one record in the fleet, never above the key's limit, and a complete run is not reopened", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const site = await startTargetSite((_req, res) => setTimeout(() => html(res, "<p>page</p>"), 30));
		const { dir, file } = listJob(site.origin, 60);
		const workers = Array.from({ length: 4 }, () => worker(file, dir, service.env, url));
		const outcomes = await Promise.all(workers.map((w) => w.done));
		for (const outcome of outcomes) expect(outcome.code, outcome.stderr).toBe(0);
		const records = await fleetRecords(url);
		expect(records).toHaveLength(60);
		expect(new Set(records.map((row) => row.record.url)).size).toBe(60);
		// Credits in the records are the service's ledger: nothing paid twice, nothing paid unrecorded.
		const credits = records.reduce((sum, row) => sum + row.record.credits_used, 0);
		expect(credits).toBe(service.emulator.ledger.totalCharged());
		expect(service.emulator.ledger.maxInFlight()).toBeLessThanOrEqual(4);
		expect(service.emulator.ledger.rateLimits).toHaveLength(0);
		// Each worker's summary says the fleet run is complete, and how the work was shared (a worker that
		// started after the others had finished says the run was complete and ran nothing).
		for (const outcome of outcomes) expectFleetRunDone(outcome.stdout);
		const summaries = outcomes
			.map((outcome) => JSON.parse(outcome.stdout.trim().split("\n").at(-1)!))
			.filter((last) => last.skipped === undefined);
		expect(summaries.length).toBeGreaterThan(0);
		for (const summary of summaries) {
			expect(summary.complete).toBe(true);
			expect(summary.fleet.run).toBe("nightly");
			expect(summary.fleet.targets.done).toBe(60);
			// Nothing is left of a complete fleet run, whatever this worker's share of it was.
			expect(summary.targets).toMatchObject({ total: 60, remaining: 0 });
		}
		expect(summaries.reduce((sum, summary) => sum + summary.targets.done, 0)).toBe(60);
		// Each worker's own folder under <job>/fleet/, one writer each; nothing in the job's local store.
		const folders = readdirSync(join(dir, "output", "fleetjob", "fleet"));
		expect(folders).toHaveLength(summaries.length);
		// `fleet status --json`: the run, complete, with its four workers and its credits.
		const status = await spawnCli(["fleet", "status", file, "--json"], { SCRAPEJOB_FLEET_URL: url }, dir).done;
		expect(status.code, status.stderr).toBe(0);
		const [run] = JSON.parse(status.stdout);
		expect(run).toMatchObject({ job: "fleetjob", run: "nightly", state: "complete", in_flight: 0 });
		expect(run.targets).toEqual({ queued: 0, leased: 0, done: 60, failed: 0 });
		expect(run.workers.length).toBeGreaterThanOrEqual(summaries.length);
		expect(run.workers.length).toBeLessThanOrEqual(4);
		expect(run.credits.spent).toBe(service.emulator.ledger.totalCharged());
		const text = await spawnCli(["fleet", "status", file, "--fleet", url], {}, dir).done;
		expect(text.stdout).toContain("fleet run nightly · complete");
		expect(text.stdout).not.toContain("fleet-test-pw");
		// `export --latest --fleet`: one row per target, from the fleet's records.
		const exported = await spawnCli(
			["export", file, "--latest", "--fleet", url, "--format", "csv", "--out", join(dir, "latest.csv")],
			{},
			dir,
		).done;
		expect(exported.code, exported.stderr).toBe(0);
		const csv = readFileSync(join(dir, "latest.csv"), "utf8").trim().split("\n");
		expect(csv).toHaveLength(61);
		expect(new Set(csv.slice(1).map((line) => line.split(",")[1])).size).toBe(60);
		// The same name again (a pod restarted after the end): nothing to do, nothing sent.
		const charged = service.emulator.ledger.totalCharged();
		const again = await worker(file, dir, service.env, url).done;
		expect(again.code, again.stderr).toBe(0);
		expect(again.stdout).toContain('"skipped":"fleet_complete"');
		expect(service.emulator.ledger.totalCharged()).toBe(charged);
		// Each worker's metrics carry its worker id as a label (one series per worker in a shared file).
		const metricsFile = join(dir, "fleet.prom");
		const measured = await worker(
			file,
			dir,
			service.env,
			url,
			["--metrics", metricsFile, "--freshness", "1h"],
			"metrics-run",
		).done;
		expect(measured.code, measured.stderr).toBe(0);
		const measuredWorker = JSON.parse(measured.stdout.trim().split("\n").at(-1)!).fleet.worker as string;
		expect(readFileSync(metricsFile, "utf8")).toContain(`job="fleetjob",shard="",worker="${measuredWorker}"`);
		// The next night's fleet run with freshness: every target's newest record is ok and recent, none is paid.
		const next = await worker(file, dir, service.env, url, ["--freshness", "1h"], "next-night").done;
		expect(next.code, next.stderr).toBe(0);
		expect(service.emulator.ledger.totalCharged()).toBe(charged);
		// Its summary says why nothing was fetched, as a local run's does: every target fresh, none left.
		const nextSummary = JSON.parse(next.stdout.trim().split("\n").at(-1)!);
		expect(nextSummary).toMatchObject({ complete: true, targets: { total: 0, done: 0, remaining: 0, fresh: 60 } });
		// Without it, the next run pays them all again (the check above is not vacuous).
		const full = await worker(file, dir, service.env, url, [], "full").done;
		expect(full.code, full.stderr).toBe(0);
		expect(service.emulator.ledger.totalCharged()).toBe(2 * charged);
		// The password is in no file a worker wrote.
		for (const folder of folders) {
			for (const name of readdirSync(join(dir, "output", "fleetjob", "fleet", folder))) {
				const path = join(dir, "output", "fleetjob", "fleet", folder, name);
				if (name.endsWith(".jsonl") || name.endsWith(".json") || name.endsWith(".log"))
					expect(readFileSync(path, "utf8")).not.toContain("fleet-test-pw");
			}
		}
	}, 60_000);

	it("a worker that joins a busy fleet gets its part of the limit: the first worker gives back the slots over its share", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		let fetched = 0;
		const site = await startTargetSite((_req, res) => {
			fetched += 1;
			setTimeout(() => html(res, "<p>page</p>"), 200);
		});
		const { dir, file } = listJob(site.origin, 160);
		const first = worker(file, dir, service.env, url);
		// The first worker holds all four slots, and keeps each for its next target, before the second starts.
		await until(() => fetched >= 8, "the first worker's fetches");
		const second = worker(file, dir, service.env, url);
		const [a, b] = await Promise.all([first.done, second.done]);
		expect(a.code, a.stderr).toBe(0);
		expect(b.code, b.stderr).toBe(0);
		const done = [a, b].map((outcome) => JSON.parse(outcome.stdout.trim().split("\n").at(-1)!).targets.done as number);
		expect(done[0]! + done[1]!, JSON.stringify(done)).toBe(160);
		// Two slots each from the second worker's first poll on: about half of what was left is its (a
		// worker that kept every slot it had left it the fetches that came free between two of its claims).
		expect(done[1], JSON.stringify(done)).toBeGreaterThanOrEqual(30);
		expect(service.emulator.ledger.maxInFlight()).toBeLessThanOrEqual(4);
	}, 60_000);

	it("a budget below the job's cost is the fleet's: 4 workers never pass it together", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 8 });
		const site = await startTargetSite((_req, res) => setTimeout(() => html(res, "<p>page</p>"), 20));
		const { dir, file } = listJob(site.origin, 80, "max_credits: 25\n");
		const outcomes = await Promise.all(Array.from({ length: 4 }, () => worker(file, dir, service.env, url).done));
		expect(service.emulator.ledger.totalCharged()).toBeLessThanOrEqual(25);
		expect(service.emulator.ledger.totalCharged()).toBeGreaterThan(15);
		// Stopped by the budget: exit 1, the run not complete, the rest left queued for a larger budget.
		for (const outcome of outcomes) expect(outcome.code, outcome.stderr).toBe(1);
		const records = await fleetRecords(url);
		expect(records.reduce((sum, row) => sum + row.record.credits_used, 0)).toBe(service.emulator.ledger.totalCharged());
	}, 60_000);

	it("a retry after charged failed attempts is held to the fleet's max_credits, as a local run's", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({
			concurrency: 2,
			faults: [{ kind: "scraping_error", match: "/p/", message: "Page crashed", credits: 2 }],
		});
		const site = await startTargetSite((_req, res) => html(res, "<p>page</p>"));
		const { dir, file } = listJob(
			site.origin,
			3,
			"max_credits: 5\nconcurrency: 1\nbreaker: false\nretry: {attempts: 5, backoff_ms: 5, max_backoff_ms: 10}\n",
		);
		const outcome = await worker(file, dir, service.env, url).done;
		expect(outcome.code, outcome.stderr).toBe(1);
		// Two charged attempts fit in 5 credits beside the next attempt's booking; a third could not.
		expect(service.emulator.ledger.totalCharged()).toBe(4);
		expect(JSON.parse(outcome.stdout.trim().split("\n").at(-1)!)).toMatchObject({ stopped_reason: "budget_exhausted" });
	}, 60_000);

	it("adaptive mode's re-fetch in a stronger mode is reserved on the target's lease: 2 workers never pass the fleet's budget", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		// Datacenter requests to `localhost` get a block page (charged, useless): each target climbs to residential.
		const service = await useTestService({ concurrency: 4, block_datacenter: ["//localhost:"] });
		const port = new URL(service.site.url).port;
		const dir = tempDir("scrapejob-fleet-");
		const lines = Array.from({ length: 12 }, (_, i) => `  - http://localhost:${port}/product/${i + 1}`).join("\n");
		const file = writeJob(
			dir,
			"fleetjob",
			`name: fleetjob\nmax_credits: 10\nbreaker: false\ndefaults: {mode: adaptive}\ntargets:\n${lines}\n`,
		);
		const outcomes = await Promise.all([1, 2].map(() => worker(file, dir, service.env, url).done));
		const charged = service.emulator.ledger.totalCharged();
		expect(charged, outcomes.map((outcome) => outcome.stderr).join("\n")).toBeLessThanOrEqual(10);
		// Some targets did climb (two charges on one record): the budget held across re-fetches, not only first fetches.
		const records = await fleetRecords(url);
		expect(
			records.some((row) => row.record.credits_used > 1),
			outcomes.map((outcome) => `${outcome.code} ${outcome.stdout} ${outcome.stderr}`).join("\n"),
		).toBe(true);
		expect(records.reduce((sum, row) => sum + row.record.credits_used, 0)).toBe(charged);
		// The stop speaks of the fleet (workers to start again), never of a local --resume.
		const stopped = outcomes
			.map((outcome) => JSON.parse(outcome.stdout.trim().split("\n").at(-1)!))
			.filter((summary) => summary.stopped_reason === "budget_exhausted");
		expect(stopped.length).toBeGreaterThan(0);
		for (const summary of stopped) {
			expect(summary.stop_message).toContain("start workers again");
			expect(summary.stop_message).not.toContain("--resume");
		}
	}, 60_000);

	it("extract --fleet is refused before anything is read, naming the command that reads the fleet's records; run as printed, it writes them", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 2 });
		const site = await startTargetSite((_req, res) => html(res, "<p>page</p>"));
		const { dir, file } = listJob(site.origin, 5);
		const ran = await worker(file, dir, service.env, url).done;
		expect(ran.code, ran.stderr).toBe(0);
		const refused = await spawnCli(["extract", file, "--run", "latest", "--fleet", url], service.env, dir).done;
		expect(refused.code).toBe(2);
		expect(refused.stderr).not.toContain("fleet-test-pw");
		const printed = /the fleet's records: (.+latest\.csv)/.exec(refused.stderr)?.[1];
		expect(printed, refused.stderr).toContain('--fleet "$SCRAPEJOB_FLEET_URL"');
		const exported = await runPrintedCommand(printed!, { SCRAPEJOB_FLEET_URL: url }, dir).done;
		expect(exported.code, exported.stderr).toBe(0);
		expect(readFileSync(join(dir, "latest.csv"), "utf8").trim().split("\n")).toHaveLength(6);
	}, 60_000);

	it("export --fleet of a job the fleet never ran (a typo in its name): exit 2 naming the job, no file written", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 2 });
		const site = await startTargetSite((_req, res) => html(res, "<p>page</p>"));
		const { dir, file } = listJob(site.origin, 3);
		expect((await worker(file, dir, service.env, url).done).code).toBe(0);
		const other = writeJob(dir, "otherjob", readFileSync(file, "utf8").replace("name: fleetjob", "name: fleetjb"));
		const out = join(dir, "other.csv");
		const refused = await spawnCli(["export", other, "--latest", "--fleet", url, "--out", out], {}, dir).done;
		expect(refused.code).toBe(2);
		expect(refused.stderr).toContain("no fleet runs of job fleetjb in postgres://");
		expect(refused.stderr).not.toContain("fleet-test-pw");
		expect(existsSync(out)).toBe(false);
		// Without --fleet, in a worker's shell (SCRAPEJOB_FLEET_URL set), the local store is empty: the
		// message says how to reach the fleet's records, and that flag, added as printed, writes them.
		const local = await spawnCli(["export", file, "--latest", "--out", out], { SCRAPEJOB_FLEET_URL: url }, dir).done;
		expect(local.code).toBe(2);
		expect(local.stderr).toContain('exported with --fleet "$SCRAPEJOB_FLEET_URL"');
		expect(local.stderr).not.toContain("fleet-test-pw");
		const ran = await runPrintedCommand(
			`npx scrapejob export ${file} --latest --fleet "$SCRAPEJOB_FLEET_URL" --out ${out}`,
			{ SCRAPEJOB_FLEET_URL: url },
			dir,
		).done;
		expect(ran.code, ran.stderr).toBe(0);
		expect(readFileSync(out, "utf8").trim().split("\n")).toHaveLength(4);
	}, 60_000);

	it("export --fleet --format jsonl writes each record as its worker wrote it in results.jsonl, keys and fields in their order", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 2 });
		const site = await startTargetSite((req, res) =>
			html(res, `<h1>Title ${req.url}</h1><p class="sku">S${req.url}</p>`),
		);
		// Declared longest first: PostgreSQL's jsonb would hand them back shortest first.
		const { dir, file } = listJob(site.origin, 4, "extract:\n  title: {css: h1}\n  sku: {css: .sku}\n");
		const outcomes = await Promise.all(
			[0, 1].map(() => worker(file, dir, service.env, url, ["--out", join(dir, "out")]).done),
		);
		for (const outcome of outcomes) expect(outcome.code, outcome.stderr).toBe(0);
		const written = new Map<string, string>();
		const runs = join(dir, "out", "fleetjob", "fleet");
		for (const run of readdirSync(runs))
			for (const line of readFileSync(join(runs, run, "results.jsonl"), "utf8")
				.split("\n")
				.filter(Boolean))
				written.set(JSON.parse(line).id, line);
		const out = join(dir, "latest.jsonl");
		const exported = await spawnCli(
			["export", file, "--latest", "--fleet", url, "--format", "jsonl", "--out", out],
			{},
			dir,
		).done;
		expect(exported.code, exported.stderr).toBe(0);
		const lines = readFileSync(out, "utf8").split("\n").filter(Boolean);
		expect(lines).toHaveLength(4);
		for (const line of lines) expect(line).toBe(written.get(JSON.parse(line).id));
	}, 60_000);

	it("a worker stopped by the fleet's budget prints a worker command line that, pasted as printed, finishes the fleet run paying nothing twice", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const site = await startTargetSite((_req, res) => html(res, "<p>page</p>"));
		const { dir, file } = listJob(site.origin, 30, "max_credits: 10\n");
		// The URL given as a flag: the hint must not print it, nor lose it.
		const stopped = await spawnCli(["run", file, "--fleet", url, "--fleet-run", "budget"], service.env, dir).done;
		expect(stopped.code, stopped.stderr).toBe(1);
		const hint = /finish with `([^`]+)`/.exec(stopped.stdout)?.[1];
		expect(hint).toMatch(/--fleet-run budget --continue --max-credits \d+ --fleet "\$SCRAPEJOB_FLEET_URL"$/);
		expect(hint).not.toContain("fleet-test-pw");
		// Pasted where the variable is not set: refused, nothing sent (never a local run paying again).
		const sent = service.emulator.ledger.byEndpoint("realtime").length;
		const unset = await runPrintedCommand(hint!, service.env, dir).done;
		expect(unset.code).toBe(2);
		expect(unset.stderr).toContain("--fleet is empty");
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(sent);
		// Pasted with it set: the fleet run finishes, every target once.
		const finished = await runPrintedCommand(hint!, { ...service.env, SCRAPEJOB_FLEET_URL: url }, dir).done;
		expect(finished.code, finished.stderr).toBe(0);
		const records = await fleetRecords(url);
		expect(records).toHaveLength(30);
		const urls = service.emulator.ledger.byEndpoint("realtime").map((entry) => entry.url);
		expect(new Set(urls).size).toBe(urls.length);
	}, 60_000);

	it("a worker whose job file differs from the one its run was opened with (other targets or options) does not join it: exit 2, nothing sent; the run finishes with its own file", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const site = await startTargetSite((_req, res) => html(res, "<p>page</p>"));
		const { dir, file } = listJob(site.origin, 10, "max_credits: 4\n");
		const original = readFileSync(file, "utf8");
		const worker = (...flags: string[]) =>
			spawnCli(["run", file, "--quiet", "--fleet", url, ...flags], service.env, dir).done;
		// The run stops at its budget, unfinished.
		expect((await worker("--fleet-run", "nightly")).code).toBe(1);
		const sent = service.emulator.ledger.byEndpoint("realtime").length;
		// The job file edited meanwhile (another mode): its worker does not join, named or not.
		writeFileSync(file, original.replace("mode: request", "mode: browser"));
		const named = await worker("--fleet-run", "nightly", "--max-credits", "100");
		expect(named.code).toBe(2);
		expect(named.stderr).toContain("fleet run nightly was opened with another version of");
		expect(named.stderr).toContain("--fleet-run <another name>");
		const newest = await worker();
		expect(newest.code).toBe(2);
		expect(newest.stderr).toContain(
			"the newest unfinished fleet run of job fleetjob, nightly, was opened with another version",
		);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(sent);
		// The file it was opened with finishes it, each target once.
		writeFileSync(file, original);
		expect((await worker("--fleet-run", "nightly", "--max-credits", "100")).code).toBe(0);
		const urls = service.emulator.ledger.byEndpoint("realtime").map((entry) => entry.url);
		expect(urls).toHaveLength(10);
		expect(new Set(urls).size).toBe(10);
	}, 60_000);

	it("a worker that joins once the fleet's budget is spent, and fetched nothing, prints a --max-credits that finishes the run", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const site = await startTargetSite((_req, res) => html(res, "<p>page</p>"));
		const { dir, file } = listJob(site.origin, 10, "max_credits: 6\n");
		const env = { ...service.env, SCRAPEJOB_FLEET_URL: url };
		const first = await spawnCli(["run", file, "--fleet-run", "late"], env, dir).done;
		expect(first.code, first.stderr).toBe(1);
		// The budget is spent: this worker sends nothing, and its hint is the only one its operator sees.
		const sent = service.emulator.ledger.byEndpoint("realtime").length;
		const late = await spawnCli(["run", file, "--fleet-run", "late"], env, dir).done;
		expect(late.code, late.stderr).toBe(1);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(sent);
		const hint = /finish with `([^`]+)`/.exec(late.stdout)?.[1];
		// Spent 6, 7 targets left at 2 credits each (request mode's worst case): the fleet's 7, not this worker's 10.
		expect(hint).toMatch(/--fleet-run late --continue --max-credits 20$/);
		expect(late.stdout).toContain("remaining  7 targets: finish with");
		const finished = await runPrintedCommand(hint!, env, dir).done;
		expect(finished.code, finished.stderr).toBe(0);
		expect(await fleetRecords(url)).toHaveLength(10);
	}, 60_000);

	it("per_host_delay holds fleet-wide: no two fetches of the host closer than the delay, whichever worker sent them", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const delayMs = 200;
		// The fleet spaces a host's fetches by the database's clock: a claim waits for the host's
		// `next_allowed_at`, which the claimed fetch's start moves a delay on. Those starts are the source of
		// truth, read here on that one clock: arrival times at the site add the jitter of two more processes
		// (worker → service → site: a first request on a fresh connection, a process descheduled on a loaded
		// machine) that no fleet can space. On a loaded 2-core machine two arrivals came 148 ms apart while
		// their starts were 204 ms apart: the first request took 48 ms more from the worker to the service.
		await recordHostTurns(url);
		const service = await useTestService({ concurrency: 8 });
		const arrivals: Array<{ url: string; at: number }> = [];
		const site = await startTargetSite((req, res) => {
			arrivals.push({ url: new URL(req.url ?? "/", site.origin).href, at: Date.now() });
			html(res, "<p>page</p>");
		});
		const { dir, file } = listJob(site.origin, 12, `per_host_delay: ${delayMs}ms\n`);
		const outcomes = await Promise.all(Array.from({ length: 4 }, () => worker(file, dir, service.env, url).done));
		for (const outcome of outcomes) expect(outcome.code, outcome.stderr).toBe(0);
		expect(arrivals).toHaveLength(12);
		const { claims, starts } = await hostTurns(url);
		// One claim and one start per target, by more than one worker (else the test shows nothing fleet-wide).
		expect(claims).toHaveLength(12);
		expect(starts).toHaveLength(12);
		expect(new Set(claims.map((claim) => claim.worker)).size).toBeGreaterThan(1);
		const delayUs = delayMs * 1000;
		// Every fetch's start, whichever worker's, a whole delay after the one before: one clock, no tolerance.
		const startGaps = starts.slice(1).map((start, i) => start - starts[i]!);
		expect(Math.min(...startGaps)).toBeGreaterThanOrEqual(delayUs);
		// Why: each claim after the first came a delay after the previous fetch started, not merely after the
		// previous claim (a worker may start its claimed fetch late); and its own fetch started after it.
		for (const [i, claim] of claims.entries()) {
			expect(starts[i]).toBeGreaterThanOrEqual(claim.at);
			if (i > 0) expect(claim.at - starts[i - 1]!).toBeGreaterThanOrEqual(delayUs);
		}
		// The starts are the fetches: each target reached the site once, after the start its claim led to
		// (one machine's clock; Date.now() counts whole ms).
		expect(new Set(arrivals.map((arrival) => arrival.url))).toEqual(new Set(claims.map((claim) => claim.url)));
		for (const [i, claim] of claims.entries()) {
			const arrival = arrivals.find((one) => one.url === claim.url)!;
			expect(arrival.at * 1000 - starts[i]!).toBeGreaterThan(-1000);
		}
	}, 60_000);

	it("a 429 to one worker pauses every worker of the fleet until its reset", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		// Events, not a time after the 429: other workers learn of it by polling the database, and a loaded
		// machine delays each step (the pause's write, a poll, a request on its way) by any amount.
		await recordHostTurns(url);
		await recordPauses(url);
		// One 429 at the 20th page, mid-run, with a 3 s reset.
		const service = await useTestService({
			concurrency: 6,
			reset_seconds: 3,
			faults: [{ kind: "rate_limit", match: "/p/20", times: 1 }],
		});
		// No page is answered before all three workers have joined the run: each is polling when the 429 comes.
		const joined = until(
			async () =>
				(await queryDatabase<{ n: number }>(url, "SELECT count(*)::int AS n FROM scrapejob.workers"))[0]?.n === 3,
			"three workers joined",
		);
		const site = await startTargetSite((_req, res) => {
			joined.then(
				() => setTimeout(() => html(res, "<p>page</p>"), 40),
				() => res.destroy(),
			);
		});
		const { dir, file } = listJob(site.origin, 40);
		const outcomes = await Promise.all(Array.from({ length: 3 }, () => worker(file, dir, service.env, url).done));
		await joined;
		for (const outcome of outcomes) expect(outcome.code, outcome.stderr).toBe(0);
		const [window] = service.emulator.ledger.rateLimits;
		if (!window) throw new Error("no 429 was answered");
		// The answered worker paused the fleet; each of the other two read it and paused its own sends (a
		// worker's gate opening a pause window writes it back: one `seen` write each).
		const [first, ...later] = await pauseWrites(url);
		expect(first, "the 429 paused the fleet").toMatchObject({ seen: false });
		const seen = later.filter((write) => write.seen && write.at < first!.until);
		expect(seen).toHaveLength(2);
		const seenAt = seen[0]!.at;
		// No target claimed from the moment the pause was surely committed until its end (one clock).
		const { claims } = await hostTurns(url);
		expect(claims.filter((claim) => claim.at >= seenAt && claim.at < first!.until)).toEqual([]);
		// The 429's own target is sent again only after the reset (its worker paused from the answer on).
		const again = service.emulator.ledger
			.byEndpoint("realtime")
			.filter((entry) => entry.url?.endsWith("/p/20") && entry.at > window.at);
		expect(again.length).toBeGreaterThan(0);
		for (const entry of again) expect(entry.at).toBeGreaterThanOrEqual(window.untilMs);
		expect(await fleetRecords(url)).toHaveLength(40);
	}, 60_000);

	it("--retry-failed opens a fleet run of only the targets whose newest fleet record failed", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		// Two pages answer 404 the first time, 200 after.
		const answered = new Set<string>();
		const site = await startTargetSite((req, res) => {
			const path = req.url ?? "/";
			const first = !answered.has(path);
			answered.add(path);
			if (first && (path === "/p/1" || path === "/p/4")) html(res, "<p>gone</p>", 404);
			else html(res, "<p>page</p>");
		});
		const { dir, file } = listJob(site.origin, 6);
		const night = await worker(file, dir, service.env, url, [], "night").done;
		expect(night.code).toBe(1);
		const fetched = service.emulator.ledger.byEndpoint("realtime").length;
		const retry = await worker(file, dir, service.env, url, ["--retry-failed"], "retry").done;
		expect(retry.code, retry.stderr).toBe(0);
		const again = service.emulator.ledger.byEndpoint("realtime").slice(fetched);
		expect(again.map((entry) => new URL(entry.url!).pathname).sort()).toEqual(["/p/1", "/p/4"]);
		const records = await queryDatabase<{ run: string; status: string }>(
			url,
			"SELECT u.run_name AS run, r.record->>'status' AS status FROM scrapejob.records r JOIN scrapejob.runs u ON u.id = r.run_id WHERE u.run_name = 'retry'",
		);
		expect(records).toEqual([
			{ run: "retry", status: "ok" },
			{ run: "retry", status: "ok" },
		]);
	}, 60_000);

	it("refuses what a fleet worker cannot do, before anything is sent", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService();
		const { dir, file } = listJob("http://127.0.0.1:9", 3);
		const resumed = await worker(file, dir, service.env, url, ["--resume"]).done;
		expect(resumed.code).toBe(2);
		expect(resumed.stderr).toContain("not with --fleet: --resume");
		const retry = await worker(file, dir, service.env, url, ["--retry-failed", "20261127T000000Z-abc123"]).done;
		expect(retry.code).toBe(2);
		expect(retry.stderr).toContain("names a local run: with --fleet, --retry-failed takes no run id");
		// map: and search: sources: said, not dropped (a fleet would fetch the listed targets only and exit 0).
		const found = listJob("http://127.0.0.1:9", 1, 'sources:\n  - map: {domain: "127.0.0.1:9", max_urls: 5}\n');
		const mapped = await worker(found.file, found.dir, service.env, url).done;
		expect(mapped.code, mapped.stderr).toBe(2);
		expect(mapped.stderr).toContain("map: and search: sources are not run by a fleet");
		// A data contract: its verdict holds runs back in the job's local store.
		const held = listJob(
			"http://127.0.0.1:9",
			1,
			"extract: {title: {css: h1, required: true}}\nextract_checks: {min_fill: 0.5}\n",
		);
		const contract = await worker(held.file, held.dir, service.env, url).done;
		expect(contract.code, contract.stderr).toBe(2);
		expect(contract.stderr).toContain("data contracts hold runs back in the job's local store");
		const bad = await spawnCli(["run", file, "--fleet", "postgres://u:secret-pw@127.0.0.1:9/db"], service.env, dir)
			.done;
		expect(bad.code).toBe(3);
		expect(bad.stderr).not.toContain("secret-pw");
		expect(service.emulator.ledger.totalCharged()).toBe(0);
		// The account look-up (free) only: no scrape, no health check.
		expect(service.emulator.ledger.entries.map((entry) => entry.path)).toEqual(["/public/scraper"]);
		expect(existsSync(join(dir, "output", "fleetjob", "fleet"))).toBe(false);
		// Not a PostgreSQL URL, a schema name that cannot be: a usage error (exit 2), no retry can help.
		const notPostgres = await spawnCli(["run", file, "--fleet", "mysql://u:secret-pw@127.0.0.1:9/db"], service.env, dir)
			.done;
		expect(notPostgres.code, notPostgres.stderr).toBe(2);
		expect(notPostgres.stderr).toContain("expected postgres://");
		expect(notPostgres.stderr).not.toContain("secret-pw");
		const badSchema = await spawnCli(
			["run", file, "--fleet", url],
			{ ...service.env, SCRAPEJOB_FLEET_SCHEMA: "Fleet-B" },
			dir,
		).done;
		expect(badSchema.code, badSchema.stderr).toBe(2);
		expect(badSchema.stderr).toContain("lower-case letters, digits and _");
		expect(service.emulator.ledger.totalCharged()).toBe(0);
	}, 60_000);

	it("change tracking across fleet runs: each record is new, changed or unchanged against the target's newest ok record in the job's earlier fleet runs, changes.jsonl per worker names the fields", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const prices = new Map<string, string>();
		const site = await startTargetSite((req, res) =>
			html(res, `<h1 class="price">${prices.get(req.url ?? "") ?? "1.00"}</h1>`),
		);
		const { dir, file } = listJob(site.origin, 20, "extract:\n  price: {css: .price}\n");
		const night = async (name: string) => {
			const outcomes = await Promise.all([1, 2].map(() => worker(file, dir, service.env, url, [], name).done));
			for (const outcome of outcomes) expect(outcome.code, outcome.stderr).toBe(0);
			const lasts = outcomes.map((outcome) => JSON.parse(outcome.stdout.trim().split("\n").at(-1)!));
			// A worker that joins once the other has done every target finds the fleet run complete.
			for (const last of lasts) if (last.skipped !== undefined) expect(last.skipped).toBe("fleet_complete");
			const summaries = lasts.filter((last) => last.skipped === undefined);
			expect(summaries.length).toBeGreaterThan(0);
			return summaries;
		};
		const first = await night("night-1");
		expect(first.reduce((sum, summary) => sum + summary.changes.new, 0)).toBe(20);
		// Three prices move; the rest stay.
		for (const page of ["/p/3", "/p/7", "/p/11"]) prices.set(page, "2.50");
		const second = await night("night-2");
		const total = (key: "new" | "changed" | "unchanged") =>
			second.reduce((sum, summary) => sum + summary.changes[key], 0);
		expect({ new: total("new"), changed: total("changed"), unchanged: total("unchanged") }).toEqual({
			new: 0,
			changed: 3,
			unchanged: 17,
		});
		// The fleet's records carry `change`: what `export --latest --fleet` shows.
		const records = await queryDatabase<{ change: string; url: string }>(
			url,
			"SELECT r.record->>'change' AS change, r.record->>'url' AS url FROM scrapejob.records r JOIN scrapejob.runs u ON u.id = r.run_id WHERE u.run_name = 'night-2' AND r.record->>'change' = 'changed' ORDER BY 2",
		);
		expect(records.map((row) => new URL(row.url).pathname).sort()).toEqual(["/p/11", "/p/3", "/p/7"]);
		// Each worker's changes.jsonl holds the changes it found, with the field's old and new value.
		const lines = second.flatMap((summary) => {
			const path = join(dir, "output", "fleetjob", "fleet", summary.run_id, "changes.jsonl");
			return existsSync(path)
				? readFileSync(path, "utf8")
						.trim()
						.split("\n")
						.map((line) => JSON.parse(line))
				: [];
		});
		expect(lines).toHaveLength(3);
		for (const line of lines) expect(line.fields).toEqual({ price: { old: "1.00", new: "2.50" } });
	}, 60_000);
});
