/**
 * The history row of `npm run bench` (`--only=history`): what the per-job history (src/history) costs
 * at scale — N targets (1,000,000; `--quick` 100,000) with an N-record history. It measures, each phase
 * in its own process (so peak RSS is that phase's alone):
 *
 * - rebuild: the store (`history.sqlite`) missing, every record folded from the run's results.jsonl;
 * - record: a run's path, each record noted as it is written (`record`, a batch per transaction) and
 *   saved at the end, into a store that holds the other runs: the per-target cost of the history;
 * - start-up: opening the saved history (what every run does first) and one lookup per target (what
 *   freshness and --retry-failed do while streaming the targets);
 * - the file's size, and a baseline process (the module loaded, nothing opened) for RSS.
 *
 * Wall and CPU times are of the phase's work only (module loading apart).
 */
import { execFileSync } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { exportLatest, HISTORY_FILE, openJobHistory } from "../src/history/index.js";
import { csvColumnsFor } from "../src/output/index.js";

export interface HistoryPhase {
	readonly wallMs: number;
	readonly cpuMs: number;
	readonly maxRssMb: number;
	readonly size?: number;
	readonly fresh?: number;
	/** export: the file's size. */
	readonly bytes?: number;
	/** start-up: wall time of opening the history alone. */
	readonly openMs?: number;
}

export interface HistoryBench {
	readonly targets: number;
	readonly resultsMb: number;
	readonly fileMb: number;
	readonly baseline: HistoryPhase;
	readonly rebuild: HistoryPhase;
	readonly record: HistoryPhase;
	readonly startup: HistoryPhase;
	readonly exportParquet: HistoryPhase;
	readonly exportCsv: HistoryPhase;
	readonly exportSqlite: HistoryPhase;
}

/** 32 well-mixed bits of `value` (murmur3's finalizer). */
function mix(value: number): number {
	let h = value >>> 0;
	h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
	h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
	return (h ^ (h >>> 16)) >>> 0;
}

/** A target id like the loader's (16 random-looking hex digits), cheap to make again in each phase. */
function idOf(index: number): string {
	return (
		mix(index).toString(16).padStart(8, "0") +
		mix(index + 0x9e3779b9)
			.toString(16)
			.padStart(8, "0")
	);
}

/** One run folder whose results.jsonl holds `targets` ok records of a realistic size (~420 bytes). */
function writeResults(jobDir: string, targets: number): number {
	const runDir = join(jobDir, "20260101T000000Z-aaaa");
	mkdirSync(runDir, { recursive: true });
	const fd = openSync(join(runDir, "results.jsonl"), "w");
	const finished = new Date().toISOString();
	let bytes = 0;
	try {
		let batch = "";
		for (let index = 0; index < targets; index += 1) {
			const id = idOf(index);
			batch += `${JSON.stringify({
				id,
				url: `https://shop.example/product/${index}?ref=bench`,
				status: "ok",
				http_status: 200,
				error: null,
				message: null,
				mode_requested: "auto",
				mode_used: "request",
				credits_used: 1,
				credits_remaining: 1e9 - index,
				attempts: 1,
				task_id: null,
				started_at: finished,
				finished_at: finished,
				duration_ms: 112,
				bytes: 48213,
				content_path: null,
				content_hash: id,
				change: "new",
				depth: null,
				parent: null,
				data: { price: 10 + (index % 100), title: `Product ${index}` },
			})}\n`;
			if (batch.length > 1 << 20) {
				bytes += writeSync(fd, batch);
				batch = "";
			}
		}
		bytes += writeSync(fd, batch);
	} finally {
		closeSync(fd);
	}
	return bytes;
}

function measure(work: () => Partial<HistoryPhase>): HistoryPhase {
	const cpu = process.cpuUsage();
	const started = performance.now();
	const extra = work();
	const wallMs = performance.now() - started;
	const used = process.cpuUsage(cpu);
	return {
		wallMs,
		cpuMs: (used.user + used.system) / 1000,
		maxRssMb: process.resourceUsage().maxRSS / 1024,
		...extra,
	};
}

/** One phase, in this (child) process. */
async function runPhase(phase: string, jobDir: string, targets: number): Promise<HistoryPhase> {
	if (phase.startsWith("export-")) {
		// The latest export of the same history (a price and a title per record), written and removed.
		const format = phase.slice("export-".length) as "csv" | "parquet" | "sqlite";
		const out = join(jobDir, `latest.${format}`);
		const cpu = process.cpuUsage();
		const started = performance.now();
		const records = await exportLatest(
			openJobHistory(jobDir),
			format,
			out,
			csvColumnsFor({ data: ["price", "title"] }),
		);
		const wallMs = performance.now() - started;
		const used = process.cpuUsage(cpu);
		const bytes = statSync(out).size;
		rmSync(out);
		return {
			wallMs,
			cpuMs: (used.user + used.system) / 1000,
			maxRssMb: process.resourceUsage().maxRSS / 1024,
			size: records,
			bytes,
		};
	}
	switch (phase) {
		case "baseline":
			return measure(() => ({}));
		case "rebuild":
			return measure(() => {
				const history = openJobHistory(jobDir);
				history.save();
				const size = history.size;
				history.close();
				return { size };
			});
		case "record": {
			// The run's records as the runner notes them (offsets into a results.jsonl not written: the
			// store's own cost alone), into a second run of the same targets, then the run's save.
			const history = openJobHistory(jobDir);
			const run = history.runIndex("20260102T000000Z-bbbb");
			const finished = new Date().toISOString();
			const records = Array.from({ length: 1000 }, (_, index) => ({
				id: "",
				url: `https://shop.example/product/${index}?ref=bench`,
				status: "ok" as const,
				http_status: 200,
				error: null,
				message: null,
				mode_requested: "auto" as const,
				mode_used: "request" as const,
				credits_used: 1,
				credits_remaining: 1e9,
				attempts: 1,
				task_id: null,
				started_at: finished,
				finished_at: finished,
				duration_ms: 112,
				bytes: 48213,
				content_path: null,
				content_hash: "0123456789abcdef",
				change: "unchanged" as const,
				depth: null,
				parent: null,
				data: { price: 10 + (index % 100), title: `Product ${index}` },
			}));
			const phase = measure(() => {
				let offset = 0;
				for (let index = 0; index < targets; index += 1) {
					const record = records[index % records.length]!;
					record.id = idOf(index);
					history.record(record, run, offset, offset + 420);
					offset += 420;
				}
				history.save();
				return { size: history.size };
			});
			history.close();
			return phase;
		}
		case "startup":
			return measure(() => {
				const opening = performance.now();
				const history = openJobHistory(jobDir);
				const openMs = performance.now() - opening;
				const now = Date.now();
				let fresh = 0;
				for (let index = 0; index < targets; index += 1) {
					const entry = history.get(idOf(index));
					if (entry?.okAt != null && now - entry.okAt < 86_400_000) fresh += 1;
				}
				return { size: history.size, fresh, openMs };
			});
		default:
			throw new Error(`unknown phase ${phase}`);
	}
}

function inChild(phase: string, jobDir: string, targets: number): HistoryPhase {
	const output = execFileSync(
		process.execPath,
		[fileURLToPath(import.meta.url), `--phase=${phase}`, jobDir, String(targets)],
		{ encoding: "utf8", maxBuffer: 1 << 20 },
	);
	return JSON.parse(output) as HistoryPhase;
}

export function benchHistory(quick: boolean): HistoryBench {
	// HISTORY_BENCH_TARGETS: another scale (the issue's figures: 200,000 and 1,000,000).
	const targets = Number(process.env.HISTORY_BENCH_TARGETS) || (quick ? 100_000 : 1_000_000);
	const jobDir = mkdtempSync(join(tmpdir(), "scrapejob-history-bench-"));
	try {
		const resultsBytes = writeResults(jobDir, targets);
		const baseline = inChild("baseline", jobDir, targets);
		const rebuild = inChild("rebuild", jobDir, targets);
		const fileBytes = statSync(join(jobDir, HISTORY_FILE)).size;
		const startup = inChild("startup", jobDir, targets);
		const exportParquet = inChild("export-parquet", jobDir, targets);
		const exportCsv = inChild("export-csv", jobDir, targets);
		const exportSqlite = inChild("export-sqlite", jobDir, targets);
		// Last: its run has no folder, so any later open would rebuild the store without it.
		const record = inChild("record", jobDir, targets);
		if (
			[rebuild, record, startup, exportParquet, exportCsv, exportSqlite].some((phase) => phase.size !== targets) ||
			startup.fresh !== targets
		) {
			throw new Error(`history bench: expected ${targets} targets, got ${JSON.stringify({ rebuild, startup })}`);
		}
		return {
			targets,
			resultsMb: resultsBytes / 2 ** 20,
			fileMb: fileBytes / 2 ** 20,
			baseline,
			rebuild,
			record,
			startup,
			exportParquet,
			exportCsv,
			exportSqlite,
		};
	} finally {
		if (process.env.HISTORY_BENCH_KEEP) console.error(jobDir);
		else rmSync(jobDir, { recursive: true, force: true });
	}
}

/** CPU per target in microseconds. */
function perTarget(cpuMs: number, targets: number): string {
	return `${((cpuMs * 1000) / targets).toFixed(1)} µs CPU a target`;
}

export function formatHistoryRow(result: HistoryBench): string {
	const row = (name: string, phase: HistoryPhase) =>
		`  ${name.padEnd(34)} wall ${phase.wallMs.toFixed(0).padStart(6)} ms · CPU ${phase.cpuMs.toFixed(0).padStart(6)} ms · peak RSS ${phase.maxRssMb.toFixed(0).padStart(4)} MB`;
	return [
		`history: ${result.targets.toLocaleString("en")} targets, a ${result.targets.toLocaleString("en")}-record history (results.jsonl ${result.resultsMb.toFixed(0)} MB; history.sqlite ${result.fileMb.toFixed(1)} MB, ${((result.fileMb * 2 ** 20) / result.targets).toFixed(0)} bytes a target)`,
		row("baseline (module loaded)", result.baseline),
		`${row("rebuild from results.jsonl", result.rebuild)} (${perTarget(result.rebuild.cpuMs, result.targets)})`,
		`${row("a run's records: record + save", result.record)} (${perTarget(result.record.cpuMs, result.targets)})`,
		`${row("start-up: open + a lookup a target", result.startup)} (open alone ${result.startup.openMs?.toFixed(0)} ms; ${perTarget(result.startup.cpuMs, result.targets)})`,
		`${row("export --latest --format parquet", result.exportParquet)} (${((result.exportParquet.bytes ?? 0) / 2 ** 20).toFixed(0)} MB)`,
		`${row("export --latest --format csv", result.exportCsv)} (${((result.exportCsv.bytes ?? 0) / 2 ** 20).toFixed(0)} MB)`,
		`${row("export --latest --format sqlite", result.exportSqlite)} (${((result.exportSqlite.bytes ?? 0) / 2 ** 20).toFixed(0)} MB)`,
	].join("\n");
}

const phaseArg = process.argv.find((arg) => arg.startsWith("--phase="));
if (phaseArg) {
	const [jobDir, targets] = process.argv.slice(3);
	process.stdout.write(JSON.stringify(await runPhase(phaseArg.slice("--phase=".length), jobDir!, Number(targets))));
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
	console.log(formatHistoryRow(benchHistory(process.argv.includes("--quick"))));
}
