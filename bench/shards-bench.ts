/**
 * The shards row of `npm run bench` (`--only=shards`; issue #31; not in a full run): N shards of one
 * job on one key (one host, `shard_by: url`) against the emulator at limit L, each shard its own
 * `scrapejob run --shard I/N` process. It reports the key's fetches in flight over time (from the
 * emulator's ledger: each request from arrival to answer), against L: how soon the shards reach
 * 0.8·L together, the mean over the fetch window, the peak (never above L), 429s, and the span of
 * the fetches against one unsharded process's on the same targets.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDemoSite, startEmulator } from "../src/emulator/index.js";

const LIMIT = 10;
const SHARDS = 3;
const LATENCY_MS = 60;
const TARGETS = 1_500;

export interface ShardsBench {
	readonly limit: number;
	readonly shards: number;
	readonly targets: number;
	readonly latencyMs: number;
	readonly unshardedSpanMs: number;
	readonly shardedSpanMs: number;
	/** From the shards' first request to the first moment ≥ 0.8·L were in flight. */
	readonly msTo80: number | null;
	/** Mean in flight over the sharded fetch window, divided by L. */
	readonly meanShare: number;
	readonly peak: number;
	readonly tooMany: number;
	/** In flight, sampled every second of the sharded window. */
	readonly timeline: readonly number[];
	readonly verdicts: ReadonlyArray<{ readonly label: string; readonly met: boolean }>;
}

interface Span {
	readonly at: number;
	readonly finishedAt: number | null;
	readonly status?: number;
}

function spanOf(entries: readonly Span[]): { start: number; end: number } {
	let start = Number.POSITIVE_INFINITY;
	let end = 0;
	for (const entry of entries) {
		start = Math.min(start, entry.at);
		end = Math.max(end, entry.finishedAt ?? entry.at);
	}
	return { start, end };
}

function runCli(bin: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
	return new Promise((resolve, reject) => {
		const child = spawn(process.execPath, [bin, ...args], {
			env: { ...process.env, ...env },
			stdio: ["ignore", "ignore", process.env.DEBUG_SHARDS ? "inherit" : "ignore"],
		});
		child.on("error", reject);
		child.on("exit", (code) => resolve(code ?? 1));
	});
}

export async function benchShards(root: string, quick: boolean, log: (line: string) => void): Promise<ShardsBench> {
	const bin = join(root, "dist", "cli", "bin.js");
	if (!existsSync(bin)) throw new Error(`${bin} is missing: run npm run build first`);
	const targets = quick ? TARGETS / 5 : TARGETS;
	const site = await startDemoSite({ latencyMs: LATENCY_MS });
	const emulator = await startEmulator({ scenario: { concurrency: LIMIT } });
	const dir = mkdtempSync(join(tmpdir(), "scrapejob-bench-shards-"));
	try {
		const pages = Array.from({ length: targets }, (_, n) => `  - ${site.url}/page/${n + 1}`);
		const job = join(dir, "one-host.yaml");
		writeFileSync(
			job,
			["name: one-host", "defaults: {mode: request}", "shard_by: url", "targets:", ...pages, ""].join("\n"),
		);
		const env = { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl };
		const out = join(dir, "out");
		const ledger = emulator.ledger;

		log(`shards: one process, ${targets} pages of one host, limit ${LIMIT}, ${LATENCY_MS} ms a page`);
		if ((await runCli(bin, ["run", job, "--out", out, "--quiet"], env)) !== 0)
			throw new Error("the unsharded run failed");
		const single = spanOf(ledger.byEndpoint("realtime"));
		ledger.clear();

		log(`shards: ${SHARDS} processes (--shard I/${SHARDS}, shard_by: url) on the same key`);
		const codes = await Promise.all(
			Array.from({ length: SHARDS }, (_, index) =>
				runCli(bin, ["run", job, "--out", out, "--quiet", "--shard", `${index + 1}/${SHARDS}`], env),
			),
		);
		if (codes.some((code) => code !== 0)) throw new Error(`a shard failed (exit codes ${codes.join(", ")})`);
		const entries = ledger.byEndpoint("realtime") as readonly Span[];
		const window = spanOf(entries);
		const steps = ledger.inFlightOverTime("realtime");
		let peak = 0;
		let msTo80: number | null = null;
		let area = 0;
		for (let index = 0; index < steps.length; index += 1) {
			const step = steps[index]!;
			peak = Math.max(peak, step.inFlight);
			if (msTo80 === null && step.inFlight >= 0.8 * LIMIT) msTo80 = step.at - window.start;
			const next = steps[index + 1];
			if (next && Number.isFinite(next.at)) area += step.inFlight * (next.at - step.at);
		}
		const timeline: number[] = [];
		for (let at = window.start; at < window.end; at += 1000) {
			let inFlight = 0;
			for (const step of steps) {
				if (step.at > at) break;
				inFlight = step.inFlight;
			}
			timeline.push(inFlight);
		}
		const shardedSpanMs = window.end - window.start;
		const unshardedSpanMs = single.end - single.start;
		const meanShare = area / shardedSpanMs / LIMIT;
		const tooMany = entries.filter((entry) => entry.status === 429).length;
		return {
			limit: LIMIT,
			shards: SHARDS,
			targets,
			latencyMs: LATENCY_MS,
			unshardedSpanMs,
			shardedSpanMs,
			msTo80,
			meanShare,
			peak,
			tooMany,
			timeline,
			verdicts: [
				{ label: "≥ 0.8·L in flight within 10 s", met: msTo80 !== null && msTo80 <= 10_000 },
				{ label: "never above L", met: peak <= LIMIT },
				{ label: "no 429", met: tooMany === 0 },
				{ label: "span ≤ 1.3× one process's", met: shardedSpanMs <= 1.3 * unshardedSpanMs },
			],
		};
	} finally {
		await emulator.close();
		await site.close();
		rmSync(dir, { recursive: true, force: true });
	}
}

export function formatShardsRow(row: ShardsBench): string {
	const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
	return [
		`shards: ${row.shards} shards × one key (limit ${row.limit}), ${row.targets} pages of one host at ${row.latencyMs} ms`,
		`  fetch span: sharded ${seconds(row.shardedSpanMs)}, one process ${seconds(row.unshardedSpanMs)} (${(row.shardedSpanMs / row.unshardedSpanMs).toFixed(2)}×)`,
		`  in flight: ≥ 0.8·L after ${row.msTo80 === null ? "never" : `${row.msTo80} ms`}, mean ${(row.meanShare * row.limit).toFixed(1)} of ${row.limit} (${(row.meanShare * 100).toFixed(0)} %), peak ${row.peak}, 429s ${row.tooMany}`,
		`  in flight each second: ${row.timeline.join(" ")}`,
		...row.verdicts.map((verdict) => `  ${verdict.met ? "ok  " : "MISS"} ${verdict.label}`),
	].join("\n");
}
