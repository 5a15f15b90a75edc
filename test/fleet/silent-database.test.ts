import { createServer, type Socket } from "node:net";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { connectFleet, FleetDatabaseError } from "../../src/fleet/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { runCli } from "../helpers/run-cli.js";
import { thrownBy } from "../helpers/thrown-by.js";
import { until } from "../helpers/until.js";

const cluster = useCluster();

/** A port that accepts connections and never answers: a database host whose packets go nowhere. */
async function silentPort(): Promise<{ port: number; close: () => Promise<void> }> {
	const sockets = new Set<Socket>();
	const server = createServer((socket) => {
		sockets.add(socket);
		socket.on("error", () => undefined);
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as { port: number };
	return {
		port,
		close: async () => {
			for (const socket of sockets) socket.destroy();
			await new Promise<void>((resolve) => server.close(() => resolve()));
		},
	};
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
	for (const close of closers.splice(0)) await close();
});

describe("a fleet database that never answers", () => {
	it("fails the connection after the answer timeout instead of waiting for ever", async () => {
		const silent = await silentPort();
		closers.push(silent.close);
		const started = Date.now();
		const error = await connectFleet({
			url: `postgres://scrapejob:Hunter2-pw@127.0.0.1:${silent.port}/scraping`,
			answerTimeoutMs: 500,
		}).then(
			() => null,
			(caught: unknown) => caught,
		);
		expect(error).toBeInstanceOf(FleetDatabaseError);
		expect((error as Error).message).not.toContain("Hunter2-pw");
		expect(Date.now() - started).toBeLessThan(5000);
	});

	it("a worker started against it exits 3 having sent nothing, instead of hanging", async () => {
		const silent = await silentPort();
		closers.push(silent.close);
		const dir = tempDir();
		const job = writeJob(dir, "silent", "name: silent\ntargets:\n  - http://127.0.0.1:9/a\n");
		const run = await runCli(
			[
				"run",
				job,
				"--fleet",
				`postgres://scrapejob:Hunter2-pw@127.0.0.1:${silent.port}/scraping`,
				"--fleet-run",
				"night",
				"--out",
				`${dir}/out`,
			],
			{ env: { SCRAPEJOB_SCRAPER_KEY: "k", SCRAPEJOB_API_URL: "http://127.0.0.1:9", SCRAPEJOB_LOCK_LEASE_MS: "2000" } },
		);
		expect(run.code, run.stderr).toBe(3);
		expect(run.stderr).toContain("SCRAPEJOB_FLEET_DATABASE");
		expect(run.stdout + run.stderr).not.toContain("Hunter2-pw");
	}, 30_000);

	it("a schema upgrade (and a worker waiting for another's) is not cut off by the statements' answer timeout", async () => {
		const url = await (await cluster()).createDatabase();
		// Another worker upgrading the tables holds the upgrade's lock: this one waits for it, past its timeout.
		const holder = new pg.Client({ connectionString: url });
		await holder.connect();
		try {
			await holder.query("SELECT pg_advisory_lock(hashtext('scrapejob fleet schema scrapejob'))");
			const connecting = connectFleet({ url, answerTimeoutMs: 200 });
			const outcome = connecting.then(
				() => "connected",
				(error: unknown) => (error as Error).message,
			);
			await until(async () => {
				const { rows } = await holder.query(
					"SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
				);
				return rows[0].n > 0;
			}, "the second worker waiting for the upgrade's lock");
			// Time must pass for a timeout to fire: three of them.
			await new Promise((resolve) => setTimeout(resolve, 600));
			await holder.query("SELECT pg_advisory_unlock_all()");
			expect(await outcome).toBe("connected");
			await (await connecting).close();
		} finally {
			await holder.end();
		}
	});

	it("a transaction's statement left unanswered drops its connection at once: no ROLLBACK waits behind it for as long again", async () => {
		const fleet = await connectFleet({ url: await (await cluster()).createDatabase(), answerTimeoutMs: 1000 });
		try {
			const started = Date.now();
			const error = await thrownBy(fleet.transaction((query) => query("SELECT pg_sleep(10)")));
			expect((error as Error).message).toContain("Query read timeout");
			// One timeout, not two (the ROLLBACK behind the statement would have waited its own).
			expect(Date.now() - started).toBeLessThan(1800);
			expect(await fleet.query("SELECT 1 AS one")).toEqual([{ one: 1 }]);
		} finally {
			await fleet.close();
		}
	});
});
