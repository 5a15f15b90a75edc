import { readdirSync, readFileSync, statSync } from "node:fs";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it, onTestFinished } from "vitest";
import { type Emulator, startEmulator } from "../../src/emulator/index.js";
import { runJobFile } from "../../src/index.js";
import { ResumeError } from "../../src/run/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { html, startTargetSite } from "../helpers/target-site.js";

const cluster = useCluster();

/** A job of `count` targets on `origin` (`/p/0` …), written in a fresh folder. */
function listJob(origin: string, count: number): { dir: string; file: string } {
	const dir = tempDir("scrapejob-fleet-library-");
	const lines = Array.from({ length: count }, (_, i) => `  - ${origin}/p/${i}`).join("\n");
	const file = writeJob(dir, "fleetjob", `name: fleetjob\ndefaults:\n  mode: request\ntargets:\n${lines}\n`);
	return { dir, file };
}

/** The fleet's records of the job (every run), read straight from PostgreSQL. */
async function fleetRecords(url: string): Promise<Array<{ url: string; credits_used: number }>> {
	const client = new pg.Client({ connectionString: url });
	await client.connect();
	try {
		const { rows } = await client.query(
			"SELECT r.record FROM scrapejob.records r JOIN scrapejob.runs u ON u.id = r.run_id WHERE u.job_name = 'fleetjob'",
		);
		return rows.map((row: { record: { url: string; credits_used: number } }) => row.record);
	} finally {
		await client.end();
	}
}

describe("runJobFile as a fleet worker (fleet, fleetRun)", () => {
	it("works beside a CLI worker on one fleet run: every target one record in the fleet, paid once; summary.fleet says where the fleet stands; a complete run is not reopened", async () => {
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const site = await startTargetSite((_req, res) => setTimeout(() => html(res, "<p>page</p>"), 20));
		const { dir, file } = listJob(site.origin, 30);
		const [library, cli] = await Promise.all([
			runJobFile(file, { env: service.env, cwd: dir, fleet: url, fleetRun: "nightly" }),
			runCli(["run", file, "--quiet", "--json", "--fleet", url, "--fleet-run", "nightly"], {
				env: service.env,
				cwd: dir,
			}),
		]);
		expect(cli.code, cli.stderr).toBe(0);
		const records = await fleetRecords(url);
		expect(records).toHaveLength(30);
		expect(new Set(records.map((record) => record.url)).size).toBe(30);
		expect(records.reduce((sum, record) => sum + record.credits_used, 0)).toBe(service.emulator.ledger.totalCharged());
		// The library's summary is a fleet worker's: the fleet run, complete, whoever fetched what.
		expect(library.fleet).toMatchObject({ run: "nightly", targets: { done: 30 } });
		expect(library.complete).toBe(true);
		expect(library.run_dir).toContain(join("fleetjob", "fleet"));
		const cliSummary = JSON.parse(cli.stdout.trim().split("\n").at(-1)!);
		expect(library.targets.done + cliSummary.targets.done).toBe(30);
		// The same name again: nothing to do, nothing sent — said as the CLI says it.
		const charged = service.emulator.ledger.totalCharged();
		const again = runJobFile(file, { env: service.env, cwd: dir, fleet: url, fleetRun: "nightly" });
		await expect(again).rejects.toThrow(ResumeError);
		await expect(again).rejects.toThrow("fleetjob: fleet run nightly is complete, nothing to do");
		expect(service.emulator.ledger.totalCharged()).toBe(charged);
	}, 60_000);

	it("refuses a fleet run name without a fleet, and what a fleet worker cannot do, before anything is sent, naming the options", async () => {
		const url = await (await cluster()).createDatabase();
		const service = await useTestService();
		const { dir, file } = listJob("http://127.0.0.1:9", 3);
		await expect(runJobFile(file, { env: service.env, cwd: dir, fleetRun: "nightly" })).rejects.toThrow(
			"fleetRun names a fleet run: it needs the fleet option (or SCRAPEJOB_FLEET_URL)",
		);
		await expect(runJobFile(file, { env: service.env, cwd: dir, fleet: url, resume: true })).rejects.toThrow(
			"not with fleet: resume (use continue: true",
		);
		// SCRAPEJOB_FLEET_URL of the options' env is the fleet as well.
		await expect(
			runJobFile(file, { env: { ...service.env, SCRAPEJOB_FLEET_URL: url }, cwd: dir, shard: "1/2" }),
		).rejects.toThrow("not with fleet: shard");
		expect(service.emulator.ledger.entries).toEqual([]);
	}, 60_000);
});

describe("runJobFile as a fleet worker, refused in the library's words", () => {
	it("a fleet run opened with another version of the job file: open a new one with fleetRun", async () => {
		const url = await (await cluster()).createDatabase();
		const service = await useTestService();
		const site = await startTargetSite((_req, res) => html(res, "<p>page</p>"));
		const { dir, file } = listJob(site.origin, 3);
		// A budget below one fetch's worst case: the fleet run stays unfinished.
		const first = await runJobFile(file, {
			env: service.env,
			cwd: dir,
			fleet: url,
			fleetRun: "nightly",
			maxCredits: 1,
		});
		expect(first.complete).toBe(false);
		writeJob(dir, "fleetjob", `name: fleetjob\ndefaults:\n  mode: request\ntargets:\n  - ${site.origin}/other\n`);
		await expect(runJobFile(file, { env: service.env, cwd: dir, fleet: url, fleetRun: "nightly" })).rejects.toThrow(
			"or open a new run of this one with fleetRun <another name> (nothing was sent)",
		);
	}, 60_000);
});

/**
 * A service in front of the emulator that echoes `secret` in every task id (and strips it from the task
 * id polled back): whatever the run logs of a task carries the secret, so a run.log shows whether it
 * was scrubbed.
 */
async function echoingProxy(emulator: Emulator, secret: string): Promise<string> {
	const target = new URL(emulator.scraperUrl);
	const prefix = `task-${secret}-`;
	const server = createServer((req, res) => {
		const path = (req.url ?? "/").replaceAll(encodeURIComponent(prefix), "");
		const chunks: Buffer[] = [];
		req.on("data", (chunk: Buffer) => chunks.push(chunk));
		req.on("end", () => {
			const forward = request(
				{ host: target.hostname, port: target.port, method: req.method, path, headers: req.headers },
				(answer) => {
					const parts: Buffer[] = [];
					answer.on("data", (chunk: Buffer) => parts.push(chunk));
					answer.on("end", () => {
						let body = Buffer.concat(parts);
						const headers = { ...answer.headers };
						if (String(headers["content-type"]).includes("json")) {
							const echoed = JSON.stringify(prefix).slice(1, -1);
							body = Buffer.from(body.toString("utf8").replace(/"task_id":"([^"]+)"/g, `"task_id":"${echoed}$1"`));
							headers["content-length"] = String(body.length);
						}
						res.writeHead(answer.statusCode ?? 502, headers).end(body);
					});
				},
			);
			forward.on("error", () => res.destroy());
			forward.end(Buffer.concat(chunks));
		});
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	onTestFinished(
		() =>
			new Promise<void>((resolve) => {
				server.close(() => resolve());
				server.closeAllConnections();
			}),
	);
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}${target.pathname}`;
}

/** A Healthchecks.io-style endpoint that answers every ping. */
async function pingServer(): Promise<string> {
	const server = createServer((_req, res) => res.writeHead(200).end("OK"));
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hc-secret-uuid-4242`;
}

/** Every file under `dir`, as text. */
function filesUnder(dir: string): Array<{ name: string; text: string }> {
	return (readdirSync(dir, { recursive: true }) as string[])
		.map((name) => ({ name, path: join(dir, name) }))
		.filter(({ path }) => statSync(path).isFile())
		.map(({ name, path }) => ({ name, text: readFileSync(path).toString("latin1") }));
}

describe("one set-up, one list of secrets (prepareRuns)", () => {
	it("the --healthcheck URL and the fleet's password, echoed by the service in every task id, reach no file and no message, through either entry point", async () => {
		const server = await cluster();
		const healthcheck = await pingServer();
		const site = await startTargetSite((_req, res) => setTimeout(() => html(res, "<p>page</p>"), 20));
		for (const entry of ["cli", "library"] as const) {
			const url = await server.createDatabase();
			// Every fetch a task, so task ids (and the secrets in them) are in every run.log.
			const emulator = await startEmulator({ scenario: { concurrency: 4, latency_ms: 30, timeout_ms: 5 } });
			onTestFinished(() => emulator.close());
			const scraperUrl = await echoingProxy(emulator, `${healthcheck}~${server.password}`);
			const env = {
				SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey,
				SCRAPEJOB_API_URL: emulator.apiUrl,
				SCRAPEJOB_SCRAPER_URL: scraperUrl,
			};
			const { dir, file } = listJob(site.origin, 6);
			let said = "";
			if (entry === "cli") {
				const cli = await runCli(["run", file, "--fleet", url, "--healthcheck", healthcheck, "--json"], {
					env,
					cwd: dir,
				});
				expect(cli.code, cli.stderr).toBe(0);
				said = cli.stdout + cli.stderr;
			} else {
				const summary = await runJobFile(file, { env, cwd: dir, fleet: url, healthcheck });
				expect(summary.complete).toBe(true);
				said = JSON.stringify(summary);
			}
			expect(said, entry).not.toContain(healthcheck);
			expect(said, entry).not.toContain(server.password);
			const files = filesUnder(join(dir, "output"));
			const runLog = files.find(({ name }) => name.endsWith("run.log"));
			// The echoes reached run.log, scrubbed: both secrets replaced where the task ids were logged.
			expect(runLog?.text, entry).toContain('"task_id":"task-[redacted]~[redacted]-');
			for (const { name, text } of files) {
				expect(text, `${entry}: ${name}`).not.toContain(healthcheck);
				expect(text, `${entry}: ${name}`).not.toContain(server.password);
			}
		}
	}, 60_000);
});
