/**
 * The fleet row of `npm run bench` (`--only=fleet`; not in a full run): one job on one key (limit L,
 * one fetch taking LATENCY_MS at the target) run by one local process, then as a fleet run of 1, 2 and
 * 4 worker processes through a throwaway PostgreSQL. For each: the span of the fetches (from the
 * emulator's ledger), the peak in flight against L, 429s, the fleet's transactions per second (what
 * the database sustained), and the CPU per target of each process (user + system, read from /proc while
 * it runs).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { startDemoSite, startEmulator } from "../src/emulator/index.js";
import { startCluster } from "../test/helpers/postgres-cluster.js";

const LIMIT = 20;
const LATENCY_MS = 100;
const TARGETS = 5_000;
const WORKERS = [1, 2, 4] as const;
/** Clock ticks per second of /proc's utime and stime (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100;

export interface FleetBenchRow {
	/** "local" or "fleet ×N". */
	readonly label: string;
	readonly spanMs: number;
	readonly peak: number;
	readonly tooMany: number;
	/** CPU ms per target of each process (a worker's: over the targets it fetched). */
	readonly cpuMsPerTarget: readonly number[];
	/** The database's committed transactions per second over the run (fleet rows). */
	readonly transactionsPerSecond: number | null;
}

export interface FleetBench {
	readonly limit: number;
	readonly targets: number;
	readonly latencyMs: number;
	readonly rows: readonly FleetBenchRow[];
	readonly verdicts: ReadonlyArray<{ readonly label: string; readonly met: boolean }>;
}

/** A CLI process, its CPU sampled from /proc until it ends; its summary line (--json) kept. */
function runCli(
	bin: string,
	args: string[],
	env: NodeJS.ProcessEnv,
): Promise<{ code: number; cpuMs: number; summary: { targets?: { done?: number } } | null }> {
	return new Promise((resolve, reject) => {
		const child = spawn(process.execPath, [bin, ...args], {
			env: { ...process.env, ...env },
			stdio: ["ignore", "pipe", process.env.DEBUG_FLEET ? "inherit" : "ignore"],
		});
		let stdout = "";
		child.stdout.on("data", (chunk: Buffer) => {
			stdout += chunk.toString();
		});
		let cpuMs = 0;
		const sample = () => {
			try {
				const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
				// utime and stime are fields 14 and 15 of stat; 12 and 13 after the "pid (comm) " prefix.
				cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
			} catch {
				// Ended between two samples: the last reading stands (at most 50 ms short).
			}
		};
		const timer = setInterval(sample, 50);
		child.on("error", reject);
		child.on("exit", (code) => {
			clearInterval(timer);
			let summary = null;
			try {
				summary = JSON.parse(stdout.trim().split("\n").at(-1) ?? "null");
			} catch {
				summary = null;
			}
			resolve({ code: code ?? 1, cpuMs, summary });
		});
	});
}

async function committed(url: string): Promise<number> {
	const client = new pg.Client({ connectionString: url });
	await client.connect();
	try {
		const { rows } = await client.query<{ n: string }>(
			"SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()",
		);
		return Number(rows[0]?.n ?? 0);
	} finally {
		await client.end();
	}
}

export async function benchFleet(root: string, quick: boolean, log: (line: string) => void): Promise<FleetBench> {
	const bin = join(root, "dist", "cli", "bin.js");
	if (!existsSync(bin)) throw new Error(`${bin} is missing: run npm run build first`);
	const targets = quick ? TARGETS / 5 : TARGETS;
	const site = await startDemoSite({ latencyMs: LATENCY_MS });
	const emulator = await startEmulator({ scenario: { concurrency: LIMIT, credits: 1e9 } });
	const cluster = await startCluster();
	const dir = mkdtempSync(join(tmpdir(), "scrapejob-bench-fleet-"));
	const rows: FleetBenchRow[] = [];
	try {
		const pages = Array.from({ length: targets }, (_, n) => `  - ${site.url}/page/${n + 1}`);
		const job = join(dir, "fleet.yaml");
		writeFileSync(job, ["name: fleet", "defaults: {mode: request}", "targets:", ...pages, ""].join("\n"));
		const env = { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl };
		const ledger = emulator.ledger;
		const measure = (label: string, cpu: number[], tps: number | null): FleetBenchRow => {
			const entries = ledger.byEndpoint("realtime");
			let start = Number.POSITIVE_INFINITY;
			let end = 0;
			for (const entry of entries) {
				start = Math.min(start, entry.at);
				end = Math.max(end, entry.finishedAt ?? entry.at);
			}
			const peak = Math.max(0, ...ledger.inFlightOverTime("realtime").map((step) => step.inFlight));
			return {
				label,
				spanMs: end - start,
				peak,
				tooMany: entries.filter((entry) => entry.status === 429).length,
				cpuMsPerTarget: cpu,
				transactionsPerSecond: tps,
			};
		};

		log(`fleet: one local process, ${targets} pages, limit ${LIMIT}, ${LATENCY_MS} ms a page`);
		ledger.clear();
		const local = await runCli(bin, ["run", job, "--out", join(dir, "local"), "--quiet", "--json"], env);
		if (local.code !== 0) throw new Error(`the local run failed (exit ${local.code})`);
		rows.push(measure("local", [local.cpuMs / targets], null));

		for (const workers of WORKERS) {
			log(`fleet: ${workers} worker${workers === 1 ? "" : "s"} on one fleet run`);
			const url = await cluster.createDatabase();
			ledger.clear();
			const started = performance.now();
			// The tables exist before the clock of the database's counters starts: the first worker creates them.
			const before = await committed(url).catch(() => 0);
			const outcomes = await Promise.all(
				Array.from({ length: workers }, (_, index) =>
					runCli(
						bin,
						["run", job, "--out", join(dir, `fleet-${workers}-${index}`), "--quiet", "--json", "--fleet", url],
						env,
					),
				),
			);
			const seconds = (performance.now() - started) / 1000;
			if (outcomes.some((outcome) => outcome.code !== 0))
				throw new Error(`a worker failed (exit codes ${outcomes.map((outcome) => outcome.code).join(", ")})`);
			const tps = ((await committed(url)) - before) / seconds;
			rows.push(
				measure(
					`fleet ×${workers}`,
					outcomes.map((outcome) => outcome.cpuMs / Math.max(1, outcome.summary?.targets?.done ?? 1)),
					tps,
				),
			);
		}
		const localSpan = rows[0]!.spanMs;
		return {
			limit: LIMIT,
			targets,
			latencyMs: LATENCY_MS,
			rows,
			verdicts: [
				...rows
					.slice(1)
					.map((row) => ({ label: `${row.label}: span ≤ 1.10× local`, met: row.spanMs <= 1.1 * localSpan })),
				{ label: "never above L", met: rows.every((row) => row.peak <= LIMIT) },
				{ label: "peak == L", met: rows.every((row) => row.peak === LIMIT) },
				{ label: "no 429", met: rows.every((row) => row.tooMany === 0) },
			],
		};
	} finally {
		await cluster.stop();
		await emulator.close();
		await site.close();
		rmSync(dir, { recursive: true, force: true });
	}
}

export function formatFleetRow(bench: FleetBench): string {
	const lines = [
		`fleet (limit ${bench.limit}, ${bench.targets} pages at ${bench.latencyMs} ms):`,
		"run        span      ratio  peak  429  DB tx/s  CPU ms/target (each process)",
	];
	const localSpan = bench.rows[0]?.spanMs ?? 1;
	for (const row of bench.rows) {
		lines.push(
			[
				row.label.padEnd(10),
				`${(row.spanMs / 1000).toFixed(2)} s`.padEnd(9),
				`${(row.spanMs / localSpan).toFixed(2)}×`.padEnd(6),
				String(row.peak).padEnd(5),
				String(row.tooMany).padEnd(4),
				(row.transactionsPerSecond === null ? "–" : row.transactionsPerSecond.toFixed(0)).padEnd(8),
				row.cpuMsPerTarget.map((ms) => ms.toFixed(3)).join(" "),
			].join(" "),
		);
	}
	lines.push(...bench.verdicts.map((verdict) => `${verdict.met ? "PASS" : "FAIL"}  ${verdict.label}`));
	return lines.join("\n");
}
