import { dirname } from "node:path";
import {
	errorMessage,
	lazyModule,
	makeDirectory,
	readRegularFile,
	withFileMutex,
	writeFileAtomic,
} from "../common/index.js";
import { initialMetrics, labelValues, METRIC_SPECS, type RunMetrics } from "./run-metrics.js";

/** The exposition format's writer, loaded only by runs that write metrics. */
const promClient = lazyModule<typeof import("prom-client")>("prom-client");

/** A metrics file larger than this is not read back (its series are not kept): it is not one of ours. */
const METRICS_FILE_MAX_BYTES = 16 * 1024 * 1024;

/** How often the file is written while the run goes on (and once more at its end). */
export const METRICS_INTERVAL_MS = 10_000;

export interface MetricsFileOptions {
	/** The `.prom` file (node_exporter's textfile collector reads `*.prom` in its folder). */
	readonly path: string;
	readonly metrics: RunMetrics;
	/** A write that failed (full disk, no folder): said, never fatal to the run. */
	readonly warn: (message: string) => void;
	/** @default METRICS_INTERVAL_MS */
	readonly intervalMs?: number;
	/** Called before each timed write, to bring the figures up to date (duration). */
	readonly refresh?: () => void;
}

export interface MetricsFile {
	/** Write the figures now (writes are made one after the other: the last one called wins). */
	write(): Promise<void>;
	/** Stop the timer (the caller writes the last figures first). */
	close(): void;
}

type Series = Map<string, RunMetrics>;
const seriesKey = (metrics: Pick<RunMetrics, "job" | "shard" | "worker">) =>
	JSON.stringify([metrics.job, metrics.shard, metrics.worker]);

/**
 * `--metrics FILE`: the Prometheus text format, written atomically (a temp file renamed over it, so the
 * collector never reads half a file) now, every `intervalMs`, and when the caller says. Series of other
 * jobs or shards in the file when it is written are kept (several jobs may share one file), and so is this job's
 * `scrapejob_run_last_success_timestamp_seconds` until a run succeeds again.
 */
export function openMetricsFile(options: MetricsFileOptions): MetricsFile {
	let failed = false;
	let first = true;
	let chain = Promise.resolve();
	const writeNow = async () => {
		try {
			makeDirectory(dirname(options.path));
			// The others' series as they are now, under the file's lock: shards of a job write one file at
			// once (and end at once), and series read only at the start were written back stale, or dropped.
			await withFileMutex(options.path, async () => {
				const others = readSeries(options.path);
				others.delete(seriesKey(options.metrics));
				if (first) dropEndedWorkers(others, options.metrics);
				writeFileAtomic(options.path, await renderMetrics([...others.values(), options.metrics]));
			});
			first = false;
			failed = false;
		} catch (error) {
			// Said once per failing streak: a full disk must not flood the log every 10 s.
			if (!failed) options.warn(`metrics: could not write ${options.path}: ${errorMessage(error)}`);
			failed = true;
		}
	};
	// A side channel: whatever a write meets, the run goes on (docs/behaviour.md, "Metrics and pings").
	const write = () => {
		chain = chain.then(writeNow).catch(() => undefined);
		return chain;
	};
	void write();
	const timer = setInterval(() => {
		options.refresh?.();
		void write();
	}, options.intervalMs ?? METRICS_INTERVAL_MS);
	timer.unref();
	return { write, close: () => clearInterval(timer) };
}

/**
 * The last success a previous metrics file recorded for this job and shard (0: none, or no file): the newest
 * of its series, a fleet's workers' included (each fleet worker is a new series, which would start at 0).
 */
export function previousLastSuccess(path: string, job: string, shard: string): number {
	let newest = 0;
	for (const metrics of readSeries(path).values()) {
		if (metrics.job === job && metrics.shard === shard) newest = Math.max(newest, metrics.lastSuccessSeconds);
	}
	return newest;
}

/**
 * A fleet worker's first write drops the series of the job's other workers with nothing in flight: a
 * worker id is new with each process, so the series of workers long gone would pile up in the file (and
 * each would age past an alert's threshold). A worker running beside it is written back at its next write.
 */
function dropEndedWorkers(series: Series, mine: RunMetrics): void {
	if (mine.worker === "") return;
	for (const [key, metrics] of series) {
		if (metrics.job === mine.job && metrics.shard === mine.shard && metrics.worker !== "" && metrics.inflight === 0)
			series.delete(key);
	}
}

/** The metrics as Prometheus text, through prom-client (one registry per write: the figures are the run's, set whole). */
export async function renderMetrics(all: readonly RunMetrics[]): Promise<string> {
	const { Registry, Gauge, Counter } = promClient();
	const registry = new Registry();
	for (const spec of METRIC_SPECS) {
		const labelNames = ["job", "shard", "worker", ...(spec.label ? [spec.label.name] : [])];
		const metric =
			spec.type === "gauge"
				? new Gauge({ name: spec.name, help: spec.help, labelNames, registers: [registry] })
				: new Counter({ name: spec.name, help: spec.help, labelNames, registers: [registry] });
		for (const metrics of all) {
			for (const value of labelValues(spec, metrics)) {
				const labels: Record<string, string> = { job: metrics.job, shard: metrics.shard };
				if (metrics.worker !== "") labels.worker = metrics.worker;
				if (spec.label && value !== undefined) labels[spec.label.name] = value;
				const figure = spec.read(metrics, value);
				if (metric instanceof Gauge) metric.set(labels, figure);
				else metric.inc(labels, figure);
			}
		}
	}
	return await registry.metrics();
}

/**
 * The series of a file this module wrote before, read back into the model (per job and shard). A line
 * that is not one of the contract's samples is passed over: the file is read as hostile.
 */
function readSeries(path: string): Series {
	const series: Series = new Map();
	let text: string;
	try {
		// Only a regular file of a sane size: a FIFO there held the run (and the job's lock) for good,
		// a link to /dev/zero grew memory by gigabytes. Anything else is written over (renamed) instead.
		text = readRegularFile(path, METRICS_FILE_MAX_BYTES).toString("utf8");
	} catch {
		return series;
	}
	const specs = new Map(METRIC_SPECS.map((spec) => [spec.name, spec]));
	for (const line of text.split("\n")) {
		const sample = /^([a-zA-Z_:][\w:]*)\{(.*)\}\s+(\S+)\s*$/.exec(line);
		if (!sample) continue;
		const spec = specs.get(sample[1]!);
		const value = Number(sample[3]);
		// A counter below zero (another program's line, a hand edit) could not be written back: every
		// later write of the shared file would fail. Such a sample is dropped.
		if (!spec || !Number.isFinite(value) || (spec.type === "counter" && value < 0)) continue;
		const labels = new Map<string, string>();
		for (const match of sample[2]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
			labels.set(
				match[1]!,
				match[2]!.replace(/\\(.)/g, (_, char: string) => (char === "n" ? "\n" : char)),
			);
		}
		const job = labels.get("job");
		const shard = labels.get("shard") ?? "";
		const worker = labels.get("worker") ?? "";
		if (job === undefined) continue;
		const key = seriesKey({ job, shard, worker });
		let metrics = series.get(key);
		if (!metrics) {
			metrics = initialMetrics(job, shard, 0, 0, worker);
			series.set(key, metrics);
		}
		setFigure(metrics, spec.name, spec.label ? labels.get(spec.label.name) : undefined, value);
	}
	return series;
}

function setFigure(metrics: RunMetrics, name: string, label: string | undefined, value: number): void {
	switch (name) {
		case "scrapejob_run_last_success_timestamp_seconds":
			metrics.lastSuccessSeconds = value;
			return;
		case "scrapejob_run_duration_seconds":
			metrics.durationSeconds = value;
			return;
		case "scrapejob_retries_total":
			metrics.retries = value;
			return;
		case "scrapejob_credits_used_total":
			metrics.creditsUsed = value;
			return;
		case "scrapejob_inflight":
			metrics.inflight = value;
			return;
		case "scrapejob_concurrency_limit":
			metrics.concurrencyLimit = value;
			return;
		case "scrapejob_contract_broken_rules":
			metrics.contractBroken = value;
			return;
		case "scrapejob_breaker_open":
			if (label !== undefined && value > 0) metrics.breakersOpen[label] = value;
			return;
	}
	if (label === undefined) return;
	const into: Record<string, number> | undefined =
		name === "scrapejob_targets_total"
			? metrics.targets
			: name === "scrapejob_requests_total"
				? metrics.requests
				: name === "scrapejob_changes_total"
					? metrics.changes
					: undefined;
	if (into && label in into) into[label] = value;
}
